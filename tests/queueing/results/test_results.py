"""Kept results (issue 50) with real Redis and a real worker: the round trip, a failure,
expiry, the size cap, sealing, and 1,000 waiters that cost Redis no polling."""
import asyncio
import html
import io
import re
import time

import pytest

from horizon import attempts
from queueing import JobFailed, ResultExpired, ResultTimeout, result_of
from queueing.results import store
from tests.redis_scan import everything
from tests.testapp.jobs import notes
from tests.testapp.result_jobs import (
    RESULT_ENDS,
    SEALED_SECRET,
    MultiplyLater,
    add_later,
    fails_then_takes_a_while,
    keeps_nothing,
    refuse_with,
    return_bytes_of,
    sealed_answer,
    sealed_refusal,
    short_lived,
)
from tests.workers import until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(spawn_worker):
    started = spawn_worker("--queue=default", "--sleep=0", "--tries=1")
    return started


def test_get_is_woken_by_the_jobs_end(worker):
    handle = result_of(add_later.delay(0.5, 2, 3))
    assert handle.status == "pending"
    until(lambda: handle.status == "running", 20, "the job to start", worker)
    assert handle.get(timeout=10) == {"sum": 5}
    returned = time.time()
    [ended] = notes(RESULT_ENDS)
    # The wake-up is a push (BLMOVE on the result's ready list), so get returns within a
    # scheduling turn: 3.4 ms median on a quiet machine (bench/result_cost.py's notes),
    # 78 ms once in the suite's three processes beside a make test. The bound is a
    # quarter of the shortest poll that would pass for a push; that no get polls is
    # test_a_thousand_waiting_gets_cost_redis_no_polling's point.
    assert returned - ended["at"] < 0.25, f"get returned {returned - ended['at']:.3f}s late"
    assert handle.status == "succeeded"
    assert handle.get(timeout=0) == {"sum": 5}  # kept: a later get returns at once


def test_a_job_class_keeps_its_result_too(worker):
    assert result_of(MultiplyLater.delay(6, 7)).get(timeout=20) == 42


def test_a_failures_get_raises_with_its_type_and_message(worker):
    handle = result_of(refuse_with.delay("card declined"))
    with pytest.raises(JobFailed) as raised:
        handle.get(timeout=20)
    assert raised.value.exc_type == "ValueError"
    assert raised.value.message == "card declined"
    assert str(raised.value) == "ValueError: card declined"
    assert handle.status == "failed"


def test_a_result_past_its_ttl_says_expired(worker, rclient):
    handle = result_of(short_lived.delay("soon gone"))
    assert handle.get(timeout=20) == "soon gone"
    assert 0 < rclient.ttl(store.record_key(handle.uuid)) <= 1
    until(lambda: handle.status == "expired", 5, "the result to expire", worker)
    with pytest.raises(ResultExpired, match="expired"):
        handle.get(timeout=1)


def test_an_oversized_result_fails_the_job_clearly(worker):
    handle = result_of(return_bytes_of.delay(store.MAX_RESULT_BYTES + 1))
    with pytest.raises(JobFailed) as raised:
        handle.get(timeout=30)
    assert raised.value.exc_type == "queueing.results.store.ResultTooLarge"
    assert f"over the {store.MAX_RESULT_BYTES} bytes" in raised.value.message
    from queueing.models import FailedJob
    assert "ResultTooLarge" in FailedJob.objects.get(uuid=handle.uuid).exception


def test_an_encrypted_jobs_result_is_nowhere_in_redis_in_clear(worker, rclient):
    secret = "wombat-passport-5521"
    value = result_of(sealed_answer.delay(secret)).get(timeout=20)
    assert value == f"{secret}:{SEALED_SECRET}"
    held = everything(rclient)
    assert b"queueing:result:" in held  # the scan did see the result
    assert secret.encode() not in held and SEALED_SECRET.encode() not in held


def test_an_encrypted_jobs_failure_is_kept_sealed(worker, rclient):
    secret = "wombat-passport-6632"
    refused = result_of(sealed_refusal.using(encrypted=True).delay(secret))
    with pytest.raises(JobFailed, match=f"declined {secret}"):
        refused.get(timeout=20)
    kept = b" ".join(everything_of(rclient, key) for key in
                     (store.record_key(refused.uuid), store.ready_key(refused.uuid)))
    assert b"sealed:" in kept and secret.encode() not in kept
    # Nor anywhere else in Redis: Horizon's per-attempt record keeps the exception's type
    # and no message for an encrypted job (horizon/attempts.py).
    until(lambda: attempts.entries(refused.uuid), 10, "the attempt's record", worker)
    assert secret.encode() not in everything(rclient)
    [entry] = attempts.entries(refused.uuid)
    assert "ValueError" in entry["summary"] and "encrypted" in entry["summary"]


def everything_of(client, key):
    kind = client.type(key)
    if kind == b"hash":
        return b" ".join(b"%s=%s" % kv for kv in client.hgetall(key).items())
    if kind == b"list":
        return b" ".join(client.lrange(key, 0, -1))
    if kind == b"string":
        return client.get(key)
    if kind == b"zset":
        return b" ".join(client.zrange(key, 0, -1))
    return b""


def test_get_times_out_and_forget_drops_the_result(worker):
    handle = result_of(add_later.delay(1.0, 1, 1))
    with pytest.raises(ResultTimeout):
        handle.get(timeout=0.2)
    assert handle.get(timeout=20) == {"sum": 2}
    handle.forget()
    assert handle.status == "pending"


def test_a_job_that_keeps_no_result_writes_none(worker, rclient):
    uuid = keeps_nothing.delay("x")
    until(lambda: not rclient.llen("queues:{default}") and not rclient.zcard(
        "queues:{default}:reserved"), 20, "the job to run", worker)
    time.sleep(0.2)
    assert result_of(uuid).status == "pending"
    assert not list(rclient.scan_iter(match="queueing:result:*"))


def _calls(client, *commands):
    stats = client.info("commandstats")
    return {c: stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in commands}


def test_a_thousand_waiting_gets_cost_redis_no_polling(worker, rclient):
    handles = [result_of(add_later.delay(4, i, i)) for i in range(4)]
    watched = ("subscribe", "unsubscribe", "hgetall")  # the worker sends EXISTS of its own

    async def wait_all():
        waits = [asyncio.ensure_future(handles[i % 4].aget(timeout=30)) for i in range(1000)]
        while _calls(rclient, "hgetall")["hgetall"] < before["hgetall"] + 1000:
            await asyncio.sleep(0.05)  # until every waiter has read once and sleeps
        assert not any(wait.done() for wait in waits)
        quiet_from = _calls(rclient, *watched)
        await asyncio.sleep(1.0)
        quiet_to = _calls(rclient, *watched)
        return quiet_from, quiet_to, await asyncio.gather(*waits)

    before = _calls(rclient, *watched)
    quiet_from, quiet_to, values = asyncio.run(wait_all())
    after = _calls(rclient, *watched)
    assert values == [{"sum": 2 * (i % 4)} for i in range(1000)]
    assert quiet_to == quiet_from, f"waiters sent commands while nothing happened: {quiet_from} -> {quiet_to}"
    spent = {c: after[c] - before[c] for c in watched}
    # one SUBSCRIBE per result waited on, then each waiter reads once before and once
    # after its wake-up; nothing is sent in between
    assert spent["subscribe"] <= 4, spent
    assert spent["hgetall"] <= 2000 + 10, spent


def test_an_async_job_on_the_event_loop_keeps_its_result(spawn_worker):
    from tests.testapp.result_jobs import add_async
    spawn_worker("--queue=default", "--sleep=0", "--concurrency=4")
    handle = result_of(add_async.delay(20, 22))
    assert handle.get(timeout=20) == 42
    assert handle.read().started_at is not None  # it was marked running first


def test_the_job_page_shows_the_result_masked_and_a_sealed_one_sealed(worker):
    from django.contrib.auth.models import User
    from django.test import Client

    from tests.testapp.result_jobs import return_a_secret
    plain = result_of(return_a_secret.delay(3))
    assert plain.get(timeout=20) == {"api_key": "sk_live_lemur5512", "total": 3}
    sealed = result_of(sealed_answer.delay("wombat-passport-7"))
    sealed.get(timeout=20)
    failed = result_of(refuse_with.delay("no luck today"))
    with pytest.raises(JobFailed):
        failed.get(timeout=20)
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))

    def page(kind, handle):
        return html.unescape(until(lambda: (lambda r: r.status_code == 200 and r.content.decode())(
            client.get(f"/jobs/{kind}/{handle.id}/")), 10, f"the {kind} page", worker))

    shown = page("completed", plain)
    assert "kept-result" in shown and "succeeded" in shown and '"total": 3' in shown
    assert "sk_live_lemur5512" not in shown
    shown = page("completed", sealed)  # the operate role sees its arguments, not its result
    [section] = re.findall(r'<section class="panel kept-result">.*?</section>', shown, re.S)
    assert "stays sealed" in section and "wombat-passport-7" not in section
    shown = page("failed", failed)
    assert "kept-result" in shown and "no luck today" in shown


def test_a_failed_job_retried_by_hand_is_waited_for_again_without_polling(worker, rclient):
    """A rerun's running record drops the outcome and the wake-up token the first run
    left (result_running.lua): `get` blocks until the new outcome. It used to find the
    old token at once, read "running", and go round again, a BLMOVE per turn, until the
    rerun ended."""
    from django.core.management import call_command

    handle = result_of(fails_then_takes_a_while.delay("rerun", 2.0))
    with pytest.raises(JobFailed, match="first run fails"):
        handle.get(timeout=20)
    call_command("queue_retry", handle.uuid, stdout=io.StringIO())
    until(lambda: handle.status == "running", 20, "the rerun to start", worker)
    before = _calls(rclient, "blmove")["blmove"]
    assert handle.get(timeout=20) == "second run"
    # a 2 s rerun: one blocking BLMOVE, woken by the outcome (a few more only if a
    # slice of the socket timeout, 9 s, ran out on a loaded machine); a spin would be
    # thousands
    assert _calls(rclient, "blmove")["blmove"] - before <= 3
