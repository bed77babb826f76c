"""Monitored tags and silenced jobs on Redis Cluster: the recording script touches one
slot ({horizon}), the worker's recorder calls ride its cluster pipeline, stopping a tag
needs no MULTI."""
import io

import pytest

from horizon.monitor_recording import watched_tags
from horizon.repositories import monitored, recent
from queueing.connections import redis_driver
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.queueing.drivers.test_cluster import cluster, on_cluster  # noqa: F401 (fixtures)
from tests.testapp import jobs

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]


def test_watched_and_silenced_jobs_on_a_cluster(on_cluster):  # noqa: F811
    watched_tags.forget()
    client = redis_driver("redis").client
    monitored.watch(client, "tenant:acme")
    done = jobs.record.using(tags=["tenant:acme"]).delay("on a cluster")
    failed = jobs.explode.using(tags=["tenant:acme"]).delay("boom on a cluster")
    quiet = jobs.quiet_ping.delay("shh")
    Worker(redis_driver("redis"), WorkerOptions(queues=("default",), stop_when_empty=True,
                                                sleep=0, quiet=True, memory=0),
           stderr=io.StringIO()).run()
    statuses = {row["uuid"]: row["status"] for row in monitored.jobs(client, "tenant:acme")}
    assert statuses == {done: "completed", failed: "failed"}
    assert [item["uuid"] for item in recent.completed(client, silenced=True)] == [quiet]
    assert monitored.stop(client, "tenant:acme") and monitored.watched(client) == []
    watched_tags.forget()
