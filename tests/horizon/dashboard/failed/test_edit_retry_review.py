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
    assert "tok-123" not in page and "tok-456" not in page.replace(
        html.escape(text), "").replace(text, "")  # only in the textarea, as typed
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
