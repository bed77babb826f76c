"""Issue 32: batch names and Tasks tracebacks are masked like every other surface.

A batch named with a secret-looking value is shown masked on the Batches list, the
batch page (full and refreshed), the confirmations and the audit log, and the list's
name search matches the masked name only (no oracle). A task that fails with a secret
in its exception keeps a masked traceback in its result, read back here through the
Tasks API after a real ``runworker`` ran it. Real Redis, real SQLite, real workers."""
import pytest
from django.contrib.auth.models import User
from django.test import Client

from horizon.models import AuditEntry
from queueing import batch
from queueing.tasks.framework import PRIMARY as FW
from tests.testapp import tasks
from tests.testapp.jobs import batch_member
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "hunter2pass"
NAME = f"payroll password={SECRET}"
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def root():
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def test_a_batch_name_is_shown_masked_everywhere(rclient, root):
    made = batch([batch_member.s(i) for i in range(2)]).name(NAME).dispatch()
    pages = [root.get("/batches/"), root.get("/batches/", **HX),
             root.get(f"/batches/{made.id}/"), root.get(f"/batches/{made.id}/", **HX)]
    for response in pages:
        body = response.content.decode()
        assert response.status_code == 200
        assert SECRET not in body, response.request["PATH_INFO"]
        assert "payroll password=********" in body
    cancelled = root.post(f"/batches/{made.id}/cancel/", follow=True)
    assert SECRET not in cancelled.content.decode()
    assert not AuditEntry.objects.filter(detail__contains=SECRET).exists()
    assert AuditEntry.objects.filter(detail__contains="payroll").exists()


def test_the_batch_name_search_is_no_oracle(rclient, root):
    batch(batch_member.s(1)).name(NAME).dispatch()
    assert "payroll" in root.get("/batches/?q=payroll", **HX).content.decode()
    found = root.get(f"/batches/?q={SECRET[:6]}", **HX).content.decode()
    assert "payroll" not in found, "a guess at the hidden value found the batch"


def test_a_failed_tasks_traceback_is_kept_masked(spawn_worker):
    spawn_worker()
    failed = tasks.explode.enqueue(f"https://ops:{SECRET}@db.example.com/x password={SECRET}")

    def done():
        failed.refresh()
        return failed.is_finished
    wait_until(done, message="explode to fail")
    assert failed.status == FW.TaskResultStatus.FAILED
    fresh = FW.task_backends["default"].get_result(failed.id)
    for result in (failed, fresh):
        [error] = result.errors
        assert "ValueError: https://ops:********@db.example.com/x" in error.traceback
        assert SECRET not in error.traceback
