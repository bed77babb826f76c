"""`async def` jobs run their body (before, the worker logged DONE for a coroutine it never
awaited), in a worker process and inline; failures retry and fail like a sync job's."""
import io

import pytest
from django.test import override_settings

from queueing import connections
from queueing.models import FailedJob
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)


def drain() -> int:
    options = WorkerOptions(queues=("default",), stop_when_empty=True, sleep=0, memory=0,
                            sidecar=False)
    return Worker(connections.queue_driver("redis"), options, stdout=io.StringIO(),
                  stderr=io.StringIO()).run()


def test_an_async_job_body_runs_in_a_worker_process(spawn_worker):
    jobs.async_record.delay("awaited")
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait(30) == 0
    assert [(n["label"], n["kind"]) for n in jobs.notes()] == [("awaited", "async")]


def test_an_async_job_that_raises_is_retried_then_failed():
    uuid = jobs.async_record.delay("broken", fail=True)
    assert drain() == 0
    assert jobs.notes() == []
    row = FailedJob.objects.get(uuid=uuid)
    assert "RuntimeError: async failure broken" in row.exception
    assert "attempt 2" in row.exception or row.payload  # released once, failed on the 2nd


def test_an_async_job_runs_inline_on_a_sync_connection(settings):
    queue = {**settings.QUEUE, "connections": {**settings.QUEUE["connections"],
                                                "inline": {"driver": "sync"}}}
    with override_settings(QUEUE=queue):
        jobs.async_record.using(connection="inline").delay("inline")
    assert [n["label"] for n in jobs.notes()] == ["inline"]
