"""Pure parts of the Tasks backend: the result format, priority scores, option mapping."""
import datetime as dt
import json

import pytest

from queueing.entries.payload import encode
from queueing.errors import InvalidOption
from queueing.tasks import priority
from queueing.tasks.results import (
    MAX_TRACEBACK,
    ResultRecord,
    cut_traceback,
    record_from_redis,
    record_to_redis,
)


def test_a_record_survives_the_redis_format():
    now = dt.datetime(2026, 11, 22, 1, 2, 3, 456789, tzinfo=dt.UTC)
    record = ResultRecord(id="abc", task_path="app.tasks.f", backend="default", queue="high",
                          connection="redis", priority=-7, status="SUCCESSFUL",
                          enqueued_at=now, started_at=now, finished_at=now,
                          last_attempted_at=now, args=[1, [2]], kwargs={"a": {"b": None}},
                          return_value_json='{"x":[1,2]}')
    fields = {k.encode(): v.encode() for k, v in record_to_redis(record).items()}
    back = record_from_redis("abc", fields, [b"w1", b"w2"],
                             [json.dumps({"exception_class_path": "x.Y", "traceback": "t"})])
    assert back.worker_ids == ["w1", "w2"]
    assert back.errors == [{"exception_class_path": "x.Y", "traceback": "t"}]
    back.worker_ids, back.errors = [], []
    assert back == record and back.return_value == {"x": [1, 2]}


def test_unset_times_are_left_out_so_the_first_start_can_be_set_once():
    record = ResultRecord(id="a", task_path="p", backend="b", queue="q", connection="c")
    fields = record_to_redis(record)
    assert "started_at" not in fields and "finished_at" not in fields
    assert fields["status"] == "pending" and fields["run_after"] == ""  # the store's word


def test_long_tracebacks_keep_head_and_tail():
    text = "head\n" + "x" * 100_000 + "\nValueError: the end"
    cut = cut_traceback(text)
    assert len(cut) <= MAX_TRACEBACK and cut.startswith("head")
    assert cut.endswith("ValueError: the end") and "characters cut" in cut
    assert cut_traceback("short") == "short"


def test_scores_order_by_priority_then_sequence_exactly():
    jobs = [(p, seq) for seq, p in enumerate([5, 100, 5, 1, 100, 99], start=1)]
    ordered = sorted(jobs, key=lambda j: priority.score(*j))
    assert ordered == [(100, 2), (100, 5), (99, 6), (5, 1), (5, 3), (1, 4)]
    highest = priority.score(-100, priority.SEQUENCE_SPAN - 1)
    assert highest < 2 ** 53 and float(highest) == highest  # exact in a double


def test_priority_goes_second_in_the_payload_and_zero_adds_nothing():
    data = {"attempts": 0, "uuid": "u", "job": "j"}
    assert priority.with_priority(data, 0) is data
    assert encode(priority.with_priority(data, -3)).startswith('{"attempts":0,"priority":-3,')


def test_task_options_map_to_job_options():
    from queueing.tasks.task_class import RedisTask, job_options

    def f():
        pass

    class Fake:  # job_options reads attributes only
        queue_name = "high"
        tries = None
        max_attempts = 3
        backoff = [1, 2]
        timeout = 5
        retry_until = dt.timedelta(minutes=5)
        max_exceptions = None

    options = job_options(Fake(), connection="redis")
    assert options.tries == 3 and options.backoff == (1.0, 2.0) and options.timeout == 5.0
    assert options.retry_until.seconds == 300 and options.queue == "high"
    Fake.tries = 2
    with pytest.raises(InvalidOption, match="disagree"):
        job_options(Fake())
    assert {"tries", "max_attempts", "backoff"} <= set(RedisTask.__dataclass_fields__)
