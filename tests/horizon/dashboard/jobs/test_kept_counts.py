"""Issue 38 item 3: the failed list's counts are kept and refreshed off the request path.

A load that finds its counts past their refresh interval answers with them at once,
marked with their age, and one refresh runs once the response is done; the first load,
and the first after this process deleted or retried rows, count inline."""
import logging
import re
import threading
import time

import pytest
from django.core.signals import request_finished, request_started

from horizon.dashboard.failed import failures
from horizon.dashboard.jobs import facet_counts, kept_counts
from queueing.models import FailedJob
from queueing.state import failed
from tests.helpers import fail, superuser_client, text
from tests.workers import wait_until


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


def kept_with(clock: Clock, fresh: float = 2.0) -> kept_counts.KeptCounts:
    kept: kept_counts.KeptCounts = kept_counts.KeptCounts("test counts", fresh)
    kept.clock = clock
    return kept


class Counter:
    """A count that takes `seconds` and returns how many times it ran."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.calls = 0
        self.seconds = seconds
        self.threads: list[str] = []

    def __call__(self) -> int:
        time.sleep(self.seconds)
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        return self.calls


def test_a_stale_count_is_served_at_once_and_refreshed_once_in_the_background(clock):
    kept, count = kept_with(clock), Counter(seconds=0.3)
    assert kept.get("k", count) == (1, 0.0), "the first load counts inline"
    clock.now += 1.0
    assert kept.get("k", count) == (1, 1.0) and count.calls == 1, "fresh: reused"
    clock.now += 1.5
    started = time.perf_counter()
    for _ in range(5):  # five tabs polling at the same moment
        assert kept.get("k", count) == (1, 2.5)
    assert time.perf_counter() - started < 0.2, "no load waited for the count"
    wait_until(lambda: not kept.refreshing, timeout=10)
    assert count.calls == 2 and count.threads[-1] == "kept-counts", "one refresh, a thread"
    assert kept.get("k", count) == (2, 0.0), "the refresh landed"
    clock.now += 1.0
    assert kept.get("k", count) == (2, 1.0) and count.calls == 2


def test_a_refresh_waits_for_the_response(clock):
    kept, count = kept_with(clock), Counter()
    kept.get("k", count)
    clock.now += 3
    request_started.send(sender=None, environ={})
    try:
        assert kept.get("k", count) == (1, 3.0)
        time.sleep(0.2)
        assert count.calls == 1, "nothing ran beside the request"
    finally:
        request_finished.send(sender=None)
    wait_until(lambda: count.calls == 2, timeout=10)


def test_a_failed_refresh_keeps_the_old_counts_and_is_not_retried_within_an_interval(
        clock, caplog):
    kept = kept_with(clock)
    kept.get("k", lambda: "old")
    broken = Counter()

    def fails() -> str:
        broken()
        raise RuntimeError("database went away")

    clock.now += 2
    with caplog.at_level(logging.WARNING, logger="horizon.dashboard"):
        assert kept.get("k", fails) == ("old", 2.0)
        wait_until(lambda: not kept.refreshing, timeout=10)
    assert "refreshing the test counts failed" in caplog.text
    clock.now += 1
    assert kept.get("k", fails) == ("old", 3.0), "still shown"
    time.sleep(0.1)
    assert broken.calls == 1, "not retried within the interval"
    clock.now += 1
    kept.get("k", fails)
    wait_until(lambda: broken.calls == 2, timeout=10)


def test_a_refresh_that_lands_after_forget_is_dropped(clock):
    kept = kept_with(clock)
    kept.get("k", lambda: "before the delete")
    release = threading.Event()

    def slow() -> str:
        release.wait(10)
        return "counted before the delete"

    clock.now += 2
    kept.get("k", slow)
    kept.forget()  # this process deleted rows meanwhile
    release.set()
    wait_until(lambda: not kept.refreshing, timeout=10)
    assert kept.get("k", lambda: "after") == ("after", 0.0), "counted inline, afresh"


def test_counts_nobody_asked_for_in_a_minute_are_counted_inline(clock):
    kept, count = kept_with(clock), Counter()
    kept.get("k", count)
    clock.now += kept_counts.OLDEST + 1
    assert kept.get("k", count) == (2, 0.0)


# The failed page, on a real database: the refresh thread reads through its own
# connection, so the rows must be committed (transaction=True).
pytestmark_db = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client():
    return superuser_client()


@pytest.fixture
def later(monkeypatch):
    """Move the kept counts' clock on, as the seconds between two polls would."""
    offset = [0.0]
    for kept in (facet_counts._failed_counts, failures._kept_groups):
        monkeypatch.setattr(kept, "clock", lambda: time.monotonic() + offset[0])

    def move(seconds: float) -> None:
        offset[0] += seconds
    return move


def job_counts(body: str) -> dict[str, str]:
    nav = re.search(r'<nav class="groups facet facet-job"(.*?)</nav>', body)
    assert nav, "no job facet"
    return dict(re.findall(r'data-value="([^"]+)"[^>]*>[^<]*<span class="count">([^<]+)</span>',
                           nav.group(1)))


def groups(body: str) -> str:
    nav = re.search(r'<nav class="groups" aria-label="By exception class">(.*?)</nav>', body,
                    re.S)
    assert nav, "no exception groups"
    return nav.group(1)


def settled() -> None:
    wait_until(lambda: not facet_counts._failed_counts.refreshing
               and not failures._kept_groups.refreshing, timeout=10)


@pytestmark_db
def test_the_failed_page_shows_kept_counts_with_their_age_and_a_refresh_lands(client, later):
    for _ in range(3):
        fail(name="app.jobs.Charge", exception="ValueError: no lines\n")
    first = text(client.get("/failed/"))
    assert job_counts(first) == {"app.jobs.Charge": "3"}
    assert "s ago" not in first
    for _ in range(2):
        fail(name="app.jobs.Mail", exception="KeyError: gone\n")
    later(facet_counts.FAILED_FRESH + 1)  # the next poll
    stale = text(client.get("/failed/", headers={"HX-Request": "true"}))
    assert job_counts(stale) == {"app.jobs.Charge": "3"}, "served kept, not recounted"
    assert "Counted 3 s ago, recounted in the background." in stale
    assert "(counted 3 s ago)" in groups(stale) and "KeyError" not in groups(stale)
    assert len(re.findall(r'<tr data-uuid=', stale)) == 5, "the rows are read every load"
    settled()
    fresh = text(client.get("/failed/", headers={"HX-Request": "true"}))
    assert job_counts(fresh) == {"app.jobs.Charge": "3", "app.jobs.Mail": "2"}
    assert "KeyError" in groups(fresh) and "s ago" not in fresh


@pytestmark_db
def test_counts_are_right_at_once_after_this_process_deletes_or_retries(client, later):
    for _ in range(3):
        fail(name="app.jobs.Charge")
    mail = [fail(name="app.jobs.Mail", exception="KeyError: gone\n") for _ in range(2)]
    assert job_counts(text(client.get("/failed/"))) == {"app.jobs.Charge": "3",
                                                       "app.jobs.Mail": "2"}
    later(facet_counts.FAILED_FRESH + 1)
    upto = max(FailedJob.objects.values_list("id", flat=True))
    answer = client.post("/failed/delete/", {"job": "app.jobs.Charge", "upto": upto,
                                             "expected": 3}, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    settled()
    body = text(client.get("/failed/"))
    assert job_counts(body) == {"app.jobs.Mail": "2"} and "s ago" not in body
    failed.retry(mail[0])
    body = text(client.get("/failed/"))
    assert job_counts(body) == {"app.jobs.Mail": "1"}
    assert 'KeyError <span class="count">1</span>' in groups(body)
