"""Encrypted jobs (issue 37, item 4), driven in-process on a real Redis: what is sealed,
with which keys, and what a payload no key opens becomes. The process-level tests
(spawned workers, a SECRET_KEY rotation) are in tests/queueing/worker/test_encrypted_jobs.py."""
import io
import json
import re
from pathlib import Path

import pytest
from django.test import override_settings

from queueing import batch, chain, chord, group, job
from queueing.connections import redis_driver
from queueing.entries import encryption
from queueing.entries import payload as payload_lib
from queueing.errors import InvalidOption
from queueing.models import FailedJob
from queueing.settings.config import settings_errors
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.redis_scan import everything, kinds
from tests.testapp import jobs
from tests.testapp.encrypted_jobs import (
    collect_plain,
    collect_secret,
    digest,
    keep_secret,
    plain_secret,
    refuse_secret,
    result_of,
    sealed_result,
)

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "zebra-passport-7731"  # the distinctive argument looked for everywhere
OTHER = "okapi-ledger-4410"


def drain(queues=("default",)) -> str:
    out = io.StringIO()
    opts = WorkerOptions(queues=queues, stop_when_empty=True, sleep=0, memory=0)
    Worker(redis_driver("redis"), opts, stdout=out, stderr=io.StringIO()).run()
    return out.getvalue()


def pending(driver, queue="default") -> list[dict]:
    return [json.loads(raw) for raw in driver.pending(queue, 0, -1)]


def with_encrypting_redis(settings):
    queue = {**settings.QUEUE, "connections": {**settings.QUEUE["connections"]}}
    queue["connections"]["redis"] = {**queue["connections"]["redis"], "encrypt": True}
    settings.QUEUE = queue


def test_an_encrypted_job_runs_with_its_arguments_which_redis_never_holds(driver, rclient):
    keep_secret.delay(SECRET, "a")
    [entry] = pending(driver)
    assert "args" not in entry and "kwargs" not in entry and entry["encrypted"]
    assert entry["job"] == "tests.testapp.encrypted_jobs.keep_secret"  # still routable
    assert SECRET.encode() not in everything(rclient)
    out = drain()
    assert [n["digest"] for n in jobs.notes()] == [digest(SECRET)]
    assert "DONE" in out and SECRET not in out
    assert {"list", "hash", "zset"} <= kinds(rclient)  # metrics, records, indexes read too
    assert SECRET.encode() not in everything(rclient)


def test_a_failed_encrypted_job_keeps_its_ciphertext_in_the_store(driver, rclient):
    refuse_secret.delay(SECRET, "b")
    out = drain()
    row = FailedJob.objects.get()
    assert SECRET not in row.payload and SECRET not in row.exception and SECRET not in out
    assert "refused b" in row.exception
    assert encryption.opened(json.loads(row.payload))["args"] == [SECRET, "b"]
    assert SECRET.encode() not in everything(rclient)


def test_a_plain_job_is_as_before(driver):
    plain_secret.delay(SECRET, "c")
    [entry] = pending(driver)
    assert entry["args"] == [SECRET, "c"] and "encrypted" not in entry


def test_a_connection_that_encrypts_seals_every_job(driver, rclient, settings):
    with_encrypting_redis(settings)
    plain_secret.delay(SECRET, "d")
    assert "encrypted" in pending(driver)[0]
    assert SECRET.encode() not in everything(rclient)
    drain()
    assert [n["digest"] for n in jobs.notes()] == [digest(SECRET)]


def test_using_turns_encryption_on_for_one_dispatch(driver):
    plain_secret.using(encrypted=True).delay(SECRET, "e")
    assert "encrypted" in pending(driver)[0]


def test_a_chain_carries_its_later_links_sealed_and_dispatches_them_sealed(driver, rclient):
    chain(keep_secret.s(SECRET, "first"), plain_secret.s(OTHER, "second"))
    [entry] = pending(driver)
    assert "chain" not in entry and OTHER.encode() not in everything(rclient)
    drain()
    assert [n["label"] for n in jobs.notes()] == ["first", "second"]
    assert [n["digest"] for n in jobs.notes()] == [digest(SECRET), digest(OTHER)]
    assert SECRET.encode() not in everything(rclient)
    assert OTHER.encode() not in everything(rclient)


def test_a_plain_first_link_is_sealed_when_a_later_link_is_encrypted(driver, rclient):
    """The later link's arguments travel in the first payload: it is sealed too."""
    chain(plain_secret.s("not secret", "first"), keep_secret.s(SECRET, "second"))
    assert "encrypted" in pending(driver)[0]
    assert SECRET.encode() not in everything(rclient)
    drain()
    assert [n["label"] for n in jobs.notes()] == ["first", "second"]


def test_batch_members_and_callbacks_are_sealed_in_the_batch_record(driver, rclient):
    batch([keep_secret.s(SECRET, "member")]).then(keep_secret.s(OTHER, "then")).dispatch()
    blob = everything(rclient)
    assert SECRET.encode() not in blob and OTHER.encode() not in blob
    drain()
    assert sorted(n["label"] for n in jobs.notes()) == ["member", "then"]
    assert OTHER.encode() not in everything(rclient)


def test_rotation_the_django_way_keeps_queued_jobs_readable(driver, settings):
    old = settings.SECRET_KEY
    keep_secret.delay(SECRET, "before")
    with override_settings(SECRET_KEY="a-new-key-" + "x" * 50, SECRET_KEY_FALLBACKS=[old]):
        drain()
    assert [n["digest"] for n in jobs.notes()] == [digest(SECRET)]


def test_a_payload_no_key_opens_fails_with_the_cause_and_a_retry_runs_it(driver, settings):
    from queueing.state import failed

    old = settings.SECRET_KEY
    keep_secret.delay(SECRET, "stranded")
    with override_settings(SECRET_KEY="a-new-key-" + "x" * 50, SECRET_KEY_FALLBACKS=[]):
        out = drain()
    row = FailedJob.objects.get()
    assert "cannot decrypt the job's arguments" in row.exception
    assert "SECRET_KEY_FALLBACKS" in row.exception and "CannotDecrypt" in row.exception
    assert "FAILED" in out and "cannot decrypt" in out and jobs.notes() == []
    assert "encrypted" in json.loads(row.payload)  # the ciphertext, kept for a retry
    with override_settings(SECRET_KEY="a-new-key-" + "x" * 50, SECRET_KEY_FALLBACKS=[old]):
        failed.retry(row)
        assert "encrypted" in pending(driver)[0]
        drain()
    assert [n["digest"] for n in jobs.notes()] == [digest(SECRET)]
    assert not FailedJob.objects.exists()


def test_an_altered_token_is_refused_not_run(driver):
    keep_secret.delay(SECRET, "x")
    [entry] = pending(driver)
    token = entry["encrypted"]
    entry["encrypted"] = token[:40] + ("A" if token[40] != "A" else "B") + token[41:]
    with pytest.raises(encryption.CannotDecrypt, match="altered"):
        encryption.opened(entry)
    entry["encrypted"] = 42
    with pytest.raises(encryption.CannotDecrypt, match="not a token"):
        encryption.opened(entry)


def test_the_decrypted_arguments_are_checked_as_any_payload(driver):
    keep_secret.delay(SECRET, "y")
    data = pending(driver)[0]
    forged = encryption.seal({**data, "args": "not a list"})
    job = payload_lib.decode(payload_lib.encode(forged))
    with pytest.raises(encryption.CannotDecrypt, match="malformed: field 'args'"):
        encryption.opened_job(job)


def test_the_key_is_derived_not_the_secret_itself(settings):
    key = encryption._derived(settings.SECRET_KEY)
    assert settings.SECRET_KEY.encode() not in key and len(key) == 44  # base64 of 32 bytes


def test_bad_values_are_refused_at_declaration_and_in_settings(settings):
    with pytest.raises(InvalidOption, match="encrypted must be True or False"):
        job(encrypted="yes")(lambda: None)
    queue = {**settings.QUEUE, "connections": {
        **settings.QUEUE["connections"],
        "redis": {**settings.QUEUE["connections"]["redis"], "encrypt": "yes"}}}
    [error] = [e for e in settings_errors(queue) if "encrypt" in str(e)]
    assert "['encrypt'] must be True or False, got 'yes'" in str(error)


def test_a_failover_connection_encrypts_when_a_target_does(settings):
    from queueing.settings.config import parse_settings

    queue = {"connections": {
        "a": {"driver": "redis", "url": "redis://localhost/0", "encrypt": True},
        "b": {"driver": "redis", "url": "redis://localhost/1"},
        "both": {"driver": "failover", "connections": ["b", "a"]}}}
    assert parse_settings(queue).connection("both").encrypt is True


def test_the_tasks_backend_refuses_an_encrypting_connection(settings):
    from django.core.checks import run_checks

    with_encrypting_redis(settings)
    ids = {message.id for message in run_checks(tags=None)}
    assert "queueing.E106" in ids


def test_the_sync_driver_runs_an_encrypted_job_inline(settings):
    keep_secret.using(connection="sync").delay(SECRET, "inline")
    assert [n["digest"] for n in jobs.notes()] == [digest(SECRET)]


def test_a_token_moved_into_another_jobs_payload_is_refused(driver):
    keep_secret.delay(SECRET, "x")
    [entry] = pending(driver)
    entry["job"] = "tests.testapp.encrypted_jobs.refuse_secret"
    with pytest.raises(encryption.CannotDecrypt, match="sealed for another job"):
        encryption.opened(entry)


def test_the_token_says_which_key_sealed_it_and_only_a_hash_of_it(driver, settings):
    keep_secret.delay(SECRET, "x")
    hint, _, token = pending(driver)[0]["encrypted"].partition(".")
    assert len(hint) == 8 and token.startswith("gAAAA")  # a Fernet token, version 0x80
    with override_settings(SECRET_KEY="a-new-key-" + "x" * 50,
                           SECRET_KEY_FALLBACKS=["one", settings.SECRET_KEY]):
        assert encryption.opened(pending(driver)[0])["args"] == [SECRET, "x"]


def test_the_docs_example_runs_sealed(driver, rclient):
    doc = Path(__file__).resolve().parents[2] / "docs" / "encrypted-jobs.md"
    [code] = re.findall(r"<!-- doc-dispatch -->\s*```python\n(.*?)```", doc.read_text(), re.S)
    secrets = {"card_number": "4111-2222-3333-4444", "email": "ada@lovelace.example",
               "reset_link": "https://example.com/reset/tok-5521"}
    exec(compile(code, str(doc), "exec"), {**vars(jobs), **secrets})
    blob = everything(rclient)
    assert len(pending(driver)) == 2 and not any(s.encode() in blob for s in secrets.values())
    out = drain()
    assert out.count("DONE") == 2 and not FailedJob.objects.exists(), out
    assert not any(s in out for s in secrets.values())


# -- workflows (issue 48): the internal jobs that carry a sealed workflow's continuation ----
THIRD = "gnu-warrant-5208"


def drain_step_by_step(rclient, *secrets: str) -> None:
    """Run the queue one job at a time, looking through all of Redis after each: every
    state the workflow passes through (batch record, pending internal jobs, completed
    records) is checked, not only the end."""
    for _ in range(40):
        blob = everything(rclient)
        for secret in secrets:
            at = blob.find(secret.encode())
            assert at < 0, f"{secret} in clear in Redis: {blob[max(0, at - 300):at + 100]!r}"
        opts = WorkerOptions(queues=("default",), stop_when_empty=True, max_jobs=1, sleep=0,
                             memory=0)
        out = io.StringIO()
        Worker(redis_driver("redis"), opts, stdout=out, stderr=io.StringIO()).run()
        if "DONE" not in out.getvalue() and "FAILED" not in out.getvalue():
            return
    raise AssertionError("the workflow did not end in 40 jobs")


def test_an_encrypted_chords_callback_stays_sealed_in_the_batch_record(driver, rclient):
    chord(group(sealed_result.s(SECRET, "member")),
          collect_secret.s(OTHER, "callback")).dispatch()
    drain_step_by_step(rclient, SECRET, OTHER)
    [called] = [n for n in jobs.notes() if n["label"] == "callback"]
    assert called["digest"] == digest(OTHER) and called["results"] == digest(repr([result_of(SECRET)]))
    assert not FailedJob.objects.exists()


def test_the_steps_after_a_group_in_an_encrypted_chain_stay_sealed(driver, rclient):
    chain(keep_secret.s(SECRET, "first"), group(keep_secret.s(OTHER, "member")),
          keep_secret.s(THIRD, "after"))
    drain_step_by_step(rclient, SECRET, OTHER, THIRD)
    assert [n["label"] for n in jobs.notes()] == ["first", "member", "after"]
    assert [n["digest"] for n in jobs.notes()] == [digest(SECRET), digest(OTHER),
                                                  digest(THIRD)]
    assert not FailedJob.objects.exists()


def test_a_workflow_with_one_encrypted_job_is_sealed_whole(driver, rclient):
    """A plain callback of sealed members carries their results, and a plain step after
    a sealed one travels in the same internal job: each is sealed too."""
    chord(group(sealed_result.s(SECRET, "member"), plain_secret.s(OTHER, "plain member")),
          collect_plain.s("callback")).dispatch()
    result = result_of(SECRET)
    drain_step_by_step(rclient, SECRET, OTHER, result)
    [called] = [n for n in jobs.notes() if n["label"] == "callback"]
    assert called["results"] == digest(repr([result, None]))
