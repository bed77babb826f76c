"""Issue 32: list pages read a bounded preview of each payload. With 2,000 pending jobs
of 200 KB each (400 MB in Redis), the pending page answers well under 500 ms and the
web process does not grow by the payloads' size. Real Redis, the dashboard's URLs,
Django's test client in this process (the web process)."""
import resource
import statistics
import time

import pytest
from django.contrib.auth.models import User
from django.test import Client

from queueing.drivers.redis.keys import QueueKeys
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)
JOBS = 2_000
KB = 1024


def fill_pending(rclient) -> None:
    """2,000 real payloads of ~200 KB: one dispatched, then copied with fresh uuids
    (dispatching each would only slow the test, not change what the page reads)."""
    jobs.noop.delay("x" * 200 * KB)
    ready = QueueKeys.for_queue("default").ready
    template = rclient.lpop(ready).decode()
    uuid = template.split('"uuid":"', 1)[1].split('"', 1)[0]
    pipe = rclient.pipeline(transaction=False)
    for n in range(JOBS):
        pipe.rpush(ready, template.replace(uuid, f"{n:08d}-0000-4000-8000-000000000000"))
        if n % 200 == 199:
            pipe.execute()
    pipe.execute()
    assert rclient.llen(ready) == JOBS


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_the_pending_page_of_2000_jobs_of_200_kb_is_fast_and_small(rclient):
    fill_pending(rclient)
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    assert client.get("/jobs/pending/").status_code == 200  # warm: templates, scripts
    before = peak_rss_mb()
    times = []
    for htmx in (False, True, False, True, False):
        headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
        started = time.perf_counter()
        response = client.get("/jobs/pending/", **headers)
        times.append(time.perf_counter() - started)
        assert response.status_code == 200
        assert len(response.content) < 2_000_000, "the page carries whole payloads"
    grew = peak_rss_mb() - before
    assert statistics.median(times) < 0.5, f"pending page took {times}"
    assert grew < 100, f"the web process grew by {grew:.0f} MB"
