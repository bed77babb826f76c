"""A rolling deploy (issue 40, item 4): a job the running (old) workers do not know is
handed back with backoff, no try spent, for QUEUE["unknown_job_window"] seconds; the
dashboard shows it as unknown to the running workers; it runs once a worker that knows
it (the new release) starts. Past the window it fails as before."""
import signal

import pytest
from django.urls import reverse

from queueing import connections
from queueing.drivers.redis.keys import QueueKeys
from queueing.entries.payload import decode
from queueing.models import FailedJob
from queueing.worker.unknown_jobs import hand_back_delay
from tests.conftest import subprocess_env
from tests.helpers import client_with, push
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
DEFAULT = QueueKeys.for_queue("default")
NEW_JOB = "newrelease.jobs.welcome"


def new_release_env(tmp_path):
    """Settings of the new release: one more app, whose jobs module has NEW_JOB."""
    package = tmp_path / "newrelease"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "jobs.py").write_text(
        "from queueing import job\n"
        "from tests.testapp.jobs import RAN, note\n\n\n"
        "@job\n"
        "def welcome(label):\n"
        "    note(RAN, label=label)\n")
    (tmp_path / "new_release_settings.py").write_text(
        "from tests.settings import *  # noqa\n"
        "INSTALLED_APPS = [*INSTALLED_APPS, 'newrelease']\n")
    return {"DJANGO_SETTINGS_MODULE": "new_release_settings", "TEST_UNKNOWN_JOB_WINDOW": "600",
            "PYTHONPATH": f"{tmp_path}:{subprocess_env().get('PYTHONPATH', '')}"}


def test_an_unknown_job_waits_for_a_worker_that_knows_it(spawn_worker, rclient, tmp_path):
    driver = connections.redis_driver("redis")
    sent = push(driver, job=NEW_JOB, args=["hello"], maxTries=1, backoff=[0])
    old = spawn_worker("--queue=default", "--block-for=0.2",
                       env={"TEST_UNKNOWN_JOB_WINDOW": "600"})
    wait_until(lambda: rclient.zcard(DEFAULT.delayed) == 1, timeout=20,
               message="the old worker to hand the job back")
    wait_until(lambda: "UNKNOWN" in old.output(), message="UNKNOWN line")
    assert not FailedJob.objects.exists()
    assert f"job '{NEW_JOB}' is not registered; handed back, again in 5s" in old.output()
    # no try spent, the delivery given back, the window's start recorded
    [entry] = rclient.zrange(DEFAULT.delayed, 0, -1)
    payload = decode(entry)
    assert payload.attempts == 1 and payload.deliveries == 0, payload
    assert payload.data["unknownReleases"] == 1 and payload.data["unknownSince"] > 0
    # the dashboard's delayed list says why it waits
    page = client_with("view_dashboard").get(reverse("horizon:jobs", args=["delayed"])) \
        .content.decode()
    assert sent["uuid"] in page and "unknown to the running workers" in page
    old.send(signal.SIGTERM)
    assert old.wait() == 0
    # the new release's worker knows it: it runs once it is due
    new = spawn_worker("--queue=default", "--block-for=0.2", env=new_release_env(tmp_path))
    wait_until(lambda: [n["label"] for n in jobs.notes()] == ["hello"], timeout=30,
               message="the job to run on the new worker")
    assert jobs.notes()[0]["attempts"] == 1, "its first attempt: none was spent before"
    new.send(signal.SIGTERM)
    assert new.wait() == 0
    assert not FailedJob.objects.exists()


def test_past_the_window_it_fails_as_before(spawn_worker, rclient):
    driver = connections.redis_driver("redis")
    sent = push(driver, job=NEW_JOB, maxTries=1, unknownSince=1.0, unknownReleases=9)
    worker = spawn_worker("--queue=default", "--stop-when-empty", "--sleep=0",
                          env={"TEST_UNKNOWN_JOB_WINDOW": "600"})
    assert worker.wait() == 0, worker.output()
    failed = FailedJob.objects.get(uuid=sent["uuid"])
    assert "is not registered" in failed.exception
    assert "unknown to the workers that took it for" in failed.exception


def test_the_backoff_grows_and_never_passes_the_window():
    assert hand_back_delay({}, 1000.0, 600) == (5.0, 1000.0)
    assert hand_back_delay({"unknownSince": 900.0, "unknownReleases": 2}, 1000.0, 600) == \
        (20.0, 900.0)
    assert hand_back_delay({"unknownSince": 900.0, "unknownReleases": 50}, 1000.0, 600) == \
        (60.0, 900.0)
    assert hand_back_delay({"unknownSince": 900.0, "unknownReleases": 50}, 1490.0, 600) == \
        (10.0, 900.0)
    assert hand_back_delay({"unknownSince": 900.0}, 1500.0, 600) is None
    assert hand_back_delay({}, 1000.0, 0) is None, "0: fail at once, the old way"
    assert hand_back_delay({"unknownSince": "x"}, 1000.0, 600) == (5.0, 1000.0)
