"""Issue 31 (smaller points): the Locks page names the lock in its release confirm, and
links each owner to its job page with the job's state (or says the owner is gone, the one
case where a release is plainly safe). Real Redis."""
import html
import re

import pytest
from django.test import Client

from queueing.middleware import keys, lock_calls
from tests.helpers import client_with
from tests.testapp import control_jobs

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator() -> Client:
    return client_with("operate_dashboard")


def rows(page: str) -> list[str]:
    return re.findall(r"<tr>.*?</tr>", page, re.S)[1:]


def test_the_release_confirm_names_the_lock_and_its_owner(operator, rclient):
    uuid = control_jobs.unique_record.using(after_commit=False).delay("k7", "held")
    page = html.unescape(operator.get("/locks/").content.decode())
    [row] = rows(page)
    confirm = re.search(r'hx-confirm="([^"]*)"', row).group(1)
    assert "tests.testapp.control_jobs.unique_record:k7" in confirm
    assert uuid in confirm


def test_an_owner_links_to_its_job_with_its_state(operator, rclient):
    uuid = control_jobs.unique_record.using(after_commit=False).delay("k8", "held")
    page = html.unescape(operator.get("/locks/").content.decode())
    [row] = rows(page)
    link = re.search(rf'<a href="(/jobs/pending/{uuid}/[^"]*)"', row)
    assert link, row
    assert "pending" in re.sub(r"<[^>]+>", " ", row)
    assert operator.get(link.group(1)).status_code == 200


def test_an_owner_found_nowhere_is_shown_gone(operator, rclient):
    lock_calls.take(rclient, keys.control_key("overlap", "rebuild:1"),
                    "0badc0de-0000-4000-8000-000000000000 host:1:w", 60_000)
    page = html.unescape(operator.get("/locks/").content.decode())
    [row] = rows(page)
    text = re.sub(r"<[^>]+>", " ", row)
    assert "gone" in text
    assert 'href="/jobs/' not in row
