"""Encrypted jobs on the dashboard (issue 37, item 4): the operate role sees the arguments
decrypted and masked; the read-only role sees that they are encrypted, on every page;
retry and edit-and-retry keep the job encrypted; nothing lands in the audit log."""
import html
import json

import pytest
from django.test import Client, override_settings

from horizon.models import AuditEntry
from queueing.entries import encryption
from queueing.models import FailedJob
from tests.helpers import client_with
from tests.redis_scan import everything
from tests.testapp.encrypted_jobs import keep_secret, refuse_secret

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "pelican-harbour-3307"


def drain() -> None:
    import io

    from queueing.connections import redis_driver
    from queueing.worker.loop import Worker
    from queueing.worker.options import WorkerOptions

    opts = WorkerOptions(queues=("default",), stop_when_empty=True, sleep=0, memory=0)
    Worker(redis_driver("redis"), opts, stdout=io.StringIO(), stderr=io.StringIO()).run()


def failed_row(label="failed") -> FailedJob:
    refuse_secret.delay(SECRET, label, api_token="tok-991")  # a masked key, too
    drain()
    return FailedJob.objects.get()


def page(client, url) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return html.unescape(response.content.decode())


def test_the_read_only_role_never_sees_the_arguments():
    row = failed_row()
    uuid = keep_secret.delay(SECRET, "pending")
    viewer = client_with("view_dashboard")
    for url in ("/jobs/pending/", f"/jobs/pending/{uuid}/", "/failed/",
                f"/jobs/failed/{row.uuid}/", f"/jobs/failed/{row.uuid}/?full=1"):
        shown = page(viewer, url)
        assert SECRET not in shown, url
        assert encryption.STANDS_IN in shown or url == "/failed/", url
    # nor does a search by the argument find the job (no oracle of its content)
    assert row.uuid not in page(viewer, f"/failed/?q={SECRET[:10]}")
    job_page = page(viewer, f"/jobs/failed/{row.uuid}/")
    assert "are encrypted; staff with the operate role see them" in job_page
    assert "gAAAA" not in job_page, "not the ciphertext either"
    assert "Edit arguments and retry" not in job_page
    edit = viewer.post(f"/failed/{row.uuid}/edit/", {"arguments": "{}"})
    assert edit.status_code == 403


def test_the_operate_role_sees_them_decrypted_and_masked():
    row = failed_row()
    operator = client_with("operate_dashboard")
    shown = page(operator, f"/jobs/failed/{row.uuid}/")
    assert SECRET in shown and "tok-991" not in shown and "********" in shown
    assert "encrypted in the store; shown here decrypted" in shown
    assert SECRET not in page(operator, "/failed/")  # lists never decrypt


def test_a_payload_no_key_opens_shows_the_cause_to_the_operate_role():
    row = failed_row()
    with override_settings(SECRET_KEY="another-key-" + "z" * 40, SECRET_KEY_FALLBACKS=[]):
        shown = page(client_with("operate_dashboard"), f"/jobs/failed/{row.uuid}/")
    assert "cannot decrypt the job's arguments" in shown and SECRET not in shown


def edited_arguments(client, uuid) -> dict:
    shown = page(client, f"/jobs/failed/{uuid}/")
    start = shown.index('name="arguments"')
    return json.loads(shown[shown.index(">", start) + 1:shown.index("</textarea>", start)])


def test_edit_and_retry_keeps_the_job_encrypted(driver, rclient):
    refuse_secret.delay(SECRET, "failed")
    drain()
    row = FailedJob.objects.get()
    operator = client_with("operate_dashboard")
    edited = edited_arguments(operator, row.uuid)
    assert edited["args"] == [SECRET, "failed"]
    edited["args"][1] = "edited"
    response = operator.post(f"/failed/{row.uuid}/edit/", {"arguments": json.dumps(edited)})
    assert response.status_code == 302
    [entry] = [json.loads(raw) for raw in driver.pending("default", 0, -1)]
    assert "args" not in entry and "encrypted" in entry
    assert encryption.opened(entry)["args"] == [SECRET, "edited"]
    assert SECRET.encode() not in everything(rclient)
    detail = AuditEntry.objects.get(action="edit and retry").detail
    assert "changed: args[1]" in detail and SECRET not in detail and "edited" not in detail


def test_an_unchanged_edit_keeps_masked_values_and_the_encryption(driver, rclient):
    row = failed_row()
    operator = client_with("operate_dashboard")
    edited = edited_arguments(operator, row.uuid)
    assert "tok-991" not in json.dumps(edited)
    response = operator.post(f"/failed/{row.uuid}/edit/", {"arguments": json.dumps(edited)})
    assert response.status_code == 302
    [entry] = [json.loads(raw) for raw in driver.pending("default", 0, -1)]
    opened = encryption.opened(entry)
    assert opened["args"] == [SECRET, "failed"] and opened["kwargs"] == {"api_token": "tok-991"}
    assert SECRET.encode() not in everything(rclient)


def test_a_plain_retry_keeps_the_job_encrypted(driver, rclient):
    row = failed_row()
    response = client_with("operate_dashboard").post(f"/failed/{row.uuid}/retry/")
    assert response.status_code == 302
    [entry] = [json.loads(raw) for raw in driver.pending("default", 0, -1)]
    assert "encrypted" in entry and SECRET.encode() not in everything(rclient)
    assert not any(SECRET in str(e.detail) + e.target for e in AuditEntry.objects.all())


def test_prometheus_and_the_audit_log_never_hold_the_arguments(settings):
    settings.HORIZON_METRICS_TOKEN = "a-scrape-token-long-enough-for-the-check"
    failed_row()
    keep_secret.delay(SECRET, "pending")
    scraped = Client().get("/metrics", headers={
        "Authorization": "Bearer a-scrape-token-long-enough-for-the-check"})
    assert scraped.status_code == 200
    assert b"refuse_secret" in scraped.content and SECRET.encode() not in scraped.content
    assert SECRET not in page(client_with("operate_dashboard"), "/audit/")


def test_the_read_only_role_sees_a_sealed_workflows_internal_job_encrypted(driver):
    """Issue 48: the steps after a group in an encrypted chain travelled as plain
    arguments of an internal job, which the read-only role read on its page."""
    import io

    from queueing import chain, group
    from queueing.connections import redis_driver
    from queueing.worker.loop import Worker
    from queueing.worker.options import WorkerOptions

    later_secret = "cormorant-ledger-1193"
    chain(keep_secret.s(SECRET, "first"), group(keep_secret.s(later_secret, "member")),
          keep_secret.s(later_secret, "after"))
    opts = WorkerOptions(queues=("default",), stop_when_empty=True, max_jobs=1, sleep=0,
                         memory=0)
    for _ in range(3):  # the first job, the internal job that sends the group, its member
        Worker(redis_driver("redis"), opts, stdout=io.StringIO(), stderr=io.StringIO()).run()
    [entry] = [json.loads(raw) for raw in driver.pending("default", 0, -1)]
    assert entry["job"] == "queueing.workflows.continue"  # the group's then: the rest
    viewer = client_with("view_dashboard")
    shown = page(viewer, f"/jobs/pending/{entry['uuid']}/")
    assert later_secret not in shown and encryption.STANDS_IN in shown
    assert later_secret not in page(viewer, "/jobs/pending/")
