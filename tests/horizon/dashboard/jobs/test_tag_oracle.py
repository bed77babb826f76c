"""Issue 32: a viewer cannot confirm a guessed secret through the tag filter. Tags are
matched, counted and linked in their masked form, on the payload's own tags only, never
on the stored text around them. Real Redis, real SQLite."""
import html
from urllib.parse import quote

import pytest
from django.test import Client

from tests.helpers import client_with, fail, push

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer() -> Client:
    return client_with("view_dashboard", username="viewer")


def listed(client: Client, path: str, tag: str, uuid: str) -> bool:
    page = client.get(f"{path}?tag={quote(tag)}")
    assert page.status_code == 200
    return uuid in page.content.decode()


SECRETS = ["Hunter2 pass!", "hunter2 pass!", "bob.smith@example.com", "4111 1111 1111 1111",
           '"Hunter2 pass!"']


@pytest.mark.parametrize("guess", SECRETS)
def test_the_failed_tag_filter_never_matches_inside_arguments(driver, viewer, guess):
    row = fail(args=["bob.smith@example.com", "4111 1111 1111 1111"],
               kwargs={"password": "Hunter2 pass!"}, tags=["needs review!"])
    assert not listed(viewer, "/failed/", guess, row.uuid)


def test_a_tag_with_odd_characters_still_filters(driver, viewer):
    row = fail(tags=["needs review!", "v1.2"])
    other = fail(tags=["v1.2.3"])
    assert listed(viewer, "/failed/", "needs review!", row.uuid)
    assert listed(viewer, "/failed/", "v1.2", row.uuid)
    assert not listed(viewer, "/failed/", "v1.2", other.uuid)


@pytest.mark.parametrize("path", ["/failed/", "/jobs/pending/"])
def test_a_secret_tag_is_matched_and_linked_masked_only(driver, viewer, path):
    tags = ["password=hunter2", "batch:7"]
    uuid = fail(tags=tags).uuid if path == "/failed/" else push(driver, tags=tags)["uuid"]
    page = html.unescape(viewer.get(path).content.decode())
    assert "hunter2" not in page and "password=********" in page
    assert not listed(viewer, path, "password=hunter2", uuid)
    assert listed(viewer, path, "password=********", uuid)
    job_state = "failed" if path == "/failed/" else "pending"
    detail = viewer.get(f"/jobs/{job_state}/{uuid}/?queue=redis:default").content.decode()
    assert "hunter2" not in detail
