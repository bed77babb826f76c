"""@record (queueing/contract/records.py) behaves as the @dataclass it replaces, with its
methods written as closures instead of compiled at import (issue 52): the same repr,
equality, hash, frozen-ness, pickling and argument errors; dataclasses.fields, replace
and asdict read it as before; and the per-job records' written-out __init__s keep it."""
import copy
import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from queueing.contract.records import record
from queueing.contract.roles import Reservation, Reserved
from queueing.entries.options import JobOptions
from queueing.entries.shapes import Payload


def frozen_pair():
    made = []
    for decorate in (dataclass(frozen=True, slots=True, kw_only=True),
                     record(frozen=True, slots=True, kw_only=True)):
        @decorate
        class Shape:
            name: str
            sizes: list = field(default_factory=list, repr=False)
            ratio: float = 1.0
        made.append(Shape)
    return made


def mutable_pair():
    made = []
    for decorate in (dataclass(slots=True), record(slots=True)):
        @decorate
        class Counter:
            label: str
            seen: int = 0
        made.append(Counter)
    return made


def outcome(call):
    try:
        return ("ok", call())
    except Exception as exc:  # the error's kind and words are the behaviour compared
        # Python 3.12+ appends a spelling hint to a generated method's errors ("Did you
        # mean 'sizes'?"); the error itself is what is compared
        words = str(exc).split("__init__() ")[-1].split(". Did you mean")[0]
        return (type(exc).__name__, words)


@pytest.mark.parametrize("make", [frozen_pair, mutable_pair])
def test_a_record_reads_and_compares_as_its_dataclass(make):
    generated, written = make()
    if generated.__name__ == "Shape":
        a, b = generated(name="a", sizes=[1]), written(name="a", sizes=[1])
        assert repr(a) == repr(b)
        assert repr(b).endswith(".Shape(name='a', ratio=1.0)")  # sizes: repr=False
        assert written(name="a") == written(name="a", sizes=[], ratio=1.0)
        assert written(name="a") != written(name="b")
        assert written(name="a") != generated(name="a")  # another class: never equal
        assert hash(written(name="a", sizes=())) == hash(written(name="a", sizes=()))
        assert dataclasses.asdict(b) == dataclasses.asdict(a)
        assert dataclasses.replace(b, ratio=2.0) == written(name="a", sizes=[1], ratio=2.0)
        assert copy.deepcopy(b) == b and copy.copy(b) == b  # pickled: Payload, below
        assert outcome(lambda: written("a")) == outcome(lambda: generated("a"))
        assert outcome(lambda: written(name="a", size=2)) == \
            outcome(lambda: generated(name="a", size=2))
        assert outcome(lambda: written())[0] == "TypeError"
    else:
        a, b = generated("a", 2), written("a", 2)
        assert repr(a) == repr(b) and repr(b).endswith(".Counter(label='a', seen=2)")
        assert b == written(label="a", seen=2) and b != written("a")
        assert written.__hash__ is None and generated.__hash__ is None
        b.seen = 3
        assert b.seen == 3
        assert outcome(lambda: written("a", label="b"))[0] == "TypeError"
    assert [f.name for f in dataclasses.fields(written)] == \
        [f.name for f in dataclasses.fields(generated)]
    assert not hasattr(written("a") if written.__name__ == "Counter" else written(name="a"),
                       "__dict__")


def test_a_frozen_record_refuses_assignment_as_a_frozen_dataclass_does():
    held = Reservation("default", b"{}", "1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        held.token = "2"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del held.queue  # type: ignore[misc]
    with pytest.raises(AttributeError):
        held.other = 1  # type: ignore[attr-defined]
    options = JobOptions(queue="high")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.queue = "low"  # type: ignore[misc]


def payload(uuid="u"):
    return Payload(uuid=uuid, job="j", display_name="j", args=[], kwargs={}, attempts=1,
                   deliveries=1, max_tries=None, max_exceptions=None, backoff=None,
                   timeout=None, retry_until=None, fail_on_timeout=False, pushed_at=None,
                   tags=[], chain=[], data={"secret": 1})


def test_the_written_out_per_job_records_keep_their_dataclass_semantics():
    job = payload()
    assert job == payload() and job != payload(uuid="v")
    assert "secret" not in repr(job) and repr(job).startswith("Payload(uuid='u', job='j'")
    assert job.original is None and job.expires_at is None
    again = dataclasses.replace(job, deliveries=2)
    assert again.deliveries == 2 and again.uuid == "u" and job.deliveries == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.attempts = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        Payload("u")  # type: ignore[misc]  # keyword-only, as declared
    assert hash(Reservation("q", b"r")) == hash(Reservation("q", b"r", ""))
    assert Reserved().jobs == [] and Reserved().jobs is not Reserved().jobs
    assert JobOptions(queue="high").replace(tries=3) == JobOptions(queue="high", tries=3)
    assert JobOptions().to_json() == {}
    assert pickle.loads(pickle.dumps(job)) == job
