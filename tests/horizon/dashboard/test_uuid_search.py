"""Issue 31, item 5: a uuid in any list's search box goes to its job, whatever its
state; an 8+-character prefix matching one job does too (real Redis, real store)."""
import time

import pytest
from django.contrib.auth.models import User
from django.test import Client

from horizon.dashboard import uuid_search
from tests.helpers import fail, later, push

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    return client


def test_kinds():
    assert uuid_search.kind("0d3c5a4e-0000-4000-8000-000000000001") == "full"
    assert uuid_search.kind("0d3c5a4e") == "prefix"
    assert uuid_search.kind("0d3c5a4e-00") == "prefix"
    assert uuid_search.kind("0d3c5a4") == "" and uuid_search.kind("SendInvoice") == ""


def test_a_full_uuid_goes_to_its_job_from_any_list(client, driver):
    delayed = later(driver, time.time() + 600)
    failed = fail()
    response = client.get("/jobs/pending/", {"q": delayed["uuid"]})
    assert response.status_code == 302
    assert response["Location"].startswith(f"/jobs/delayed/{delayed['uuid']}/")
    response = client.get("/jobs/completed/", {"q": failed.uuid})
    assert response["Location"] == f"/jobs/failed/{failed.uuid}/"
    response = client.get("/failed/", {"q": delayed["uuid"]}, headers={"HX-Request": "true"})
    assert response["HX-Redirect"].startswith(f"/jobs/delayed/{delayed['uuid']}/")


def test_an_eight_character_prefix_goes_to_the_one_job_it_names(client, driver):
    pending = push(driver)
    for _ in range(20):
        push(driver)
    failed = fail()
    response = client.get("/failed/", {"q": pending["uuid"][:8]})
    assert response.status_code == 302
    assert response["Location"].startswith(f"/jobs/pending/{pending['uuid']}/")
    response = client.get("/jobs/pending/", {"q": str(failed.uuid)[:13]})
    assert response["Location"] == f"/jobs/failed/{failed.uuid}/"
    assert client.get("/jobs/pending/", {"q": "0000000"}).status_code == 200, "too short"
