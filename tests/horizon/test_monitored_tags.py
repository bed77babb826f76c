"""Monitored tags (issue 37): watch a tag and every job dispatched with it is listed on
its page with its state, kept for trim.monitored minutes; real Redis, a real worker
loop, the dashboard through Django's test client."""
import asyncio
import io
import json
import re
import socket
from contextlib import contextmanager
from io import StringIO

import pytest
import redis
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from horizon import keys
from horizon.models import AuditEntry
from horizon.monitor_recording import watched_tags
from horizon.repositories import horizon_client, monitored
from queueing import dispatch_many_async
from queueing.connections import redis_driver
from queueing.drivers.redis.keys import QueueKeys
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.helpers import retired_horizon
from tests.horizon.dashboard.access.test_access import client_for, make_user
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_watched_set():
    watched_tags.forget()  # each test's Redis starts empty: so does this process's copy
    yield
    watched_tags.forget()


def drain():
    Worker(redis_driver("redis"), WorkerOptions(queues=("default", "high"), stop_when_empty=True,
                                                sleep=0, quiet=True, memory=0),
           stderr=io.StringIO()).run()


def states(html: str) -> dict[str, str]:
    """uuid -> state, as the tag's page shows them."""
    return dict(re.findall(r'data-uuid="([^"]+)" data-state="([^"]+)"', html))


def admin() -> Client:
    user = User.objects.filter(username="root").first() or User.objects.create_superuser(
        "root", password="pw")
    return client_for(user)


def test_a_watched_tags_jobs_are_listed_with_their_states(rclient):
    user = User.objects.create_user("customer")
    tag = f"auth.User:{user.pk}"
    monitored.watch(rclient, tag)
    done = jobs.record.using(tags=[tag]).delay("first")
    failed = jobs.explode.using(tags=[tag, "other"]).delay("second")
    untagged = jobs.record.delay("no tag")
    other = jobs.record.using(tags=[f"auth.User:{user.pk + 1}"]).delay("someone else")
    client = admin()
    url = reverse("horizon:monitoring-tag", args=[tag])
    assert states(client.get(url).content.decode()) == {done: "pending", failed: "pending"}
    drain()
    pending = jobs.record.using(tags=[tag]).delay("third")  # dispatched after the run
    page = client.get(url).content.decode()
    assert states(page) == {done: "completed", failed: "failed", pending: "pending"}
    assert untagged not in page and other not in page
    # newest first, each linked to its job's page
    assert page.index(pending) < page.index(failed) < page.index(done)
    assert reverse("horizon:job", args=["failed", failed]) in page
    assert reverse("horizon:job", args=["completed", done]) in page
    listing = client.get(reverse("horizon:monitoring")).content.decode()
    row = listing[listing.index(f'data-tag="{tag}"'):]
    assert re.search(r'data-label="Jobs">3<', row) and 'pill-failed">1<' in row
    assert monitored.summaries(rclient) == [(tag, 3, 1)]


def test_a_job_dropped_for_a_missing_row_shows_as_dropped(rclient):
    user = User.objects.create_user("leaving")
    tag = f"auth.User:{user.pk}"
    monitored.watch(rclient, tag)
    uuid = jobs.greet_user_or_drop.delay(user)
    user.delete()
    drain()
    page = admin().get(reverse("horizon:monitoring-tag", args=[tag])).content.decode()
    assert states(page) == {uuid: "dropped"}
    assert reverse("horizon:job", args=["dropped", uuid]) in page
    assert monitored.summaries(rclient) == [(tag, 1, 0)]  # not a failure


def test_a_retried_failure_shows_where_it_is_now(rclient):
    monitored.watch(rclient, "tenant:acme")
    uuid = jobs.explode.using(tags=["tenant:acme"]).delay("x")
    drain()
    client = admin()
    url = reverse("horizon:monitoring-tag", args=["tenant:acme"])
    assert states(client.get(url).content.decode()) == {uuid: "failed"}
    call_command("queue_retry", uuid, stdout=StringIO())
    assert states(client.get(url).content.decode()) == {uuid: "pending"}


def test_tags_with_odd_characters_get_working_links(rclient):
    tag = "tenant/acme:50% off?#1 ü"
    client = admin()
    response = client.post(reverse("horizon:monitoring-watch"), {"tag": tag})
    assert response.status_code == 302
    uuid = jobs.record.using(tags=[tag]).delay("odd")
    listing = client.get(reverse("horizon:monitoring")).content.decode()
    link = reverse("horizon:monitoring-tag", args=[tag])
    assert "%252F" in link and f'href="{link}"' in listing
    assert states(client.get(link).content.decode()) == {uuid: "pending"}
    stop = reverse("horizon:monitoring-stop", args=[tag])
    assert client.post(stop).status_code == 302
    assert monitored.watched(rclient) == []


def test_a_watched_tag_is_shown_masked_as_every_page_shows_tags(rclient):
    """Masked on the page, and (issue 48, info) in link targets too: a tag whose shown
    form differs from it is linked by a keyed digest, never by its raw text, so the
    secret reaches neither a URL nor the access log."""
    tag = "password=hunter2"
    client = admin()
    response = client.post(reverse("horizon:monitoring-watch"), {"tag": tag}, follow=True)
    assert "Watching tag password=********" in response.content.decode()
    uuid = jobs.record.using(tags=[tag]).delay("secret")
    listing = client.get(reverse("horizon:monitoring")).content.decode()
    assert 'data-tag="password=********"' in listing
    assert ">password=********</a>" in listing and "hunter2" not in listing
    [link] = re.findall(r'<td class="job"><a href="([^"]+)">', listing)
    assert "hunter2" not in link and "password" not in link
    page = client.get(link).content.decode()
    assert states(page) == {uuid: "pending"}  # the link still finds its jobs
    assert "<code>password=********</code>" in page and "<title>Tag password=********" in page
    assert "hunter2" not in page
    [stop] = re.findall(r'action="([^"]+/stop/)"', listing)
    assert "hunter2" not in stop
    stopped = client.post(stop, follow=True)
    assert "Stopped watching tag password=********" in stopped.content.decode()
    assert "hunter2" not in stopped.content.decode()
    assert monitored.watched(rclient) == []


def test_jobs_are_kept_for_trim_monitored_not_trim_completed(rclient, settings):
    settings.HORIZON = {**settings.HORIZON, "trim": {"completed": 1, "monitored": 60}}
    monitored.watch(rclient, "keep")
    uuid = jobs.record.using(tags=["keep"]).delay("kept")
    drain()
    rclient.delete(keys.completed(), keys.completed_records())  # the Completed list trimmed it
    page = admin().get(reverse("horizon:monitoring-tag", args=["keep"])).content.decode()
    assert states(page) == {uuid: "completed"}
    old = json.dumps({"name": "x", "queue": "redis:default", "status": "completed", "at": 0})
    rclient.zadd(keys.monitored("keep"), {"old-job": 1.0})
    rclient.hset(keys.monitored_records("keep"), "old-job", old)
    page = admin().get(reverse("horizon:monitoring-tag", args=["keep"])).content.decode()
    assert "old-job" not in page  # past trim.monitored: dropped as the page is read
    assert rclient.hget(keys.monitored_records("keep"), "old-job") is None


def test_pages_25_jobs_at_a_time(rclient):
    monitored.watch(rclient, "bulk")
    uuids = [jobs.noop.using(tags=["bulk"]).delay(i) for i in range(30)]
    client = admin()
    url = reverse("horizon:monitoring-tag", args=["bulk"])
    first = states(client.get(url).content.decode())
    second = states(client.get(url + "?start=25").content.decode())
    assert list(first) == list(reversed(uuids))[:25] and list(second) == list(reversed(uuids))[25:]


def test_an_unwatched_tag_records_nothing_and_its_page_is_404(rclient):
    jobs.record.using(tags=["nobody"]).delay("x")
    assert rclient.keys(keys.monitored("*")) == []
    assert admin().get(reverse("horizon:monitoring-tag", args=["nobody"])).status_code == 404


def test_watch_and_stop_from_the_page_are_audited_and_need_the_operate_role(rclient):
    client = client_for(make_user("ops", staff=True, perm=True), enforce_csrf_checks=True)
    page = client.get(reverse("horizon:monitoring")).content.decode()
    token = client.cookies["csrftoken"].value
    assert 'name="tag"' in page
    assert client.post(reverse("horizon:monitoring-watch"), {"tag": "tenant:acme"}
                       ).status_code == 403  # no CSRF token
    response = client.post(reverse("horizon:monitoring-watch"), {"tag": "tenant:acme"},
                           headers={"X-CSRFToken": token})
    assert response.status_code == 302 and monitored.watched(rclient) == ["tenant:acme"]
    assert "Stop watching" in client.get(reverse("horizon:monitoring")).content.decode()
    entry = AuditEntry.objects.get(action="watch tag")
    assert (entry.user, entry.target) == ("ops", "tenant:acme")

    viewer = client_for(make_user("viewer", staff=True, perm="view"))
    seen = viewer.get(reverse("horizon:monitoring")).content.decode()
    assert "tenant:acme" in seen and 'name="tag"' not in seen and "Stop watching" not in seen
    stop = reverse("horizon:monitoring-stop", args=["tenant:acme"])
    assert viewer.post(stop).status_code == 403
    assert viewer.post(reverse("horizon:monitoring-watch"), {"tag": "x"}).status_code == 403
    assert monitored.watched(rclient) == ["tenant:acme"]

    jobs.record.using(tags=["tenant:acme"]).delay("x")
    response = client.post(stop, headers={"X-CSRFToken": token, "HX-Request": "true"},
                           data={"fragment": "monitoring"})
    assert response.status_code == 200 and b"Stopped watching tag tenant:acme" in response.content
    assert monitored.watched(rclient) == [] and rclient.keys(keys.monitored("*")) == []
    assert AuditEntry.objects.filter(action="stop watching tag", target="tenant:acme").exists()


def test_a_bad_tag_is_refused_with_a_reason(rclient):
    client = admin()
    response = client.post(reverse("horizon:monitoring-watch"), {"tag": "a\nb"}, follow=True)
    assert b"control characters" in response.content and monitored.watched(rclient) == []
    response = client.post(reverse("horizon:monitoring-watch"), {"tag": "x" * 201}, follow=True)
    assert b"at most 200" in response.content and monitored.watched(rclient) == []


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_the_command_watches_lists_and_stops(rclient):
    assert "Watching auth.User:42." in run("horizon_monitor", "auth.User:42")
    assert "already watched" in run("horizon_monitor", "auth.User:42")
    # one entry (the audit log masks "auth.<anything>:<value>" as it masks credentials)
    assert AuditEntry.objects.filter(action="watch tag").count() == 1
    uuid = jobs.record.using(tags=["auth.User:42"]).delay("cli")
    assert json.loads(run("horizon_monitor", "--json")) == [
        {"tag": "auth.User:42", "jobs": 1, "failed": 0}]
    assert "auth.User:42" in run("horizon_monitor")
    assert [row["uuid"] for row in monitored.jobs(rclient, "auth.User:42")] == [uuid]
    assert json.loads(run("horizon_monitor", "auth.User:42", "--stop", "--json")) == {
        "tag": "auth.User:42", "watched": False, "changed": True}
    assert AuditEntry.objects.filter(action="stop watching tag").count() == 1
    assert "No tag is watched." in run("horizon_monitor")
    with pytest.raises(CommandError, match="non-empty"):
        run("horizon_monitor", "  ")


def test_a_busy_tag_keeps_monitored_max_jobs_and_the_master_trims_quiet_ones(rclient, settings):
    from horizon.configuration.settings import horizon_settings
    from horizon.supervisor.trimming import Trimmer

    retired_horizon(settings, "monitored_max", trim={"monitored_max": 3})
    monitored.watch(rclient, "busy")
    uuids = [jobs.noop.using(tags=["busy"]).delay(i) for i in range(5)]
    assert [row["uuid"] for row in monitored.jobs(rclient, "busy")] == list(reversed(uuids))[:3]
    rclient.zadd(keys.monitored("busy"), {"ancient": 1.0})  # past trim.monitored
    Trimmer(horizon_settings(), rclient, owner="m", log=lambda _: None).tick(now=0)
    assert rclient.zscore(keys.monitored("busy"), "ancient") is None
    assert monitored.count(rclient, "busy") == 3


@contextmanager
def unreachable(client, tmp_path):
    """`client`'s pool pointed where nobody listens (a socket file that does not exist,
    or a port that was free a moment ago), its open connections closed: any sync call
    through it fails while this lasts (the server itself is untouched)."""
    pool = client.connection_pool
    kept = dict(pool.connection_kwargs)
    pool.disconnect()
    pool.reset()  # its connections keep their address: new ones take the one below
    if "path" in kept:  # a unix socket (the tests' own servers)
        pool.connection_kwargs["path"] = str(tmp_path / "nobody.sock")
    else:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            pool.connection_kwargs.update(host="127.0.0.1", port=probe.getsockname()[1])
    try:
        yield
    finally:
        pool.disconnect()
        pool.reset()
        pool.connection_kwargs.clear()
        pool.connection_kwargs.update(kept)


def test_adelay_records_a_watched_job_through_the_async_client_alone(rclient, tmp_path):
    monitored.watch(rclient, "tenant:acme")
    monitored.watch(rclient, "billing")
    watched_tags.forget()  # stale: this dispatch reads the watched set as well

    async def dispatch():
        return [await jobs.record.using(tags=["tenant:acme", "billing", "x"]).adelay("one"),
                *await dispatch_many_async([jobs.record.using(tags=["billing"]).s("two"),
                                            jobs.record.s("untagged")])]

    with unreachable(horizon_client(), tmp_path):
        with pytest.raises(redis.ConnectionError):
            horizon_client().ping()  # the sync client really is cut off
        one, two, untagged = asyncio.run(dispatch())
    assert [row["uuid"] for row in monitored.jobs(rclient, "tenant:acme")] == [one]
    assert [row["uuid"] for row in monitored.jobs(rclient, "billing")] == [two, one]
    assert {row["status"] for row in monitored.jobs(rclient, "billing")} == {"pending"}
    assert rclient.llen(QueueKeys.for_queue("default").ready) == 3  # all three pushed
    drain()
    page = admin().get(reverse("horizon:monitoring-tag", args=["billing"])).content.decode()
    assert states(page) == {one: "completed", two: "completed"}
    assert untagged not in page


def test_watched_tags_have_a_cap_with_a_clear_refusal(rclient):
    """Issue 48: with no cap, 20,000 watched tags made the Monitoring page 13.5 MB and
    15-25 s to load. Past MAX_WATCHED a new tag is refused, by the page and the command,
    saying why and what to do; a tag already watched is still 'already watched'."""
    cap = monitored.MAX_WATCHED
    assert 10 <= cap <= 1000
    pipe = rclient.pipeline(transaction=False)
    for i in range(cap):
        pipe.sadd(keys.monitoring(), f"tenant:{i:05d}")
    pipe.execute()
    client = admin()
    response = client.post(reverse("horizon:monitoring-watch"), {"tag": "one-more"},
                           follow=True)
    text = response.content.decode()
    assert f"at most {cap} tags are watched" in text and "stop watching one" in text, text
    assert "one-more" not in monitored.watched(rclient)
    assert len(monitored.watched(rclient)) == cap
    with pytest.raises(CommandError, match=f"at most {cap} tags are watched"):
        run("horizon_monitor", "one-more")
    assert "already watched" in run("horizon_monitor", "tenant:00001")
    assert not AuditEntry.objects.filter(action="watch tag").exists()
    run("horizon_monitor", "tenant:00001", "--stop")
    assert "Watching one-more." in run("horizon_monitor", "one-more")


def test_a_set_over_the_cap_from_before_shows_a_bounded_page(rclient):
    """Tags watched before the cap existed are kept, but the page lists MAX_WATCHED of
    them and says how many more there are."""
    cap = monitored.MAX_WATCHED
    pipe = rclient.pipeline(transaction=False)
    for i in range(cap + 50):
        pipe.sadd(keys.monitoring(), f"tenant:{i:05d}")
    pipe.execute()
    page = admin().get(reverse("horizon:monitoring")).content.decode()
    assert page.count("<tr data-tag=") == cap
    assert f"{cap + 50} watched tags" in page and "50 more not shown" in page
