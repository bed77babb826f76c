"""Filters come with counts (issue 25, build 3): on the pending, delayed, completed and
failed lists, job, queue, tag, time range (and exception class on failed) each show how
many jobs match each value, and choosing one narrows the list. Exact on small lists,
an evenly spread sample (marked ≈) past the budget; fast at 100k pending."""
import datetime as dt
import re
import time

import pytest
from django.utils import timezone

from horizon.dashboard.jobs import facet_counts, facets
from horizon.dashboard.jobs.facets import Picked
from queueing.entries.payload import encode
from queueing.models import FailedJob
from tests.helpers import (
    complete,
    fail,
    payload,
    push,
    superuser_client,
    text,
    three_queues,  # noqa: F401 (a fixture)
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_estimates():
    facet_counts.forget_job_counts()
    yield
    facet_counts.forget_job_counts()


@pytest.fixture
def client():
    return superuser_client()


def counts(body: str, kind: str) -> dict[str, str]:
    """{value: count text} of one facet on a page."""
    nav = re.search(rf'<nav class="groups facet facet-{kind}"(.*?)</nav>', body)
    assert nav, f"no {kind} facet"
    return dict(re.findall(r'data-value="([^"]+)"[^>]*>[^<]*<span class="count">([^<]+)</span>',
                           nav.group(1)))


def rows(body: str) -> list[str]:
    return re.findall(r'<tr data-uuid="([^"]+)"', body)


def test_pending_facets_count_every_value_and_narrow_the_list(client, driver):
    for _ in range(3):
        push(driver, name="app.jobs.SendInvoice", tags=["customer:7"])
    for _ in range(2):
        push(driver, name="app.jobs.Resize", tags=["customer:9"], pushedAt=time.time() - 7200)
    push(driver, queue="high", name="app.jobs.SendInvoice", tags=["customer:7", "vip"])
    body = text(client.get("/jobs/pending/"))
    assert counts(body, "job") == {"app.jobs.SendInvoice": "4", "app.jobs.Resize": "2"}
    assert counts(body, "queue") == {"redis:default": "5", "redis:high": "1"}
    assert counts(body, "tag") == {"customer:7": "4", "customer:9": "2", "vip": "1"}
    assert counts(body, "within") == {"1h": "4", "24h": "6", "7d": "6"}
    assert "Counts over all 6 pending jobs." in body and "≈" not in body

    narrowed = text(client.get("/jobs/pending/?job=app.jobs.SendInvoice"))
    assert len(rows(narrowed)) == 4 and "Resize" not in narrowed.split("<tbody")[1]
    assert 'aria-current="true"' in narrowed, "the chosen value is marked and can be unchosen"
    # Each facet counts what choosing one of its values would leave.
    assert counts(narrowed, "tag") == {"customer:7": "4", "vip": "1"}
    assert counts(narrowed, "job")["app.jobs.Resize"] == "2"
    both = text(client.get("/jobs/pending/?job=app.jobs.SendInvoice&tag=vip"))
    assert len(rows(both)) == 1 and "of job app.jobs.SendInvoice tagged vip" in both
    assert 'name="tag" value="vip"' in both, "the refresh keeps the facet"
    recent = text(client.get("/jobs/pending/?within=1h"))
    assert len(rows(recent)) == 4
    assert len(rows(text(client.get("/jobs/pending/?job=bad%22name")))) == 6, "junk is ignored"


def test_delayed_and_completed_lists_have_their_own_time_ranges(client, driver, rclient):
    now = time.time()
    driver.later("default", encode(payload(name="app.jobs.Soon")), now + 30)
    driver.later("default", encode(payload(name="app.jobs.Later")), now + 7200)
    body = text(client.get("/jobs/delayed/"))
    assert "Due within:" in body
    assert counts(body, "within") == {"1m": "1", "1h": "1", "24h": "2"}
    soon = text(client.get("/jobs/delayed/?within=1m"))
    assert len(rows(soon)) == 1 and "Soon" in soon.split("<tbody")[1]

    complete(rclient, name="app.jobs.A", queue="default", now=now - 10)
    complete(rclient, name="app.jobs.B", queue="high", now=now - 20)
    done = text(client.get("/jobs/completed/"))
    assert counts(done, "job") == {"app.jobs.A": "1", "app.jobs.B": "1"}
    assert counts(done, "queue") == {"redis:default": "1", "redis:high": "1"}
    assert "Completed in the past:" in done
    only = text(client.get("/jobs/completed/?queue=redis:high"))
    assert counts(only, "job") == {"app.jobs.B": "1"}


def test_past_the_budget_counts_are_a_spread_sample_marked_as_estimates(client, driver,
                                                                        monkeypatch):
    monkeypatch.setattr(facets, "SAMPLE", 500)
    entries = [encode(payload(name="app.jobs.Rare" if i % 10 == 0 else "app.jobs.Common"))
               for i in range(5000)]
    driver.push_many("default", entries)
    body = text(client.get("/jobs/pending/"))
    assert "estimated from 500 of 5,000 pending jobs" in body
    jobs = counts(body, "job")
    assert jobs["app.jobs.Common"].startswith("≈") and jobs["app.jobs.Rare"].startswith("≈")
    rare = int(jobs["app.jobs.Rare"].strip("≈").replace(",", ""))
    assert 350 <= rare <= 650, f"about a tenth of 5,000, spread over the list: {rare}"
    assert counts(body, "queue") == {"redis:default": "5,000"}, "queue lengths stay exact"

    reads = []
    real = facet_counts.sampled_entries
    monkeypatch.setattr(facet_counts, "sampled_entries",
                        lambda *a: reads.append(a) or real(*a))
    driver.push_many("default", entries[:500])
    again = text(client.get("/jobs/pending/"))
    assert not reads, "a refresh within 10 s reuses the sample while the list keeps its size"
    assert "estimated from 500 of 5,500 pending jobs" in again, "scaled to the size now"
    assert counts(again, "queue") == {"redis:default": "5,500"}
    driver.push_many("default", entries * 1)
    text(client.get("/jobs/pending/"))
    assert len(reads) == 1, "a list that grew by more than a fifth is sampled again"


def test_failed_facets_and_bulk_actions_act_on_the_chosen_value(client):
    for _ in range(3):
        fail(name="app.jobs.Charge", tags=["customer:7"])
    fail(name="app.jobs.Charge", tags=["customer:70"])
    fail(queue="high", name="app.jobs.Mail", tags=["customer:7"],
         exception="ValueError: no\n\nTraceback")
    old = fail(name="app.jobs.Mail", tags=[])
    FailedJob.objects.filter(pk=old.pk).update(failed_at=timezone.now() - dt.timedelta(days=2))
    body = text(client.get("/failed/"))
    assert counts(body, "job") == {"app.jobs.Charge": "4", "app.jobs.Mail": "2"}
    assert counts(body, "queue") == {"redis:default": "5", "redis:high": "1"}
    assert counts(body, "tag") == {"customer:7": "4", "customer:70": "1"}
    assert "Counts over all 6 failed jobs." in body
    tagged = text(client.get("/failed/?tag=customer:7"))
    assert len(rows(tagged)) == 4, "the tag regex does not take customer:70"
    assert "Retry all 4 matching" in tagged
    assert counts(tagged, "job") == {"app.jobs.Charge": "3", "app.jobs.Mail": "1"}
    assert "tag=customer%3A7&amp;" in tagged, "the time and exception links keep the facet"
    mail = text(client.get("/failed/?job=app.jobs.Mail&tag=customer:7"))
    assert len(rows(mail)) == 1
    upto = max(FailedJob.objects.values_list("id", flat=True))
    answer = client.post("/failed/delete/", {"tag": "customer:7", "upto": upto,
                                                      "expected": 4}, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    left = sorted(FailedJob.objects.values_list("job", flat=True))
    assert left == ["app.jobs.Charge", "app.jobs.Mail"], "only the tagged rows went"


def test_pure_rules():
    assert facets.sample_plan(10) == [(0, 10)] and facets.sample_plan(0) == []
    plan = facets.sample_plan(100_000, budget=2000, pieces=20)
    assert len(plan) == 20 and plan[0] == (0, 100) and plan[-1] == (99_900, 100)
    assert facets.scale(10, 2000, 100_000) == 500 and facets.scale(0, 10, 100) == 0
    assert facets.scale(1, 2000, 100_000) == 50 and facets.scale(3, 10, 10) == 3
    picked = Picked(job="a.B")
    found = facets.tally([("q:1", {"job": "a.B", "tags": ["x"]}, None),
                          ("q:1", {"job": "a.C", "tags": ["y"]}, None)], "pending", 0.0,
                         picked)
    assert found.jobs == {"a.B": 1, "a.C": 1}, "the job facet ignores its own choice"
    assert found.tags == {"x": 1} and found.queues == {"q:1": 1}
    assert "start" not in facets.query_with({"q": "x", "start": "50"}, "job", "a.B", False)
    assert facets.query_with({"job": "a.B"}, "job", "a.B", True) == ""


def best_of(times, call):
    """The fastest of `times` calls, each with the estimates forgotten (a cold count)."""
    out = []
    for _ in range(times):
        facet_counts.forget_job_counts()
        started = time.perf_counter()
        response = call()
        out.append(time.perf_counter() - started)
    return response, min(out)


def test_facets_at_100000_pending_stay_fast(client, driver):
    """100k pending over two job names, tags with an argument each like a real payload:
    the counts are a 2,000-entry sample, so the page costs what it costs at 2,000."""
    common = payload(name="app.jobs.SendInvoice", args=[1, "x" * 120], tags=["customer:42"])
    rare = payload(name="app.jobs.Refund", args=[2, "y" * 120], tags=["customer:7"])
    entries = [encode({**(rare if i % 20 == 0 else common), "uuid": f"u{i}"})
               for i in range(100_000)]
    driver.push_many("default", entries, chunk=5000)
    pages = {"list": "/jobs/pending/", "facet": "/jobs/pending/?job=app.jobs.Refund",
             "tag": "/jobs/pending/?tag=customer:7&within=1h"}
    timings, read = {}, {}
    for name, url in pages.items():
        sent_before = bytes_sent(driver)
        client.get(url)
        read[name] = bytes_sent(driver) - sent_before
        response, seconds = best_of(3, lambda url=url: client.get(url))
        timings[name] = seconds
        body = text(response)
        assert "estimated from 2,000 of 100,000 pending jobs" in body
        print(f"{name}: {seconds * 1000:.1f} ms")
    refresh, seconds = best_of(3, lambda: client.get(
        "/jobs/pending/?job=app.jobs.Refund", HTTP_HX_REQUEST="true"))
    print(f"facet refresh (htmx): {seconds * 1000:.1f} ms")
    started = time.perf_counter()
    client.get("/jobs/pending/?job=app.jobs.Refund", HTTP_HX_REQUEST="true")
    warm = time.perf_counter() - started
    print(f"facet refresh within 10 s of the last count: {warm * 1000:.1f} ms")
    jobs = counts(text(client.get("/jobs/pending/")), "job")
    assert jobs == {"app.jobs.SendInvoice": "≈95,000", "app.jobs.Refund": "≈5,000"}
    narrowed = text(client.get(pages["facet"]))
    assert len(rows(narrowed)) == 50 and "Scanned pending entries 1–981 of 100,000" in narrowed
    # What a page reads, not how long it takes (a timed bound failed on a loaded machine
    # running the suite on 3 processes; bench/dashboard.py measures the time): the 2,000
    # sampled entries and the 50 rows are about 1.4 MB of the queue's 25 MB.
    assert max(read.values()) < 5_000_000, f"bytes Redis sent per page at 100k: {read}"
    print(f"pages at 100k pending: {timings}, bytes read: {read}")


def bytes_sent(driver) -> int:
    return int(driver.client.info("stats")["total_net_output_bytes"])


def test_retries_facets_count_jobs_in_backoff_by_their_last_error(client, driver):
    from horizon import attempts

    now = time.time()
    for i, (name, error) in enumerate([("app.jobs.Charge", "ValueError: card declined"),
                                       ("app.jobs.Charge", "TimeoutError: gateway"),
                                       ("app.jobs.Mail", "TimeoutError: smtp")]):
        data = payload(name=name, attempts=1, tags=[f"customer:{i}"])
        driver.later("default", encode(data), now + 30 + i * 3600)
        attempts.record(data["uuid"], {"attempt": 1, "at": now, "outcome": "released",
                                       "error": error, "worker": "host:1"})
    driver.later("default", encode(payload(name="app.jobs.Fresh")), now + 10)  # not a retry
    body = text(client.get("/retries/"))
    assert counts(body, "exc") == {"TimeoutError": "2", "ValueError": "1"}
    assert counts(body, "job") == {"app.jobs.Charge": "2", "app.jobs.Mail": "1"}
    assert counts(body, "within") == {"1m": "1", "1h": "1", "24h": "3"}
    timeouts = text(client.get("/retries/?exc=TimeoutError"))
    assert len(rows(timeouts)) == 2 and "card declined" not in timeouts
    assert counts(timeouts, "job") == {"app.jobs.Charge": "1", "app.jobs.Mail": "1"}
    assert "2 jobs waiting in backoff" in timeouts
    both = text(client.get("/retries/?exc=TimeoutError&job=app.jobs.Mail"))
    assert len(rows(both)) == 1 and 'name="exc" value="TimeoutError"' in both
