"""Dashboard pages rendered against a real Redis and the failed-job store."""
import datetime as dt
import re
import time

import pytest
from django.utils import timezone

from horizon.dashboard.jobs import listings
from horizon.repositories import metrics
from queueing.entries.payload import encode
from tests.helpers import (
    complete,
    fail,
    later,
    payload,
    publish,
    push,
    superuser_client,
    text,
    three_queues,  # noqa: F401 (an autouse fixture)
)

pytestmark = pytest.mark.django_db




@pytest.fixture
def client():
    return superuser_client()
















# -- overview -----------------------------------------------------------------------------
def test_overview_with_nothing_running(client, driver):
    push(driver)
    page = text(client.get("/"))
    assert "pill-inactive" in page and "no master running" in page
    assert re.search(r'queue=redis%3Adefault">1</a>', page), "pending count of default"
    assert 'hx-trigger="every 2s"' in page
    assert "<!doctype html>" in page.lower()


def test_overview_counts_status_processes_waits_and_failures(client, driver, rclient):
    publish(rclient, sup_status="paused")
    for _ in range(3):  # just pushed: the wait is the estimate, not the oldest's age
        push(driver, queue="default", pushedAt=time.time())
    later(driver, time.time() + 600, queue="high")
    for i in range(4):
        complete(rclient, queue="default", runtime=2.0)
    fail()
    fail(when=timezone.now() - dt.timedelta(days=8))
    response = client.get("/", headers={"HX-Request": "true"})
    page = text(response)
    assert "<html" not in page, "an HTMX poll gets the partial only"
    assert response["Vary"] and "HX-Request" in response["Vary"]
    assert "pill-running" in page and "1 supervisor paused" in page
    assert re.search(r"Total processes</h2><p class=\"stat\">4<", page)
    assert re.search(r"Failed, 7 days</h2><p class=\"stat\"><a [^>]+>1<", page)
    assert re.search(r"Jobs past hour</h2><p class=\"stat\">4<", page)
    # default: 3 pending x 2 s each / 2 processes = 3 s
    assert re.search(r"Max wait time</h2><p class=\"stat\">3 s</p><p class=\"muted\">redis:default",
                     page)
    assert "supervisor-1" in page and "web-1" in page


def test_overview_shows_a_paused_queue(client, rclient):
    rclient.sadd("queueing:paused", "redis:low")
    page = text(client.get("/"))
    assert re.search(r"low</a> <span class=\"pill pill-paused\">Paused", page)
    assert 'action="/queues/redis:low/continue/"' in page
    assert 'action="/queues/redis:high/pause/"' in page


# -- job lists ----------------------------------------------------------------------------
def test_pending_pages_through_ranges_in_queue_order(client, driver):
    pushed = [push(driver, name=f"app.jobs.job{i}") for i in range(120)]
    page = text(client.get("/jobs/pending/"))
    assert "1–50 of 120 pending jobs" in page
    names = re.findall(r'<td class="job"> <a href="[^"]+">([^<]+)</a>', page)
    assert names == [f"job{i}" for i in range(50)]
    assert f'/jobs/pending/{pushed[0]["uuid"]}/?queue=redis%3Adefault&amp;at=0' in page
    assert "start=50" in page and "Next 50" in page
    last = text(client.get("/jobs/pending/?start=100"))
    assert "101–120 of 120" in last and "Next 50" not in last
    assert re.findall(r'<td class="job"> <a href="[^"]+">([^<]+)</a>', last)[-1] == "job119"


def test_pending_across_queues_and_filtered_by_queue(client, driver):
    push(driver, queue="high", name="app.jobs.urgent")
    push(driver, queue="default", name="app.jobs.normal")
    both = text(client.get("/jobs/pending/"))
    rows = both[both.index("<tbody"):]  # the facets above the table list names too
    assert rows.index("urgent") < rows.index("normal")
    only = text(client.get("/jobs/pending/?queue=redis:default"))
    assert "normal" in only and "urgent" not in only
    assert "1–1 of 1 pending job in redis:default" in only


def test_filtered_scan_is_bounded_and_offers_to_continue(client, driver, monkeypatch):
    monkeypatch.setattr(listings, "SCAN_WINDOW", 300)
    monkeypatch.setattr(listings, "CHUNK", 100)
    entries = [encode(payload(name="app.jobs.bulk")) for _ in range(700)]
    entries[650] = encode(payload(name="app.jobs.needle", tags=["customer:7"]))
    driver.push_many("default", entries)
    first = text(client.get("/jobs/pending/?q=customer:7"))
    assert "Scanned pending entries 1–300 of 700" in first and "0 matches" in first
    assert "start=300" in first and "Scan further" in first
    third = text(client.get("/jobs/pending/?q=customer:7&start=600"))
    assert "Scanned pending entries 601–700 of 700" in third and "1 match " in third
    assert "needle" in third and "Scan further" not in third


def test_filter_by_job_name_collects_a_page_of_matches(client, driver):
    for i in range(60):
        push(driver, name="app.jobs.SendMail" if i % 2 else "app.jobs.Other")
    page = text(client.get("/jobs/pending/?q=sendmail"))
    assert page.count('<td class="job">') == 30
    assert "Scanned pending entries 1–60 of 60: 30 matches" in page


def test_delayed_shows_due_times(client, driver):
    data = later(driver, time.time() + 3600, name="app.jobs.reminder")
    page = text(client.get("/jobs/delayed/"))
    assert "reminder" in page and ("in 1 h" in page or "in 59 min" in page)
    assert "Run now" in page and "score=" in page
    assert data["uuid"] in page


def test_reserved_shows_lease_attempts_and_holder(client, driver):
    push(driver, name="app.jobs.slow")
    driver.pop("default", owner="web-1:5002:supervisor-1")
    page = text(client.get("/jobs/reserved/"))
    assert "slow" in page and "web-1:5002:supervisor-1" in page
    assert re.search(r'<td class="num"[^>]*>1 / 3</td>', page), "attempts / max tries"
    assert "Lease expires" in page and ("in 1 min 30 s" in page or "in 1 min 29 s" in page)


def test_completed_shows_runtime_and_is_trimmed(client, rclient):
    complete(rclient, name="app.jobs.fresh", runtime=0.250)
    complete(rclient, name="app.jobs.ancient", now=time.time() - 7200)
    page = text(client.get("/jobs/completed/"))
    assert "fresh" in page and "250 ms" in page
    assert "ancient" not in page, "older than trim.completed (60 min)"
    assert rclient.zcard("{horizon}:completed") == 1


def test_completed_filtered_by_queue(client, rclient):
    complete(rclient, name="app.jobs.a", queue="high")
    complete(rclient, name="app.jobs.b", queue="low")
    page = text(client.get("/jobs/completed/?queue=redis:low"))
    assert ">b</a>" in page and ">a</a>" not in page


# -- failed -------------------------------------------------------------------------------
def test_failed_newest_first_with_search_and_queue_filter(client):
    now = timezone.now()
    fail(name="app.jobs.Old", when=now - dt.timedelta(hours=2))
    fail(name="app.jobs.New", exception="ValueError: bad invoice 17\n\nTraceback")
    fail(name="app.jobs.High", queue="high", exception="KeyError: x")
    page = text(client.get("/failed/"))
    assert page.index(">New<") < page.index(">Old<")
    assert "1–3 of 3 failed jobs" in page and "Retry all" in page
    found = text(client.get("/failed/?q=invoice"))
    assert ">New<" in found and ">Old<" not in found
    assert "1–1 of 1 failed job matching “invoice”" in found  # the store's index answered
    high = text(client.get("/failed/?queue=redis:high"))
    assert ">High<" in high and ">New<" not in high and "Retry all 1 matching" in high


def test_failed_pages(client):
    base = timezone.now()
    for i in range(55):
        fail(name=f"app.jobs.J{i}", when=base - dt.timedelta(seconds=i))
    first = text(client.get("/failed/"))
    assert "1–50 of 55" in first and "Older" in first and ">J49<" in first
    second = text(client.get("/failed/?start=50"))
    assert ">J54<" in second and ">J0<" not in second and "Newer" in second


def test_failed_search_runs_in_windows_without_an_index(client, monkeypatch):
    """A database with no trigram index (MySQL, MariaDB, an SQLite without FTS5)."""
    from horizon.dashboard.failed import failures
    from queueing.state import failed_search

    monkeypatch.setattr(failures, "SEARCH_WINDOW", 10)
    monkeypatch.setattr(failed_search, "available", lambda using: False)
    base = timezone.now()
    for i in range(25):
        fail(name="app.jobs.Needle" if i == 15 else "app.jobs.Hay",
             when=base - dt.timedelta(seconds=i))
    first = text(client.get("/failed/?q=needle"))
    assert "0 matches" in first and "failed jobs 1–10" in first and "window=1" in first
    second = text(client.get("/failed/?q=needle&window=1"))
    assert "1 match" in second and "failed jobs 11–20" in second and ">Needle<" in second
    third = text(client.get("/failed/?q=needle&window=2"))
    assert "failed jobs 21–25" in third and "Search older" not in third


# -- job detail ---------------------------------------------------------------------------
def test_detail_masks_secrets_and_escapes_markup(client):
    row = fail(name="app.jobs.<script>alert(1)</script>",
               kwargs={"password": "hunter2", "user": "<b>bob</b>",
                       "dsn": "redis://:topsecret@cache:6379/0"},
               tags=["<img src=x onerror=alert(2)>"],
               exception="RuntimeError: <script>alert(3)</script> via redis://:pw123@h/0\n\n"
                         "Traceback (most recent call last):\n  File \"x.py\", line 1")
    response = client.get(f"/jobs/failed/{row.uuid}/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "hunter2" not in page and "topsecret" not in page and "pw123" not in page
    assert "********" in page
    assert "<script>alert" not in page and "<img src=x" not in page and "<b>bob" not in page
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in page
    assert "Traceback (most recent call last)" in page
    assert response["X-Frame-Options"] == "DENY"


def test_failed_list_escapes_job_data(client):
    fail(name="app.jobs.<script>x()</script>", exception="<script>y()</script>",
         tags=["<svg onload=z()>"])
    page = client.get("/failed/").content.decode()
    assert "<script>x()" not in page and "<script>y()" not in page and "<svg onload" not in page


def test_pending_detail_found_from_its_position(client, driver):
    for _ in range(3):
        push(driver)
    target = push(driver, name="app.jobs.Target", kwargs={"api_token": "zzz"}, tags=["t1"])
    page = text(client.get(f"/jobs/pending/{target['uuid']}/?queue=redis:default&at=3"))
    assert "Target" in page and "pill-pending" in page and "zzz" not in page
    assert '<span class="tag">t1</span>' in page and "Pushed" in page
    # the hint is stale (two jobs ran since): still found
    driver.pop("default")
    driver.pop("default")
    assert "Target" in text(client.get(f"/jobs/pending/{target['uuid']}/?queue=redis:default&at=3"))


def test_delayed_and_reserved_detail_found_by_score(client, driver):
    due = time.time() + 900
    data = later(driver, due)
    page = text(client.get(f"/jobs/delayed/{data['uuid']}/?queue=redis:default&score={due!r}"))
    assert "Due" in page and "Run now" in page
    held = push(driver, queue="high")
    driver.pop("high", owner="w:1:s")
    lease = driver.reserved("high")[0][1]
    page = text(client.get(f"/jobs/reserved/{held['uuid']}/?queue=redis:high&score={lease!r}"))
    assert "Lease expires" in page and "w:1:s" in page


def test_detail_follows_a_job_that_moved_on(client):
    row = fail(name="app.jobs.Moved")
    response = client.get(f"/jobs/pending/{row.uuid}/?queue=redis:default&at=0")
    assert response.status_code == 200
    assert "no longer pending; it is now failed" in text(response)


def test_missing_job_is_404_with_a_way_back(client):
    response = client.get("/jobs/pending/nope/?queue=redis:default")
    assert response.status_code == 404
    assert "is no longer pending" in text(response)


def test_completed_detail_shows_runtime(client, rclient):
    data = complete(rclient, name="app.jobs.Done", runtime=1.5)
    page = text(client.get(f"/jobs/completed/{data['uuid']}/"))
    assert "Completed" in page and "ran 1.5 s" in page


# -- workers and metrics ------------------------------------------------------------------
def test_workers_lists_masters_supervisors_and_pids(client, rclient):
    publish(rclient)
    page = text(client.get("/workers/"))
    assert "web-1" in page and "web-1.internal" in page and "4242" in page
    assert "supervisor-1" in page and "5001 5002 5003 5004" in page
    assert "default: 2" in page
    assert 'action="/supervisors/web-1:supervisor-1/pause/"' in page  # master:supervisor
    assert 'action="/masters/web-1/pause/"' in page


def test_workers_without_masters(client):
    assert "No master is running" in text(client.get("/workers/"))


def test_metrics_draws_charts_from_snapshots(client, rclient):
    start = time.time() - 600
    for minute in range(5):
        for _ in range(minute + 1):
            complete(rclient, name="app.jobs.Report", queue="default", runtime=0.05 * (minute + 1))
        metrics.take_snapshots(rclient, now=start + minute * 60)
    page = text(client.get("/metrics/"))
    assert page.count("<polyline") >= 4 + 2, "sparklines per row plus the large charts"
    assert "app.jobs.Report" in page and "redis:default" in page
    chosen = text(client.get("/metrics/?series=job:app.jobs.Report"))
    assert "Job <span class=\"mono\">app.jobs.Report</span>" in chosen
    assert "5 snapshots" in chosen


def test_metrics_empty(client):
    assert "Nothing measured yet" in text(client.get("/metrics/"))
