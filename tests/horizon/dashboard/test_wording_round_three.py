"""Issue 51's wording and Monitoring points, on the pages' text: the 503 page names how
long workers keep their jobs; an expired job never says it was delivered; an overdue
retry says "overdue"; a balance-off pool reads as shared; the Sentinel switch flag says
who follows it; a tag's page has a failed-only view and a link to Failed by the tag; a
week of retention reads "7 days". Real Redis, the Django test client."""
import json
import re
import time

import pytest

from horizon.dashboard.overview import flags
from horizon.dashboard.shared.formatting import kept_for
from horizon.primary_switches import PrimarySwitch
from horizon.repositories import monitored, state, unrun
from tests.helpers import fail, later, payload, publish, superuser_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return superuser_client()


def words(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_the_503_page_says_how_long_workers_keep_their_jobs(client, own_redis):
    own_redis.stop()
    text = words(client.get("/"))
    # tests' connection: retry_after 90, socket_timeout 10 -> LeaseTiming.tolerated 75.8 s
    assert "Workers keep running their jobs for up to 1 min 16 s of an outage" in text
    assert "past that they stop them and hand them back" in text


def test_an_expired_job_never_says_it_was_delivered(client, rclient):
    data = payload(name="tests.testapp.jobs.noop", attempts=1)
    record = {"uuid": data["uuid"], "name": data["job"], "queue": "redis:default",
              "expired_at": time.time(), "expires_at": time.time() - 5,
              "payload": json.dumps(data)}
    script, keys, args = unrun.record_call(rclient, kind="expired", uuid=data["uuid"],
                                           record=record, now=time.time(),
                                           keep_seconds=600, keep_count=100)
    script(keys=keys, args=args)
    text = words(client.get(f"/jobs/expired/{data['uuid']}/"))
    assert "delivery so far" not in text
    assert "Never run: a worker took it and found it expired" in text


def test_a_retry_past_its_due_time_reads_overdue(client, driver):
    job = later(driver, time.time() - 10, name="tests.testapp.jobs.noop", attempts=1)
    upcoming = later(driver, time.time() + 600, name="tests.testapp.jobs.noop", attempts=1)
    page = client.get("/retries/").content.decode()
    overdue_row = page[page.index(f'data-uuid="{job["uuid"]}"'):]
    overdue_row = overdue_row[:overdue_row.index("</tr>")]
    assert "overdue" in overdue_row and "ago" in overdue_row
    later_row = page[page.index(f'data-uuid="{upcoming["uuid"]}"'):]
    assert "overdue" not in later_row[:later_row.index("</tr>")]


def test_a_balance_off_pool_reads_as_shared_with_its_jobs_at_once(client, rclient):
    publish(rclient, processes={"high,default,low": 2})
    sup = state.supervisors(rclient)[0]
    sup.options = {"max_processes": 2, "concurrency": 3}
    sup.balance = "off"
    state.publish_supervisor(rclient, sup)
    text = words(client.get("/"))
    assert "2 (shared with its supervisor's other queues; 6 jobs at once)" in text
    assert "slots)" not in text


def test_the_sentinel_switch_flag_claims_workers_only_where_they_serve(monkeypatch):
    switch = PrimarySwitch("sentinel-conn", "10.0.0.2:6379", "10.0.0.1:6379", time.time() - 60)
    monkeypatch.setattr(flags.primary_switches, "recent_switches", lambda now, reading: [switch])
    [served] = flags._switch_flags(time.time(), {"sentinel-conn"})
    [alone] = flags._switch_flags(time.time(), {"redis"})
    assert served.text.endswith("Dispatch and its workers follow the new primary.")
    assert alone.text.endswith("Dispatch follows the new primary; no supervisor's workers "
                               "serve this connection.")
    assert "Workers and dispatch followed it" not in alone.text


def test_a_tags_page_has_a_failed_only_view_and_a_link_to_failed_by_tag(client, rclient):
    monitored.watch(rclient, "tenant-acme")
    failed = fail(name="tests.testapp.jobs.noop", tags=["tenant-acme"])
    fail(name="tests.testapp.jobs.noop", tags=["tenant-other"])
    everything = client.get("/monitoring/tenant-acme/").content.decode()
    assert 'href="/monitoring/tenant-acme/?state=failed"' in everything
    assert 'href="/failed/?tag=tenant-acme"' in everything
    only = client.get("/monitoring/tenant-acme/?state=failed")
    text = words(only)
    assert "1 failed job with tag tenant-acme in the failed store" in text
    assert failed.uuid in only.content.decode()
    listed = client.get("/failed/?tag=tenant-acme").content.decode()
    assert failed.uuid in listed


def test_a_week_of_retention_reads_7_days(client):
    assert kept_for(10080) == "7 days" and kept_for(1440) == "1 day"
    assert kept_for(60) == "1 hour" and kept_for(90) == "90 minutes"
    assert kept_for(0.5) == "0.5 minutes"
    assert "kept 7 days whatever the Completed list keeps" in words(client.get("/monitoring/"))
