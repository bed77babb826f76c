"""Running now: the workers' heartbeats list the jobs in their slots; the dashboard shows them
(and per worker on the workers page) and cancels one with an audited POST."""
import pytest

from queueing.models import FailedJob
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
FAST = {"TEST_WORKER_HEARTBEAT": "0.2"}


def test_running_page_and_cancel(spawn_worker, rclient, admin_client):
    uuid = jobs.sleep_in_steps.delay(30, "long")
    w = spawn_worker("--queue=default", "--concurrency=2", env=FAST)
    wait_until(lambda: uuid in admin_client.get("/jobs/running/").content.decode(), timeout=20)
    page = admin_client.get("/jobs/running/").content.decode()
    assert "sleep_in_steps" in page and "Cancel" in page
    resp = admin_client.post(f"/jobs/running/{uuid}/cancel/", {"queue": "redis:default"})
    assert resp.status_code in (200, 302)
    wait_until(lambda: FailedJob.objects.filter(uuid=uuid).exists(), timeout=10)
    assert "cancelled" in FailedJob.objects.get(uuid=uuid).exception
    from horizon.models import AuditEntry
    assert AuditEntry.objects.filter(action="cancel", target=uuid).exists()
    wait_until(lambda: uuid not in admin_client.get("/jobs/running/").content.decode(), timeout=10)


def test_workers_page_shows_in_flight(spawn_worker, rclient, admin_client):
    jobs.sleep_in_steps.delay(30, "long")
    spawn_worker("--queue=default", "--concurrency=2", env=FAST)
    wait_until(lambda: "sleep_in_steps" in admin_client.get("/workers/").content.decode(), timeout=20)
