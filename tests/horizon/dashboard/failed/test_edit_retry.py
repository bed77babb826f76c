"""Edit and retry: a failed job's arguments edited as validated JSON, then retried;
masked values keep their originals; operate permission; audited."""
import html
import json

import pytest

from horizon.models import AuditEntry
from queueing.models import FailedJob
from tests.helpers import client_with, fail

pytestmark = pytest.mark.django_db




def shown_arguments(client, uuid) -> dict:
    page = client.get(f"/jobs/failed/{uuid}/").content.decode()
    start = page.index('name="arguments"')
    return json.loads(html.unescape(page[page.index(">", start) + 1:
                                         page.index("</textarea>", start)]))


def failed_charge(name: str, args: list):
    """A failed charge with a token among its arguments, an operator, and its job page."""
    row = fail(name=name, args=args, kwargs={"amount": 10, "api_token": "tok-123"})
    client = client_with("operate_dashboard")
    return row, client, client.get(f"/jobs/failed/{row.uuid}/").content.decode()


def test_an_unchanged_edit_keeps_masked_values(driver):
    row, client, page = failed_charge("app.jobs.Charge",
                                      [42, "https://user:s3cret@pay.example/x"])
    assert "Edit arguments and retry" in page
    assert "tok-123" not in page and "s3cret" not in page
    edited = shown_arguments(client, row.uuid)
    assert edited["kwargs"]["api_token"] == "********"
    response = client.post(f"/failed/{row.uuid}/edit/", {"arguments": json.dumps(edited)})
    assert response.status_code == 302
    [entry] = driver.pending("default", 0, -1)
    job = json.loads(entry)
    assert job["uuid"] == row.uuid and job["attempts"] == 0
    assert job["kwargs"] == {"amount": 10, "api_token": "tok-123"}
    assert job["args"] == [42, "https://user:s3cret@pay.example/x"]
    assert not FailedJob.objects.filter(uuid=row.uuid).exists()
    assert "changed: nothing" in AuditEntry.objects.get(action="edit and retry").detail


def test_a_masked_token_is_not_sent_to_a_changed_webhook_url(driver):
    """Issue 32: only the URL changed, and the real token went to it."""
    row = fail(name="tests.testapp.jobs.send_webhook",
               kwargs={"url": "https://hooks.example/a", "api_token": "tok-123"})
    client = client_with("operate_dashboard")
    edited = shown_arguments(client, row.uuid)
    edited["kwargs"]["url"] = "https://attacker.example/collect"
    response = client.post(f"/failed/{row.uuid}/edit/", {"arguments": json.dumps(edited)})
    page = html.unescape(response.content.decode())
    assert response.status_code == 400
    assert "re-enter the masked values (kwargs.api_token)" in page
    assert "attacker.example/collect" in page, "the operator's text stays on the form"
    assert "tok-123" not in page
    assert driver.sizes("default").pending == 0
    assert FailedJob.objects.filter(uuid=row.uuid).exists()
    assert not AuditEntry.objects.filter(action="edit and retry").exists()

    edited["kwargs"]["api_token"] = "tok-for-attacker"  # typed again: the operator's own
    response = client.post(f"/failed/{row.uuid}/edit/", {"arguments": json.dumps(edited)})
    assert response.status_code == 302
    [entry] = driver.pending("default", 0, -1)
    assert json.loads(entry)["kwargs"] == {"url": "https://attacker.example/collect",
                                          "api_token": "tok-for-attacker"}
    detail = AuditEntry.objects.get(action="edit and retry").detail
    assert "changed: kwargs.url, kwargs.api_token" in detail
    assert "attacker" not in detail and "tok-" not in detail


def test_a_job_declaring_editable_arguments_keeps_masked_values_for_those_only(driver):
    row, client, page = failed_charge("tests.testapp.jobs.charge",
                                      [7, "https://shop.example/done"])
    assert "when you change only amount" in page
    edited = shown_arguments(client, row.uuid)
    moved = json.loads(json.dumps(edited))
    moved["args"][1] = "https://attacker.example/"
    response = client.post(f"/failed/{row.uuid}/edit/", {"arguments": json.dumps(moved)})
    assert response.status_code == 400
    assert "allows editing amount only; not callback_url" in html.unescape(
        response.content.decode())
    assert driver.sizes("default").pending == 0

    edited["kwargs"]["amount"] = 12
    response = client.post(f"/failed/{row.uuid}/edit/", {"arguments": json.dumps(edited)})
    assert response.status_code == 302
    [entry] = driver.pending("default", 0, -1)
    job = json.loads(entry)
    assert job["kwargs"] == {"amount": 12, "api_token": "tok-123"}, "masked value kept"
    assert job["args"] == [7, "https://shop.example/done"]
    detail = AuditEntry.objects.get(action="edit and retry").detail
    assert "changed: kwargs.amount" in detail and "12" not in detail


@pytest.mark.parametrize("text, message", [
    (json.dumps({"args": [], "kwargs": {"x": 10 ** 4200}}), "more than 4,000 digits"),
    ('{"args": [' + "[" * 300 + "]" * 300 + '], "kwargs": {}}', "nested more than 100"),
    # Python 3.11's json parser stops at its recursion limit; 3.13's reads 5,000 levels,
    # and the dispatch check refuses them: a clear 400 either way, never a 500.
    ('{"args": [' + "[" * 5000 + "]" * 5000 + '], "kwargs": {}}',
     ("nested too deeply", "nested more than 100")),
])
def test_an_edit_goes_through_dispatch_checks(driver, text, message):
    row = fail(name="tests.testapp.jobs.noop")
    client = client_with("operate_dashboard")
    response = client.post(f"/failed/{row.uuid}/edit/", {"arguments": text})
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert any(m in page for m in ((message,) if isinstance(message, str) else message))
    assert FailedJob.objects.filter(uuid=row.uuid).exists()
    assert driver.sizes("default").pending == 0


def test_an_edited_unique_job_takes_the_lock_its_new_arguments_name(driver):
    """Issue 32: the edited job kept its old lock, so two jobs with one id waited."""
    from queueing.middleware.keys import unique_key
    from queueing.middleware.store import state_client
    from tests.testapp.control_jobs import unique_record

    name = "tests.testapp.control_jobs.unique_record"
    holder = unique_record.using(after_commit=False).delay("b", "queued")  # holds id "b"
    assert holder is not None
    row = fail(name=name, args=["a", "failed"],
               unique={"key": unique_key(name, "a"), "until": "end"})
    client = client_with("operate_dashboard")
    taken = json.dumps({"args": ["b", "edited"], "kwargs": {}})
    response = client.post(f"/failed/{row.uuid}/edit/", {"arguments": taken})
    assert response.status_code == 400
    assert "same unique id is queued or running" in html.unescape(response.content.decode())
    assert driver.sizes("default").pending == 1 and FailedJob.objects.filter(uuid=row.uuid)

    free = json.dumps({"args": ["c", "edited"], "kwargs": {}})
    assert client.post(f"/failed/{row.uuid}/edit/", {"arguments": free}).status_code == 302
    entries = [json.loads(e) for e in driver.pending("default", 0, -1)]
    assert [e["args"] for e in entries] == [["b", "queued"], ["c", "edited"]]
    assert entries[1]["unique"]["key"] == unique_key(name, "c")
    client_ = state_client(driver)
    assert client_.get(unique_key(name, "c")).decode() == row.uuid
    assert client_.get(unique_key(name, "a")) is None


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
