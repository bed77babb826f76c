"""Kept results' pure parts and key names, without a worker (issue 50)."""
import pytest
from django.test import override_settings

from queueing.entries.options import make_options
from queueing.entries.result_mark import RESULT_FIELD, fields
from queueing.errors import InvalidOption
from queueing.results import store


def test_a_result_follows_the_namespace(settings):
    assert store.record_key("u-1") == "queueing:result:{u-1}"
    with override_settings(QUEUE={**settings.QUEUE, "namespace": "shop"}):
        assert store.record_key("u-1") == "shop:queueing:result:{u-1}"
        assert store.ready_key("u-1") == "shop:queueing:result:{u-1}:ready"


def test_records_read_back_by_status():
    assert store.read_record({}, ready=False).status == "pending"
    assert store.read_record({}, ready=True).status == "expired"
    assert store.read_record({b"status": b"running", b"started_at": b"5.0"}, False) == \
        store.Record("running", started_at=5.0)
    done = store.read_record({b"status": b"succeeded", b"value": b'{"a":[1]}'}, True)
    assert (done.status, done.value) == ("succeeded", {"a": [1]})
    failed = store.failed_fields(KeyError("https://u:hunter2@x.example/"), sealed=False, now=1)
    record = store.read_record(failed, True)
    assert record.exc_type == "KeyError" and "hunter2" not in record.message


def test_a_value_json_cannot_hold_or_too_large_is_refused_with_the_fix():
    with pytest.raises(store.ResultTooLarge, match="results must be JSON.*isoformat"):
        store.encode_value("j", {1, 2})
    with pytest.raises(store.ResultTooLarge, match="over the 1048576 bytes.*its id"):
        store.encode_value("j", "x" * store.MAX_RESULT_BYTES)


def test_keep_result_is_seconds_and_only_marks_jobs_that_keep_one(settings):
    assert make_options(keep_result=60).keep_result == 60.0
    with pytest.raises(InvalidOption, match="keep_result must be"):
        make_options(keep_result="1h")
    assert fields(None, "redis") == {} and fields(0, "redis") == {}
    assert fields(30, "redis") == {RESULT_FIELD: 30}
    connections = {**settings.QUEUE["connections"]}
    connections["redis"] = {**connections["redis"], "keep_result": 600}
    with override_settings(QUEUE={**settings.QUEUE, "connections": connections}):
        assert fields(None, "redis") == {RESULT_FIELD: 600.0}  # the connection's default
        assert fields(0, "redis") == {}  # a job that says 0 keeps none
