"""Issue 31 item 8 / issue 38: no list page waits for its facet sample but the first.
A sample past its freshness is shown once more (scaled to the list's size now) while a
thread samples again; a list that changed size by more than a fifth is sampled inline."""
import time

import pytest

from horizon.dashboard import facet_counts, facets, queues
from horizon.dashboard.facets import NOTHING
from queueing.entries.payload import encode
from tests.helpers import payload
from tests.workers import wait_until

KNOWN = [queues.QueueRef("redis", "default")]


@pytest.fixture(autouse=True)
def fresh_estimates(monkeypatch):
    monkeypatch.setattr(facets, "SAMPLE", 200)
    facet_counts.forget_job_counts()
    yield
    wait_until(lambda: not facet_counts._refreshing, timeout=10)
    facet_counts.forget_job_counts()


def test_a_stale_sample_is_shown_while_a_thread_takes_the_next(driver, monkeypatch):
    driver.push_many("default", [encode(payload(name="app.jobs.A")) for _ in range(1000)])
    first = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {}, now=1000.0)
    assert first.estimated and first.total == 1000
    reads = []
    real = facet_counts.sampled_entries
    monkeypatch.setattr(facet_counts, "sampled_entries",
                        lambda *a: (reads.append(time.time()), time.sleep(0.3))[0] or real(*a))
    started = time.perf_counter()
    stale = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {},
                                  now=1000.0 + facet_counts.ESTIMATE_TTL + 1)
    assert time.perf_counter() - started < 0.25, "the request did not wait for the sample"
    assert stale.total == 1000
    wait_until(lambda: not facet_counts._refreshing, timeout=10)
    assert len(reads) == 1, "one background sample"
    kept = next(iter(facet_counts._estimates.values()))
    assert kept[0] > time.time(), "the next sample is fresh"



def counts_of(found: facets.Facets, kind: str) -> dict[str, int]:
    facet = next(f for f in found.shown if f.kind == kind)
    return {c.value: c.count for c in facet.choices}


def test_a_whole_count_is_kept_for_a_refresh_interval_while_the_length_holds(driver):
    """A list under the budget is counted whole, once per EXACT_FRESH seconds while its
    length stays the same; a length that changed is counted anew at once."""
    driver.push_many("default", [encode(payload(name="app.jobs.A")) for _ in range(3)])
    first = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {}, now=1000.0)
    assert not first.estimated and counts_of(first, "job") == {"app.jobs.A": 3}
    driver.pop("default", owner="h:1:s")  # same length after the next push, other job
    driver.push("default", encode(payload(name="app.jobs.B")))
    kept = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {}, now=1001.0)
    assert counts_of(kept, "job") == {"app.jobs.A": 3}, "reused within the interval"
    fresh = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {},
                                  now=1000.0 + facet_counts.EXACT_FRESH + 0.1)
    assert counts_of(fresh, "job") == {"app.jobs.A": 2, "app.jobs.B": 1}
    driver.push("default", encode(payload(name="app.jobs.C")))
    grown = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {},
                                  now=1000.0 + facet_counts.EXACT_FRESH + 0.2)
    assert counts_of(grown, "job") == {"app.jobs.A": 2, "app.jobs.B": 1, "app.jobs.C": 1}


@pytest.mark.django_db
def test_exception_groups_are_kept_for_a_refresh_interval_and_dropped_on_a_change(
        monkeypatch):
    """Kept as the facets' counts are (test_kept_counts.py: past the interval they are
    shown while a thread regroups); this process's delete drops them at once."""
    from horizon.dashboard import failures
    from queueing import failed
    from tests.helpers import fail

    monkeypatch.setattr(failures._kept_groups, "clock", lambda: 50.0)
    fail(exception="ValueError: one\n")
    assert failures.kept_groups(None) == ([failures.Group("ValueError", 1)], 1, 0.0)
    row = fail(exception="KeyError: two\n")
    assert failures.kept_groups(None)[1] == 1, "reused within the interval"
    assert failed.forget(row.uuid)  # this process deleted a row: the kept groups go
    fail(exception="KeyError: three\n")
    assert failures.kept_groups(None) == (
        [failures.Group("KeyError", 1), failures.Group("ValueError", 1)], 2, 0.0)
