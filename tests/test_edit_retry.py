"""Edit and retry: a failed job's arguments edited as validated JSON, then retried;
masked values keep their originals; operate permission; audited."""
import html
import json

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from horizon.models import AuditEntry
from queueing.models import FailedJob
from tests.test_dashboard_pages import fail

pytestmark = pytest.mark.django_db


def client_with(*codenames) -> Client:
    user = User.objects.create_user("ops", password="pw", is_staff=True)
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = Client()
    client.force_login(user)
    return client


def test_edit_and_retry_keeps_masked_values_and_is_audited(driver):
    row = fail(name="app.jobs.Charge", args=[42, "https://user:s3cret@pay.example/x"],
               kwargs={"amount": 10, "api_token": "tok-123"})
    client = client_with("operate_dashboard")
    page = client.get(f"/jobs/failed/{row.uuid}/").content.decode()
    assert "Edit arguments and retry" in page
    assert "tok-123" not in page and "s3cret" not in page
    start = page.index('name="arguments"')
    shown = page[page.index(">", start) + 1:page.index("</textarea>", start)]
    edited = json.loads(html.unescape(shown))
    assert edited["kwargs"]["api_token"] == "********"
    edited["kwargs"]["amount"] = 12  # the fix
    response = client.post(f"/failed/{row.uuid}/edit/", {"arguments": json.dumps(edited)})
    assert response.status_code == 302
    [entry] = driver.pending("default", 0, -1)
    job = json.loads(entry)
    assert job["uuid"] == row.uuid and job["attempts"] == 0
    assert job["kwargs"] == {"amount": 12, "api_token": "tok-123"}, "masked value kept"
    assert job["args"] == [42, "https://user:s3cret@pay.example/x"]
    assert not FailedJob.objects.filter(uuid=row.uuid).exists()
    audit = AuditEntry.objects.get(action="edit and retry")
    assert audit.target == row.uuid and "changed: kwargs" in audit.detail
    assert "12" not in audit.detail and "tok-123" not in audit.detail


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    ('{"args": {}, "kwargs": {}}', '"args" must be a list'),
    ('{"args": [], "kwargs": [], "job": "x"}', "give a JSON object"),
    ("[1, 2]", "give a JSON object"),
])
def test_invalid_edits_are_refused_and_the_job_stays_failed(driver, text, message):
    row = fail(name="app.jobs.Charge")
    client = client_with("operate_dashboard")
    response = client.post(f"/failed/{row.uuid}/edit/", {"arguments": text}, follow=True)
    assert message in html.unescape(response.content.decode())
    assert FailedJob.objects.filter(uuid=row.uuid).exists()
    assert driver.sizes("default").pending == 0


def test_read_only_users_cannot_edit(driver):
    row = fail(name="app.jobs.Charge")
    client = client_with("view_dashboard")
    assert "Edit arguments and retry" not in client.get(f"/jobs/failed/{row.uuid}/").content.decode()
    response = client.post(f"/failed/{row.uuid}/edit/", {"arguments": '{"args": []}'})
    assert response.status_code == 403
    assert FailedJob.objects.filter(uuid=row.uuid).exists()


def test_arguments_too_large_to_edit_are_not_offered(driver):
    row = fail(name="app.jobs.Import", args=["x" * 40_000])
    page = client_with("operate_dashboard").get(f"/jobs/failed/{row.uuid}/").content.decode()
    assert "too large to edit on this page" in page and 'name="arguments"' not in page
    assert "<h2>Arguments" in page and len(page) < 60_000
