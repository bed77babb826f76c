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
    facet_counts._estimates.clear()
    yield
    wait_until(lambda: not facet_counts._refreshing, timeout=10)
    facet_counts._estimates.clear()


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

