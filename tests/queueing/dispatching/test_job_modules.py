"""A worker says which job modules it loaded, and a job it does not know says how to fix it."""
import pytest

from queueing.dispatching import registry
from queueing.drivers.redis.keys import QueueKeys
from queueing.entries import payload as payload_lib
from queueing.models import FailedJob
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_modules_counts_the_registered_jobs_of_each_module():
    loaded = registry.modules()
    assert loaded["tests.testapp.jobs"] >= 5
    assert "tests.testapp.jobs (" in registry.describe_modules()


def test_a_worker_logs_its_job_modules_and_explains_an_unknown_job(spawn_worker, rclient):
    # A job added to the code after this worker started: its name is not in the registry.
    rclient.rpush(QueueKeys.for_queue("default").ready, payload_lib.encode(
        {"attempts": 0, "uuid": "late-1", "job": "shop.jobs.send_invoice", "args": [1]}))
    jobs.record.delay("known")
    worker = spawn_worker("--stop-when-empty")
    assert worker.wait(30) == 0
    assert "jobs loaded from: " in worker.output()
    assert f"tests.testapp.jobs ({registry.modules()['tests.testapp.jobs']})" \
        in worker.output()
    failed = wait_until(lambda: FailedJob.objects.filter(uuid="late-1").first(),
                        message="the unknown job to fail")
    reason = failed.exception.splitlines()[0]
    assert "job 'shop.jobs.send_invoice' is not registered" in reason
    assert "deploy its code" in reason and "queue_restart" in reason
    assert "queue_retry" in reason
    assert [n["label"] for n in jobs.notes()] == ["known"]
