"""Issue 31: actions taken from the command line are in the audit log beside the
dashboard's, with the actor "<os user> (cli)", and the audit page lists them. Real
Redis, SQLite; each command is run with call_command (the worker for queue_cancel is a
real runworker process)."""
import getpass
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from horizon.models import AuditEntry
from queueing import batch
from queueing.models import FailedJob
from tests.helpers import fail, publish, push, text
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
ACTOR = f"{getpass.getuser()} (cli)"


def run(*args) -> None:
    call_command(*args, stdout=StringIO(), stderr=StringIO())


def entries() -> list[tuple[str, str, str, str]]:
    return [(e.user, e.action, e.target, e.detail) for e in AuditEntry.objects.order_by("id")]


def row(user: str, action: str) -> str:
    """How the audit page shows an entry's first two cells."""
    return f'<td data-label="Who">{user}</td> <td data-label="Action">{action}</td>'


def audit_page() -> str:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    response = client.get("/audit/")
    assert response.status_code == 200
    return text(response)


def test_horizon_control_commands_are_audited_as_the_os_user(rclient):
    publish(rclient)  # a running master "web-1" with supervisor-1
    run("horizon_pause")
    run("horizon_continue", "--master", "web-1")
    run("horizon_pause_supervisor", "supervisor-1")
    run("horizon_continue_supervisor", "supervisor-1")
    run("horizon_terminate")
    assert entries() == [
        (ACTOR, "pause all", "web-1", ""),
        (ACTOR, "continue master", "web-1", ""),
        (ACTOR, "pause supervisor", "supervisor-1", "web-1"),
        (ACTOR, "continue supervisor", "supervisor-1", "web-1"),
        (ACTOR, "terminate all", "web-1", ""),
    ]
    page = audit_page()
    assert row(ACTOR, "terminate all") in page and row(ACTOR, "pause supervisor") in page
    assert "or the command line" in page


def test_queue_commands_on_failed_jobs_are_audited():
    retried, forgotten = fail(), fail()
    fail(), fail()
    run("queue_retry", retried.uuid)
    run("queue_forget", forgotten.uuid)
    run("queue_flush", "--force")
    assert FailedJob.objects.count() == 0
    assert entries() == [
        (ACTOR, "retry", retried.uuid, f"{retried.job} on redis:default"),
        (ACTOR, "delete failed", forgotten.uuid, ""),
        (ACTOR, "flush failed", "2 failed jobs", "every failed job"),
    ]
    assert row(ACTOR, "flush failed") in audit_page()


def test_queue_commands_on_queues_are_audited(driver):
    push(driver), push(driver)
    run("queue_pause", "default")
    run("queue_continue", "default")
    run("queue_clear", "redis", "--queue", "default", "--force")
    run("queue_restart")
    assert entries() == [
        (ACTOR, "pause queue", "redis:default", ""),
        (ACTOR, "continue queue", "redis:default", ""),
        (ACTOR, "clear queue", "redis:default", "2 pending jobs deleted"),
        (ACTOR, "restart workers", "all connections", ""),
    ]


def test_a_refused_or_declined_command_records_nothing(monkeypatch):
    fail()
    with pytest.raises(CommandError):
        run("queue_forget", "no-such-uuid")
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    run("queue_flush")  # the operator answered no: nothing deleted
    assert FailedJob.objects.count() == 1
    assert entries() == []


def test_queue_cancel_of_a_running_job_is_audited(spawn_worker, rclient):
    spawn_worker()
    uuid = jobs.gated_sync.delay("victim")
    wait_until(lambda: any(m["label"] == "victim" for m in jobs.marks("start")),
               timeout=30, message="the job running")
    run("queue_cancel", uuid, "--reason", "stuck")
    assert entries() == [(ACTOR, "cancel", uuid, "running on redis:default: stuck")]
    rclient.set(jobs.GATE, 1)  # the worker is stopped by spawn_worker's teardown


def test_queue_retry_batch_is_audited():
    found = batch(jobs.record.s("member")).dispatch()
    run("queue_retry_batch", found.id)
    assert entries() == [(ACTOR, "retry batch", found.id, "0 failed job(s)")]
    with pytest.raises(CommandError):  # an unknown batch: refused, not audited
        run("queue_retry_batch", "no-such-batch")
    assert len(entries()) == 1
