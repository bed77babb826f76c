"""Issue 31 (smaller points): edit-and-retry shows what changed before it sends (a diff,
masked like the page), and the job's timeline records the edit and, later, the retried
job's success. Django test client, real Redis, an in-process worker."""
import hashlib
import html
import io
import json
import re

import pytest
from django.test import Client

from queueing import connections
from queueing.models import FailedJob
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.helpers import client_with, fail

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def operator() -> Client:
    return client_with("operate_dashboard")


def words(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def edited_text(amount: int) -> str:
    return json.dumps({"args": ["ok"], "kwargs": {"amount": amount, "api_token": "********"}})


def test_review_shows_the_diff_and_sends_nothing(operator, driver):
    row = fail(name="tests.testapp.jobs.noop", args=["ok"],
               kwargs={"amount": 10, "api_token": "tok-123"})
    text = json.dumps({"args": ["ok"], "kwargs": {"amount": 12, "api_token": "tok-456"}})
    response = operator.post(f"/failed/{row.uuid}/edit/", {"arguments": text, "step": "review"})
    page = response.content.decode()
    shown = words(page)
    assert response.status_code == 200
    assert "kwargs.amount 10 → 12" in shown
    assert "kwargs.api_token \"********\" → \"********\"" in shown  # a secret stays masked both ways
    assert "tok-123" not in page and "tok-456" not in shown  # issue 51: masked, typed too
    assert "tok-456" not in page.replace(html.escape(text), "")  # only the hidden field's
    assert 'class="code edit-masked"' in page and "<details open>" in page
    assert f'name="reviewed" value="{hashlib.sha256(text.encode()).hexdigest()}"' in page
    assert driver.pending("default", 0, -1) == []
    assert FailedJob.objects.filter(uuid=row.uuid).exists()


def test_a_text_changed_after_its_review_is_reviewed_again(operator, driver):
    row = fail(name="tests.testapp.jobs.noop", args=["ok"], kwargs={"amount": 10})
    reviewed = hashlib.sha256(edited_text(11).encode()).hexdigest()
    response = operator.post(f"/failed/{row.uuid}/edit/",
                             {"arguments": json.dumps({"args": ["ok"], "kwargs": {"amount": 99}}),
                              "reviewed": reviewed})
    assert "kwargs.amount 10 → 99" in words(response.content.decode())
    assert driver.pending("default", 0, -1) == []


def test_the_timeline_records_the_edit_then_the_success(operator, driver):
    row = fail(name="tests.testapp.jobs.noop", args=["ok"], kwargs={"amount": 10})
    text = json.dumps({"args": ["ok"], "kwargs": {"amount": 12}})
    response = operator.post(f"/failed/{row.uuid}/edit/", {
        "arguments": text, "reviewed": hashlib.sha256(text.encode()).hexdigest()})
    assert response.status_code == 302
    pending = words(operator.get(f"/jobs/pending/{row.uuid}/").content.decode())
    assert "retried (edited) by ops; changed: kwargs.amount" in pending
    Worker(connections.queue_driver("redis"),
           WorkerOptions(queues=("default",), stop_when_empty=True, sleep=0, memory=0,
                         sidecar=False), stdout=io.StringIO(), stderr=io.StringIO()).run()
    done = words(operator.get(f"/jobs/completed/{row.uuid}/").content.decode())
    assert "retried (edited) by ops; changed: kwargs.amount" in done
    assert done.index("retried (edited)") < done.rindex(" done ")


# -- issue 51: the review step open, secrets masked, the filter kept ------------------------
def test_the_review_panel_comes_back_open_with_the_text_editable_when_nothing_is_masked(
        operator, driver):
    row = fail(name="tests.testapp.jobs.noop", args=["ok"], kwargs={"amount": 10})
    text = json.dumps({"args": ["ok"], "kwargs": {"amount": 12}})
    page = operator.post(f"/failed/{row.uuid}/edit/",
                         {"arguments": text, "step": "review"}).content.decode()
    assert "<details open>" in page and 'id="edit-arguments"' in page
    assert "Retry with these arguments" in page and "Review again" in page


def test_edit_again_after_a_masked_review_gives_the_text_back(operator, driver):
    row = fail(name="tests.testapp.jobs.noop", args=["ok"], kwargs={"api_token": "tok-123"})
    text = json.dumps({"args": ["ok"], "kwargs": {"api_token": "tok-456"}})
    page = operator.post(f"/failed/{row.uuid}/edit/",
                         {"arguments": text, "step": "edit"}).content.decode()
    assert 'id="edit-arguments"' in page and "Review changes" in page
    assert driver.pending("default", 0, -1) == []


def test_the_refusal_next_to_masked_values_names_the_editable_declaration(operator, driver):
    row = fail(name="tests.testapp.jobs.noop", args=["ok"],
               kwargs={"amount": 10, "api_token": "tok-123"})
    page = words(operator.post(f"/failed/{row.uuid}/edit/",
                               {"arguments": edited_text(11), "step": "review"}).content.decode())
    assert "re-enter the masked values (kwargs.api_token)" in page
    assert "@job(editable=(...))" in page
    assert '@job(editable=("amount",))' in page  # the form's own help


def test_after_sending_the_operator_lands_on_the_filtered_list(operator, driver):
    row = fail(name="tests.testapp.jobs.noop", args=["ok"], kwargs={"amount": 10})
    text = json.dumps({"args": ["ok"], "kwargs": {"amount": 12}})
    came_from = "/failed/?q=noop&queue=redis%3Adefault"
    job_page = operator.get(f"/jobs/failed/{row.uuid}/?list=q%3Dnoop%26queue%3Dredis%253Adefault")
    assert job_page.content.decode().count('name="next" value="/failed/?') == 3, \
        "retry, delete and the edit form carry the list's filter"
    review = operator.post(f"/failed/{row.uuid}/edit/",
                           {"arguments": text, "step": "review", "next": came_from})
    assert 'name="next" value="/failed/?' in review.content.decode(), "kept through review"
    sent = operator.post(f"/failed/{row.uuid}/edit/", {
        "arguments": text, "reviewed": hashlib.sha256(text.encode()).hexdigest(),
        "next": came_from})
    assert sent.status_code == 302 and sent.url.startswith("/failed/?")
    assert "q=noop" in sent.url
