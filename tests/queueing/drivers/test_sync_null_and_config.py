"""The sync and null drivers, and connection configuration errors."""
import pytest

from queueing import chain
from queueing.errors import ConfigurationError
from queueing.settings.config import parse_settings
from tests.testapp import jobs


def test_sync_driver_runs_jobs_inline_with_attempts_and_chains(rclient):
    jobs.record.using(connection="sync").delay("s1")
    chain(jobs.record.using(connection="sync").s("c1"), jobs.record.using(connection="sync").s("c2"))
    assert [(n["label"], n["attempts"]) for n in jobs.notes()] == [("s1", 1), ("c1", 1), ("c2", 1)]
    assert rclient.keys("queues:*") == []


def test_sync_driver_raises_and_runs_the_failed_hook():
    with pytest.raises(ValueError, match="class boom"):
        jobs.FailingJob.using(connection="sync").delay("f1")
    assert jobs.notes(jobs.FAILED_HOOKS)[0]["label"] == "f1"


def test_null_driver_drops_jobs(rclient):
    uuid = jobs.record.using(connection="null", delay=5).delay("gone")
    assert uuid and rclient.dbsize() == 0 and jobs.notes() == []


@pytest.mark.parametrize("raw, message", [
    ({"connections": {"r": {"driver": "kafka"}}}, "driver"),
    ({"connections": {"r": {"driver": "redis"}}}, "needs a 'url'"),
    ({"connections": {"r": {"driver": "sync", "retry_after": -1}}}, "retry_after"),
    ({"connections": {"r": {"driver": "sync", "queues": "default"}}}, "queues"),
    ({"connections": {"r": {"driver": "sync", "colour": 1}}}, "unknown key"),
    ({"default": "x", "connections": {"r": {"driver": "sync"}}}, "unknown connection"),
])
def test_bad_connection_settings_are_refused(raw, message):
    with pytest.raises(ConfigurationError, match=message):
        parse_settings(raw)
