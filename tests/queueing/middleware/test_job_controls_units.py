"""Job controls at the Redis level (their scripts, keys and options) and on the dashboard:
locks listed with their owners and released by an audited action, a job's middleware
outcomes on its page. Runs on the cluster leg too (TEST_BACKEND=cluster)."""
import pytest
from django.contrib.auth.models import User
from django.test import Client

from horizon.models import AuditEntry
from queueing import job
from queueing.dispatching.registry import lookup
from queueing.entries.payload import Payload
from queueing.errors import ConfigurationError, InvalidOption
from queueing.middleware import (
    RateLimited,
    Skip,
    ThrottlesExceptions,
    WithoutOverlapping,
    keys,
    lock_calls,
    outcomes,
)
from queueing.middleware.context import RELEASED, SKIPPED, RunningJob
from queueing.middleware.pipeline import Plan, plan_for
from queueing.middleware.store import script
from queueing.state.locks import key_ref
from tests.helpers import client_with
from tests.testapp import control_jobs, jobs

HX = {"HX-Request": "true"}


def running(client, name="tests.job", args=(), uuid="u-1", timeout=0.0):
    payload = Payload(uuid=uuid, job=name, display_name=name, args=list(args), kwargs={},
                      attempts=1, deliveries=1, max_tries=None, max_exceptions=None, backoff=None,
                      timeout=None, retry_until=None, fail_on_timeout=False, pushed_at=None,
                      tags=[], chain=[], data={})
    return RunningJob(payload, None, connection="redis", queue="default", client=client,
                      worker="host:1:w", timeout=timeout)


# -- keys and scripts ---------------------------------------------------------------------
def test_keys_keep_user_text_inside_one_hash_tag():
    assert keys.control_key("rate", "a{b}c") == "queueing:rate:{a%7Bb%7Dc}"  # issue 32
    long_key = keys.control_key("rate", "x" * 1000)
    assert len(long_key) < 260 and long_key.count("{") == 1 and long_key.endswith("}")
    assert keys.parse_lock(keys.unique_key("app.job", 7)) == ("unique", "app.job:7")
    assert keys.parse_lock("queueing:rate:{x}") is None


def test_the_window_admits_limit_starts_then_says_how_long_to_wait(rclient):
    window = script(rclient, "window")
    key = keys.control_key("rate", "w")
    answers = [window(keys=[key], args=[3, 1_000_000, f"m{i}"]) for i in range(4)]
    assert answers[:3] == [0, 0, 0]
    assert 900_000 < answers[3] <= 1_000_000
    assert 0 < rclient.pttl(key) <= 2000


def test_locks_have_owners_and_only_the_owner_releases(rclient):
    take, release = script(rclient, "lock_take"), script(rclient, "lock_release")
    key = keys.control_key("overlap", "k")
    assert take(keys=[key], args=["a", 5000]) == [1, b"a"]
    assert take(keys=[key], args=["b", 5000]) == [0, b"a"]
    assert take(keys=[key], args=["a", 9000]) == [1, b"a"], "owner renews"
    assert rclient.pttl(key) > 5000
    assert release(keys=[key], args=["b"]) == 0
    assert release(keys=[key], args=["a"]) == 1
    assert not rclient.exists(key)


def test_the_throttle_closes_after_max_exceptions_for_the_decay(rclient):
    throttle = script(rclient, "throttle")
    key = keys.control_key("throttle", "t")
    assert throttle(keys=[key], args=["check", 2, 5000]) == 0
    assert throttle(keys=[key], args=["hit", 2, 5000]) == 1
    assert throttle(keys=[key], args=["check", 2, 5000]) == 0
    assert throttle(keys=[key], args=["hit", 2, 5000]) == 2
    assert 4000 < throttle(keys=[key], args=["check", 2, 5000]) <= 5000


# -- middleware objects -------------------------------------------------------------------
def test_rate_limited_releases_until_the_window_opens(rclient):
    limiter = RateLimited(lambda customer: f"c{customer}", limit=1, per=2)
    first, second, other = running(rclient, args=[1]), running(rclient, args=[1]), \
        running(rclient, args=[2])
    plan = Plan((limiter,), None)
    assert plan.run(first, lambda: "ran").kind == "ran"
    verdict = plan.run(second, lambda: "ran")
    assert verdict.kind == RELEASED and 1.5 < verdict.delay <= 2.0
    assert verdict.label == "released by RateLimited(<lambda>)"
    assert plan.run(other, lambda: "ran").kind == "ran", "another key has its own window"


def test_without_overlapping_releases_while_the_key_is_held(rclient):
    guard = WithoutOverlapping("k", release_after=0.5, expire_after=10)
    inner = running(rclient, uuid="inner")

    def body():
        verdict = Plan((guard,), None).run(inner, lambda: "ran")
        assert verdict.kind == RELEASED and verdict.delay == 0.5
        assert "held by outer host:1:w" in verdict.reason
        return "ran"

    assert Plan((guard,), None).run(running(rclient, uuid="outer"), body).kind == "ran"
    assert not rclient.exists(keys.control_key("overlap", "k")), "released after the job"


def test_throttles_exceptions_counts_only_what_when_accepts(rclient):
    guard = ThrottlesExceptions(1, decay=5, key="api", when=lambda e: isinstance(e, KeyError))

    def fails(exc):
        def body():
            raise exc
        return body

    with pytest.raises(ValueError):
        Plan((guard,), None).run(running(rclient), fails(ValueError()))
    assert Plan((guard,), None).run(running(rclient), lambda: 1).kind == "ran"
    with pytest.raises(KeyError):
        Plan((guard,), None).run(running(rclient), fails(KeyError()))
    verdict = Plan((guard,), None).run(running(rclient), lambda: 1)
    assert verdict.kind == RELEASED and 4 < verdict.delay <= 5


def test_a_middleware_that_never_calls_next_skips_the_job(rclient):
    class Swallow:
        def handle(self, job, call_next):
            return None

    verdict = Plan((Swallow(),), None).run(running(rclient), lambda: 1)
    assert verdict.kind == SKIPPED
    assert Plan((Skip(when=True),), None).run(running(rclient), lambda: 1).label == \
        "skipped by Skip"


def test_jobs_without_middleware_have_no_plan(settings):
    assert plan_for(lookup(jobs.record.name)) is None
    assert plan_for(lookup(control_jobs.empty_middleware.name)) is None
    assert plan_for(lookup(control_jobs.rate_limited.name)).middleware
    assert plan_for(lookup(control_jobs.unique_record.name)).unique is not None


def test_bad_declarations_are_refused_at_declaration():
    with pytest.raises(InvalidOption):
        RateLimited("k", limit=0)
    with pytest.raises(InvalidOption):
        job(unique_id=lambda x: x)(lambda x: x)
    with pytest.raises(InvalidOption):
        job(unique_for=10, unique_until="later")(lambda x: x)
    with pytest.raises(InvalidOption):
        job(unique_for=10, debounce_for=1)(lambda x: x)
    with pytest.raises(ConfigurationError):
        job(middleware=[RateLimited])(lambda x: x)  # a class, not an instance
    with pytest.raises(ConfigurationError):
        job(middleware=["no.such.Middleware"])(lambda x: x)


# -- dashboard ----------------------------------------------------------------------------
@pytest.fixture
def operator(db):
    return client_with("operate_dashboard")


@pytest.mark.django_db
def test_the_locks_page_lists_owners_and_releases_one_with_an_audit_entry(operator, rclient):
    uuid = control_jobs.unique_record.using(after_commit=False).delay("k", "held")
    overlap = keys.control_key("overlap", "rebuild:42")
    lock_calls.take(rclient, overlap, "job-9 host:7:w", 60_000)
    page = operator.get("/locks/").content.decode()
    assert "tests.testapp.control_jobs.unique_record:k" in page and uuid in page
    assert "rebuild:42" in page and "host:7:w" in page
    response = operator.post("/locks/release/", {
        "connection": "redis", "lock": key_ref(overlap), "owner": "job-9 host:7:w"}, headers=HX)
    assert response.status_code == 200
    assert not rclient.exists(overlap)
    entry = AuditEntry.objects.get(action="release lock")
    assert entry.user == "ops" and entry.target == overlap and "job-9" in entry.detail
    again = operator.post("/locks/release/", {
        "connection": "redis", "lock": key_ref(overlap), "owner": "job-9 host:7:w"}, headers=HX)
    assert "no longer held" in again.content.decode()
    assert AuditEntry.objects.filter(action="release lock").count() == 1
    forged = operator.post("/locks/release/", {
        "connection": "redis", "lock": key_ref("queues:{default}"), "owner": ""}, headers=HX)
    assert "no longer held" in forged.content.decode()


@pytest.mark.django_db
def test_a_viewer_cannot_release_a_lock(rclient):
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    client = Client()
    client.force_login(user)
    overlap = keys.control_key("overlap", "k")
    lock_calls.take(rclient, overlap, "job-1", 60_000)
    response = client.post("/locks/release/", {"connection": "redis", "lock": key_ref(overlap),
                                               "owner": "job-1"})
    assert response.status_code == 403 and rclient.exists(overlap)


@pytest.mark.django_db
def test_a_jobs_page_shows_its_middleware_outcomes(operator, rclient):
    uuid = jobs.record.using(after_commit=False).delay("x")
    for _ in range(3):
        outcomes.record(rclient, uuid, "released by RateLimited('emails')")
    page = operator.get(f"/jobs/pending/{uuid}/").content.decode()
    assert "Released by RateLimited(&#x27;emails&#x27;)" in page and "3 times" in page
    outcomes.record(rclient, "gone-1", "skipped by Skip")
    missing = operator.get("/jobs/pending/gone-1/")
    assert missing.status_code == 404 and "Skipped by Skip" in missing.content.decode()


def test_a_bad_settings_middleware_is_a_system_error(settings):
    from queueing.checks import check_queue_middleware

    settings.QUEUE = {**settings.QUEUE, "middleware": ["no.such.Thing"]}
    errors = check_queue_middleware(None)
    assert [e.id for e in errors] == ["queueing.E010"] and "no.such.Thing" in errors[0].msg
    settings.QUEUE = {**settings.QUEUE, "middleware": [
        "tests.testapp.control_jobs.SeesEveryJob"]}
    assert check_queue_middleware(None) == []


@pytest.mark.django_db
def test_the_cli_lists_and_releases_a_lock_with_an_audit_entry(rclient):
    from io import StringIO

    from django.core.management import CommandError, call_command

    key = keys.control_key("overlap", "nightly")
    lock_calls.take(rclient, key, "job-5 host:1:w", 60_000)
    out = StringIO()
    call_command("queue_locks", stdout=out)
    assert key in out.getvalue() and "job-5 host:1:w" in out.getvalue()
    with pytest.raises(CommandError, match="held by job-5"):
        call_command("queue_locks", "--release", key, "--owner", "someone-else")
    call_command("queue_locks", "--release", key, stdout=StringIO())
    assert not rclient.exists(key)
    entry = AuditEntry.objects.get(action="release lock")
    assert entry.user.endswith(" (cli)") and entry.target == key
    with pytest.raises(CommandError, match="no lock held"):
        call_command("queue_locks", "--release", key)


@pytest.mark.django_db
def test_retry_all_keeps_a_unique_job_whose_id_another_holds(operator, driver, rclient):
    from queueing.models import FailedJob
    from queueing.state import failed

    first = control_jobs.unique_record.using(after_commit=False).delay("k", "failed-one")
    raw = driver.pending("default")[0]
    driver.clear("default")
    failed.record(connection="redis", queue="default", raw=raw, exception="boom",
                  job_uuid=first, job_name=control_jobs.unique_record.name)
    rclient.delete(keys.unique_key(control_jobs.unique_record.name, "k"))  # as on failure
    jobs.record.using(after_commit=False).delay("other")
    failed.record(connection="redis", queue="default", raw=driver.pending("default")[0],
                  exception="boom", job_uuid="plain-1", job_name=jobs.record.name)
    driver.clear("default")
    newer = control_jobs.unique_record.using(after_commit=False).delay("k", "newer")
    response = operator.post("/failed/retry/", {}, headers=HX)
    assert "Retried 1 failed job. (1 job kept: another job holds its unique id)" in \
        response.content.decode()
    assert list(FailedJob.objects.values_list("uuid", flat=True)) == [first]
    assert rclient.get(keys.unique_key(control_jobs.unique_record.name, "k")).decode() == newer
