"""Issue 32: the Locks page and queue_locks read the index of held locks the lock scripts
keep, never SCAN (with 1M keys each refresh cost Redis ~1 s); lock keys are shown
masked and released by a digest; keys with braces no longer collide. Real Redis."""
import html
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from queueing.middleware import keys, lock_calls
from queueing.state import locks
from tests.helpers import client_with
from tests.testapp import control_jobs

pytestmark = pytest.mark.django_db
KEYS = 1_000_000


@pytest.fixture
def operator() -> Client:
    return client_with("operate_dashboard")


def fill(rclient, count: int) -> None:
    """`count` unrelated keys, written server-side (one script per 100k)."""
    fill_script = rclient.register_script(
        "for i = ARGV[1], ARGV[2] do redis.call('SET', 'filler:' .. i, '1') end")
    for start in range(0, count, 100_000):
        fill_script(args=[start, start + 99_999])


def scans(rclient) -> int:
    return int(rclient.info("commandstats").get("cmdstat_scan", {}).get("calls", 0))


def test_the_locks_page_at_a_million_keys_issues_no_scan(operator, rclient):
    fill(rclient, KEYS)
    uuid = control_jobs.unique_record.using(after_commit=False).delay("k", "held")
    overlap = keys.control_key("overlap", "rebuild:42")
    lock_calls.take(rclient, overlap, "job-9 host:7:w", 60_000)
    rclient.config_resetstat()
    started = time.monotonic()
    for _ in range(3):
        page = operator.get("/locks/").content.decode()
    elapsed = (time.monotonic() - started) / 3
    assert "tests.testapp.control_jobs.unique_record:k" in page and uuid in page
    assert "rebuild:42" in page
    assert scans(rclient) == 0
    assert elapsed < 0.5, f"{elapsed:.2f} s per Locks refresh"
    out = StringIO()
    call_command("queue_locks", stdout=out)
    assert "rebuild:42" in out.getvalue() and scans(rclient) == 0


def test_released_and_expired_locks_leave_the_index(rclient):
    a, b = keys.control_key("overlap", "a"), keys.control_key("overlap", "b")
    lock_calls.take(rclient, a, "job-a", 60_000)
    lock_calls.take(rclient, b, "job-b", 50)
    assert {lock.name for lock in locks.held(rclient, "redis")} == {"a", "b"}
    assert lock_calls.release(rclient, a, "job-a")
    time.sleep(0.1)
    assert locks.held(rclient, "redis") == []
    assert rclient.zcard(lock_calls.lock_index()) == 0


def test_a_lock_key_holding_a_secret_is_shown_masked_and_released_by_its_digest(
        operator, rclient):
    key = keys.control_key("overlap", "sync password=hunter2")
    lock_calls.take(rclient, key, "job-1 h:1:w", 60_000)
    page = html.unescape(operator.get("/locks/").content.decode())
    assert "hunter2" not in page and "password=********" in page
    out = StringIO()
    call_command("queue_locks", stdout=out)
    assert "hunter2" not in out.getvalue()
    [lock] = locks.held(rclient, "redis")
    response = operator.post("/locks/release/", {"connection": "redis", "lock": lock.ref,
                                                 "owner": "job-1 h:1:w"})
    assert response.status_code == 302 and not rclient.exists(key)
    from horizon.models import AuditEntry
    entry = AuditEntry.objects.get(action="release lock")
    assert "hunter2" not in entry.target + entry.detail


def test_lock_keys_with_braces_do_not_collide(rclient):
    assert keys.unique_key("job", "x{1}") != keys.unique_key("job", "x(1)")
    assert keys.control_key("overlap", "x{1}") != keys.control_key("overlap", "x%7B1%7D")
    first = control_jobs.unique_record.using(after_commit=False).delay("x{1}", "braces")
    second = control_jobs.unique_record.using(after_commit=False).delay("x(1)", "parens")
    assert first is not None and second is not None, "x{1} no longer blocks x(1)"
    names = {lock.name for lock in locks.held(rclient, "redis")}
    assert names == {"tests.testapp.control_jobs.unique_record:x{1}",
                     "tests.testapp.control_jobs.unique_record:x(1)"}
