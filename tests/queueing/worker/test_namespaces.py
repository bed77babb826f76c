"""Issue 40, item 1: two projects with different namespaces on one Redis database share
nothing. Each project here is a set of real worker processes started with its own
QUEUE_NAMESPACE, and the same queue names; one project's pause, restart and cancel
(run as `manage.py` commands in that project's environment) never reach the other's
workers. The dashboard side is tests/horizon/dashboard/test_namespaced_dashboard.py."""
import socket
import subprocess
import time
from contextlib import contextmanager

import pytest
from django.conf import settings
from django.test import override_settings

from queueing import connections
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob
from queueing.worker import health
from tests.conftest import ROOT, WORKER_DATABASES, manage_command, subprocess_env
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES),
              pytest.mark.slow]  # real workers of two projects: 20-30 s each
A, B = "app-a", "app-b"


@contextmanager
def project(name: str):
    """This test process acting as one project (dispatching, reading its keys)."""
    with override_settings(QUEUE={**settings.QUEUE, "namespace": name}):
        yield


def run_in(name: str, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    """A management command run by one project (its environment names its namespace)."""
    done = subprocess.run(manage_command(*args), cwd=ROOT, capture_output=True, text=True,
                          env=subprocess_env(QUEUE_NAMESPACE=name), timeout=60)
    assert (done.returncode == 0) is ok, done.stdout + done.stderr
    return done


def ran() -> list[str]:
    return [n["label"] for n in jobs.notes()]


def worker_of(spawn_worker, name: str, *args: str):
    """A worker of one project, once its loop runs (it has read the restart stamp and
    the paused set), as that project's own heartbeat index tells."""
    worker = spawn_worker("--queue=default", *args, env={"QUEUE_NAMESPACE": name})

    def ready() -> bool:
        with project(name):
            found = health.on_host(connections.redis_driver("redis").client,
                                   socket.gethostname(), local=True)
        return any(w.ready and w.pid == worker.pid for w in found)

    wait_until(ready, timeout=60, interval=0.2, message=f"{name}'s worker to be ready")
    return worker


def test_one_projects_pause_never_stops_the_others_workers(spawn_worker, rclient):
    worker_of(spawn_worker, A)
    worker_of(spawn_worker, B)
    run_in(A, "queue_pause", "default")
    with project(A):
        jobs.record.delay("a-1")
        held = QueueKeys.for_queue("default").ready
    with project(B):
        jobs.record.delay("b-1")
    wait_until(lambda: "b-1" in ran(), timeout=15, message="project B's job to run")
    time.sleep(1.5)  # a worker reads the paused set every second
    assert "a-1" not in ran() and rclient.llen(held) == 1, "A's queue is paused"
    assert rclient.llen(QueueKeys.for_queue("default").ready) == 0, "nothing un-namespaced"
    run_in(A, "queue_continue", "default")
    wait_until(lambda: "a-1" in ran(), timeout=15, message="A's job after queue_continue")


def test_one_projects_restart_stops_only_its_own_workers(spawn_worker):
    a_worker = worker_of(spawn_worker, A)
    b_worker = worker_of(spawn_worker, B)
    run_in(A, "queue_restart")
    assert a_worker.wait(15) == 0
    assert "queue_restart requested" in a_worker.output()
    time.sleep(1.5)
    assert b_worker.running(), b_worker.output()
    with project(B):
        jobs.record.delay("b-after")
    wait_until(lambda: "b-after" in ran(), timeout=15, message="B's worker to keep working")


def test_one_projects_cancel_never_stops_the_others_job(spawn_worker, rclient):
    b_worker = worker_of(spawn_worker, B, "--concurrency=2")
    with project(B):
        uuid = jobs.gated_sync.using(tries=1).delay("b-long")
    wait_until(lambda: any(m["label"] == "b-long" for m in jobs.marks("start")), timeout=30,
               message="B's job to start")
    # A does not see B's job running, and a request written in A's namespace is not B's.
    refused = run_in(A, "queue_cancel", uuid, "--wait=0", ok=False)
    assert "is not running" in refused.stderr, refused.stderr
    with project(A):
        connections.queue_driver("redis").request_cancel(uuid, "project-a", "")
    time.sleep(2.5)  # a worker reads cancel requests every second
    assert not FailedJob.every_namespace.filter(uuid=uuid).exists()
    assert b_worker.running() and not any(m["label"] == "b-long" for m in jobs.marks("end"))
    # B's own cancel reaches it: its worker does read its namespace's requests.
    run_in(B, "queue_cancel", uuid, "--wait=10")
    row = wait_until(lambda: FailedJob.every_namespace.filter(uuid=uuid).first(), timeout=15,
                     message="B's job cancelled by B")
    assert "cancelled" in row.exception.lower()
    # the row is B's (issue 51): A's reads of the store do not see it
    assert row.namespace == B and not FailedJob.objects.filter(uuid=uuid).exists()
