"""Daily comfort: compressed refreshes, dense rows with a masked argument preview."""
import gzip

import pytest

from tests.helpers import push, superuser_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return superuser_client()


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


def test_failed_jobs_grouped_by_exception_class_with_group_actions(client, driver):
    from queueing.models import FailedJob
    from tests.helpers import fail

    for i in range(3):
        fail(name="app.jobs.Charge", exception=f"app.errors.CardDeclined: card {i}\n\nTraceback")
    fail(name="app.jobs.Mail", exception="ValueError: bad address\n")
    body = client.get("/failed/").content.decode()
    assert 'app.errors.CardDeclined <span class="count">3</span>' in body
    assert 'ValueError <span class="count">1</span>' in body
    group = client.get("/failed/?exc=app.errors.CardDeclined").content.decode()
    assert "1–3 of 3 failed jobs" in group and "Retry all 3 matching" in group
    assert "Retry all 3 failed jobs matching exception app.errors.CardDeclined?" in group
    response = client.post("/failed/retry/", {"exc": "app.errors.CardDeclined"},
                           headers={"HX-Request": "true"})
    assert "Retried 3 failed jobs matching exception app.errors.CardDeclined." in \
        response.content.decode()
    assert list(FailedJob.objects.values_list("job", flat=True)) == ["app.jobs.Mail"]
    assert driver.sizes("default").pending == 3


def test_failed_jobs_filtered_by_time_range_with_counts(client, driver):
    import datetime as dt

    from django.utils import timezone

    from queueing.models import FailedJob
    from tests.helpers import fail

    now = timezone.now()
    fail(name="app.jobs.New", when=now - dt.timedelta(minutes=5))
    fail(name="app.jobs.Today", when=now - dt.timedelta(hours=5))
    fail(name="app.jobs.Old", when=now - dt.timedelta(days=3))
    body = client.get("/failed/").content.decode()
    assert '1h <span class="count">1</span>' in body
    assert '24h <span class="count">2</span>' in body and '7d <span class="count">3</span>' in body
    day = client.get("/failed/?since=24h").content.decode()
    assert "1–2 of 2 failed jobs" in day and "Retry all 2 matching" in day
    client.post("/failed/delete/", {"since": "24h"}, headers={"HX-Request": "true"})
    assert list(FailedJob.objects.values_list("job", flat=True)) == ["app.jobs.Old"]
