"""Payload encoding and decoding (pure; no Redis)."""
import datetime as dt
import json

import pytest

from queueing.entries import payload as payload_lib
from queueing.entries.options import make_options, parse_backoff
from queueing.errors import InvalidOption, MalformedPayload, NotSerializable


def build(**options):
    return payload_lib.build(job_name="app.jobs.x", display_name="x", args=(1, "a"),
                             kwargs={"k": [1, 2]}, options=make_options(**options),
                             connection="redis", queue="default", now=1000.0)


def test_encoded_payload_starts_with_attempts_and_has_design_fields():
    text = payload_lib.encode(build(tries=3, backoff=[1, 2], timeout=5, retry_until=60,
                                    tags=["t"]))
    assert text.startswith('{"attempts":0,')
    data = json.loads(text)
    assert {"uuid", "displayName", "job", "args", "kwargs", "attempts", "maxTries",
            "maxExceptions", "backoff", "timeout", "retryUntil", "failOnTimeout", "pushedAt",
            "tags", "chain"} <= set(data)
    assert data["retryUntil"] == 1060.0 and data["backoff"] == [1.0, 2.0]


def test_decode_round_trip():
    job = payload_lib.decode(payload_lib.encode(build(tries=2)).encode())
    assert job.job == "app.jobs.x" and job.args == [1, "a"] and job.kwargs == {"k": [1, 2]}
    # never delivered: its first delivery will be attempt 1
    assert job.max_tries == 2 and job.deliveries == 0 and job.attempts == 1


@pytest.mark.parametrize("raw, reason", [
    (b"\xff\xfe", "not UTF-8"),
    (b"not json", "not JSON"),
    (b"[1,2]", "not an object"),
    (b'{"attempts":0,"job":"x"}', "no 'uuid'"),
    (b'{"attempts":"1","uuid":"u","job":"x"}', "'attempts'"),
    (b'{"attempts":0,"uuid":"u","job":"x","args":"nope"}', "'args'"),
    (b'{"attempts":0,"uuid":"u","job":"x","backoff":[-1]}', "'backoff'"),
])
def test_decode_rejects_malformed_entries_with_a_reason(raw, reason):
    with pytest.raises(MalformedPayload, match=reason):
        payload_lib.decode(raw)


class Model:
    _meta = object()
    pk = 7


@pytest.mark.parametrize("value, message", [
    (Model(), "pass its primary key"),
    (dt.date(2024, 1, 1), "isoformat"),
    ({1: "a"}, "non-string key"),
    (float("nan"), "JSON cannot carry"),
    ({"deep": [1, object()]}, r"argument 0\['deep'\]\[1\]"),
    ({1, 2}, "not JSON-serialisable"),
])
def test_check_arguments_names_the_offender(value, message):
    with pytest.raises(NotSerializable, match=message):
        payload_lib.check_arguments("app.jobs.x", (value,), {})


def test_options_validation():
    assert parse_backoff("10,60,300") == (10.0, 60.0, 300.0)
    assert parse_backoff(5) == (5.0,)
    for bad in ({"tries": -1}, {"tries": 1.5}, {"delay": -1}, {"backoff": [1, -2]},
                {"backoff": []}, {"timeout": "x"}, {"max_exceptions": 0},
                {"fail_on_timeout": "yes"}, {"tags": "one"}, {"retry_until": 0},
                {"delay": dt.timedelta(seconds=-5)}, {"surprise": 1}):
        with pytest.raises(InvalidOption):
            make_options().replace(**bad)


def test_retry_for_a_chain_link_counts_from_its_own_dispatch():
    options = make_options(retry_until=dt.timedelta(minutes=10))
    again = type(options).from_json(options.to_json())
    assert again.retry_until.resolve(5000.0) == 5600.0


def test_a_new_uuid_is_a_version_4_uuid_spelt_as_uuid4_spells_it():
    import uuid

    from queueing.entries.payload import new_uuid

    made = {new_uuid() for _ in range(2000)}
    assert len(made) == 2000
    for text in made:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert str(parsed) == text
