"""Daily comfort: compressed refreshes, dense rows with a masked argument preview."""
import gzip

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.test_dashboard_pages import push

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    return client


def test_list_refreshes_are_compressed(client, driver):
    for i in range(50):
        push(driver, name=f"app.jobs.Work{i}", args=[i, "payload " * 10])
    plain = client.get("/jobs/pending/", headers={"HX-Request": "true"})
    packed = client.get("/jobs/pending/", headers={"HX-Request": "true"},
                        HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert "Content-Encoding" not in plain
    assert packed["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in packed["Vary"]
    body = gzip.decompress(packed.content)
    assert len(packed.content) * 4 < len(body), (len(packed.content), len(body))


def test_rows_preview_their_arguments_masked(client, driver):
    push(driver, name="app.jobs.Charge", args=[42, "https://u:hunter2@pay.example/"],
         kwargs={"amount": 10, "api_token": "tok-secret"})
    body = client.get("/jobs/pending/").content.decode()
    assert '(42, &quot;https://u:********@pay.example/&quot;, amount=10, api_token=&quot;********&quot;)' in body
    assert "hunter2" not in body and "tok-secret" not in body
