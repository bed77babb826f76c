"""Issue 40, item 1: one namespace per app. Every key the product writes goes through
queueing/settings/namespace.py: with no namespace the names are exactly those of earlier releases
(no migration), with one each name starts with it, outside the braces, so every key keeps
its Redis Cluster slot; a malformed namespace is refused before any key is written."""
import pytest
from django.core.management import call_command
from redis.crc import key_slot

from horizon import keys as horizon_keys
from queueing.batches.results import results_key
from queueing.drivers.redis import keys
from queueing.errors import ConfigurationError
from queueing.middleware import keys as control_keys
from queueing.middleware.funnel_slots import holders_key
from queueing.middleware.lock_calls import lock_index
from queueing.results import store as result_store
from queueing.settings import namespace
from queueing.settings.config import settings_errors
from queueing.state.fair import rotation_key


def every_key() -> dict[str, str]:
    queue = keys.QueueKeys.for_queue("default")
    return {
        "ready": queue.ready, "notify": queue.notify, "delayed": queue.delayed,
        "reserved": queue.reserved, "paused": queue.paused, "batch": queue.batch("b1"),
        "batches": keys.batches_index(), "restart": keys.restart_key(),
        "paused queues": keys.paused_queues_key(), "heartbeat": keys.heartbeat_key("w1"),
        "workers": keys.workers_key(), "cancel": keys.cancel_key(),
        "cancel index": keys.cancel_index(), "task": keys.task_result_key("r1"),
        "exceptions": keys.exceptions_key("u1"),
        "unique": control_keys.unique_key("app.jobs.work", 7),
        "rate": control_keys.control_key("rate", "api"), "locks": lock_index(),
        "masters": horizon_keys.masters(), "master": horizon_keys.master("web-1"),
        "completed": horizon_keys.completed(), "commands": horizon_keys.commands("web-1"),
        "prom series": horizon_keys.prometheus_series_index(),
        "batches pruned": horizon_keys.batches_pruned(),
        "primary switch": horizon_keys.primary_switch("redis"),
        "fair rotation": rotation_key("queues:", "reports"),
        "funnel": holders_key("tenant:7"), "chord results": results_key("b1"),
        "result": result_store.record_key("r1"), "result ready": result_store.ready_key("r1"),
        "task workers": result_store.companion_key("r1", "workers"),
    }


TODAY = {
    "ready": "queues:{default}", "notify": "queues:{default}:notify",
    "delayed": "queues:{default}:delayed", "reserved": "queues:{default}:reserved",
    "paused": "queues:{default}:paused", "batch": "queues:{default}:batch:b1",
    "batches": "queues:batches", "restart": "queueing:restart",
    "paused queues": "queueing:paused", "heartbeat": "queueing:worker:w1",
    "workers": "queueing:workers", "cancel": "queueing:cancel",
    "cancel index": "queueing:cancel:at", "task": "queueing:task:{r1}",
    "exceptions": "queueing:exceptions:u1", "unique": "queueing:unique:{app.jobs.work:7}",
    "rate": "queueing:rate:{api}", "locks": "queueing:locks:held",
    "masters": "{horizon}:masters", "master": "{horizon}:master:web-1",
    "completed": "{horizon}:completed", "commands": "{horizon}:commands:web-1",
    "prom series": "{horizon}:prom:series", "batches pruned": "horizon:batches:pruned",
    "primary switch": "horizon:primary:redis",
    "fair rotation": "queues:{reports}:fair", "funnel": "queueing:funnel:{tenant:7}",
    # Issue 50: kept results, a Task's and a chord's in the one result store (their 0.2
    # keys, "task" above and queueing:chord:{b1}:results, are still read until 0.4)
    "chord results": "queueing:result:{b1}:members", "result": "queueing:result:{r1}",
    "result ready": "queueing:result:{r1}:ready", "task workers": "queueing:result:{r1}:workers",
}


def in_namespace(settings, name):
    settings.QUEUE = {**settings.QUEUE, "namespace": name}


def test_no_namespace_keeps_every_key_name_of_earlier_releases():
    assert every_key() == TODAY


def test_a_namespace_prefixes_every_key_and_keeps_its_cluster_slot(settings):
    in_namespace(settings, "shop")
    named = every_key()
    assert named == {what: f"shop:{key}" for what, key in TODAY.items()}
    for what, key in TODAY.items():
        if "{" in key:  # hash-tagged: the namespace stays outside the tag
            assert key_slot(named[what].encode()) == key_slot(key.encode()), what
    assert control_keys.parse_lock(control_keys.unique_key("app.jobs.work", 7)) == \
        ("unique", "app.jobs.work:7")
    assert control_keys.parse_lock(TODAY["unique"]) is None, "another app's lock is not ours"


def test_the_environment_wins_over_the_setting(settings, monkeypatch):
    in_namespace(settings, "from-settings")
    monkeypatch.setenv(namespace.NAMESPACE_ENV, "from-env")
    namespace.process.cache_clear()
    try:
        assert keys.restart_key() == "from-env:queueing:restart"
    finally:
        monkeypatch.delenv(namespace.NAMESPACE_ENV)
        namespace.process.cache_clear()
    assert keys.restart_key() == "from-settings:queueing:restart"


@pytest.mark.parametrize("bad", ["{shop}", "a:b", "has space", "x" * 65, 7])
def test_a_malformed_namespace_is_refused_with_a_clear_error(settings, bad):
    raw = {**settings.QUEUE, "namespace": bad}
    errors = settings_errors(raw)
    assert any("QUEUE['namespace']" in str(e) for e in errors), errors
    if isinstance(bad, str):  # the environment holds text only
        with pytest.raises(ConfigurationError, match="QUEUE_NAMESPACE"):
            namespace.configured({}, environ={"QUEUE_NAMESPACE": bad})


def test_manage_check_reports_a_malformed_namespace(settings):
    in_namespace(settings, "{shop}")
    with pytest.raises(Exception, match="queueing.E001"):
        call_command("check")
