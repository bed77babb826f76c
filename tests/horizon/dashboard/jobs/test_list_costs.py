"""Issue 31 item 8 / issue 38 item 3: no job list waits for its facet counts but the first
load of a filter. Counts past their freshness (a whole count's 2 s, a sample's 10 s) are
shown kept, with their age, while one refresh runs after the response
(horizon/dashboard/jobs/kept_counts.py); a list that changed size by more than a fifth, or
one this process acted on, is counted at once."""
import re
import time

import pytest
from django.contrib.auth.models import User
from django.test import Client

from horizon.dashboard.jobs import facet_counts, facets
from horizon.dashboard.jobs.facets import NOTHING
from horizon.queue_reads import queues
from queueing.entries.payload import encode
from tests.helpers import payload, text
from tests.workers import wait_until

KNOWN = [queues.QueueRef("redis", "default")]


@pytest.fixture(autouse=True)
def fresh_estimates(monkeypatch):
    monkeypatch.setattr(facets, "SAMPLE", 200)
    facet_counts.forget_job_counts()
    yield
    settled()
    facet_counts.forget_job_counts()


@pytest.fixture
def later(monkeypatch):
    """Move the kept counts' clock on, as the seconds between two polls would."""
    offset = [0.0]
    monkeypatch.setattr(facet_counts._job_counts, "clock",
                        lambda: time.monotonic() + offset[0])

    def move(seconds: float) -> None:
        offset[0] += seconds
    return move


def settled() -> None:
    wait_until(lambda: not facet_counts._job_counts.refreshing, timeout=10)


def test_a_stale_sample_is_shown_while_a_thread_takes_the_next(driver, monkeypatch, later):
    driver.push_many("default", [encode(payload(name="app.jobs.A")) for _ in range(1000)])
    first = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {})
    assert first.estimated and first.total == 1000 and not first.age
    reads = []
    real = facet_counts.sampled_entries
    monkeypatch.setattr(facet_counts, "sampled_entries",
                        lambda *a: (reads.append(time.time()), time.sleep(0.3))[0] or real(*a))
    later(facet_counts.EXACT_FRESH + 1)
    assert facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {}).age == 0
    assert not reads, "a sample is fresh for ESTIMATE_TTL, not a whole count's 2 s"
    later(facet_counts.ESTIMATE_TTL)
    started = time.perf_counter()
    stale = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {})
    assert time.perf_counter() - started < 0.25, "the request did not wait for the sample"
    assert stale.total == 1000 and stale.age >= facet_counts.ESTIMATE_TTL
    settled()
    assert len(reads) == 1, "one background sample"
    fresh = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {})
    assert fresh.estimated and fresh.age == 0, "the next sample landed"


def counts_of(found: facets.Facets, kind: str) -> dict[str, int]:
    facet = next(f for f in found.shown if f.kind == kind)
    return {c.value: c.count for c in facet.choices}


def test_a_whole_count_is_served_kept_and_refreshed_until_the_list_changes_much(
        driver, later):
    """A list under the budget is counted whole; past EXACT_FRESH seconds its counts are
    shown with their age while a refresh recounts; a length more than a fifth away is
    counted anew at once."""
    driver.push_many("default", [encode(payload(name="app.jobs.A")) for _ in range(5)])
    first = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {})
    assert not first.estimated and counts_of(first, "job") == {"app.jobs.A": 5}
    driver.pop("default", owner="h:1:s")  # same length after the next push, other job
    driver.push("default", encode(payload(name="app.jobs.B")))
    later(1.0)
    kept = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {})
    assert counts_of(kept, "job") == {"app.jobs.A": 5} and not kept.age, "fresh: reused"
    later(facet_counts.EXACT_FRESH)
    stale = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {})
    assert counts_of(stale, "job") == {"app.jobs.A": 5}, "served kept, not recounted"
    assert stale.age == 3
    settled()
    fresh = facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {})
    assert counts_of(fresh, "job") == {"app.jobs.A": 4, "app.jobs.B": 1} and not fresh.age
    driver.push("default", encode(payload(name="app.jobs.C")))  # 6 of 5: a fifth, kept
    assert counts_of(facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {}), "job") == {
        "app.jobs.A": 4, "app.jobs.B": 1}
    driver.push("default", encode(payload(name="app.jobs.C")))  # 7 of 5: counted at once
    assert counts_of(facet_counts.for_jobs("pending", KNOWN, None, NOTHING, {}), "job") == {
        "app.jobs.A": 4, "app.jobs.B": 1, "app.jobs.C": 2}


def job_counts(body: str) -> dict[str, str]:
    nav = re.search(r'<nav class="groups facet facet-job"(.*?)</nav>', body)
    assert nav, "no job facet"
    return dict(re.findall(r'data-value="([^"]+)"[^>]*>[^<]*<span class="count">([^<]+)</span>',
                           nav.group(1)))


@pytest.mark.django_db
def test_a_polled_list_shows_kept_counts_with_their_age_and_an_action_recounts(driver,
                                                                               later):
    """The pending page polled as a tab does: a poll past the interval answers with the
    kept counts, saying how old they are; the refresh after it lands on the next poll;
    deleting a job from the page counts the list again at once."""
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    hx = {"HX-Request": "true"}
    driver.push_many("default", [encode(payload(name="app.jobs.Charge")) for _ in range(10)])
    first = text(client.get("/jobs/pending/"))
    assert job_counts(first) == {"app.jobs.Charge": "10"} and "in the background" not in first
    driver.pop("default", owner="h:1:s")
    mail = payload(name="app.jobs.Mail")
    driver.push("default", encode(mail))
    later(facet_counts.EXACT_FRESH + 1)  # the next poll
    stale = text(client.get("/jobs/pending/", headers=hx))
    assert job_counts(stale) == {"app.jobs.Charge": "10"}, "served kept, not recounted"
    assert "Counted 3 s ago, recounted in the background." in stale
    assert len(re.findall(r'<tr data-uuid=', stale)) == 10, "the rows are read every load"
    settled()
    fresh = text(client.get("/jobs/pending/", headers=hx))
    assert job_counts(fresh) == {"app.jobs.Charge": "9", "app.jobs.Mail": "1"}
    assert "in the background" not in fresh
    raw = next(r for r in driver.client.lrange(driver.keys("default").ready, 0, -1)
               if mail["uuid"].encode() in r)
    at = driver.client.lrange(driver.keys("default").ready, 0, -1).index(raw)
    answer = client.post(f"/jobs/pending/{mail['uuid']}/delete/",
                         {"job_queue": "redis:default", "at": at}, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200 and b"Deleted pending job" in answer.content
    after = text(client.get("/jobs/pending/", headers=hx))
    # 9 of 10 (within a fifth, and fresh): only the action's hook makes this a recount
    assert job_counts(after) == {"app.jobs.Charge": "9"}, "counted at once after the delete"


@pytest.mark.django_db
def test_exception_groups_are_kept_for_a_refresh_interval_and_dropped_on_a_change(
        monkeypatch):
    """Kept as the facets' counts are (test_kept_counts.py: past the interval they are
    shown while a thread regroups); this process's delete drops them at once."""
    from horizon.dashboard.failed import failures
    from queueing.state import failed
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
