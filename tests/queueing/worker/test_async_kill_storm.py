"""Issue 53: kills at 64 async slots charge only jobs whose code began and had not
returned, and leave no sidecar behind.

A SIGKILL storm on `runworker --concurrency=64` with async jobs and --tries=1: with
tries=1 a job charged by a kill fails for good, so the failed store lists exactly the
jobs charged. Each job notes when its body began and when it returned (before its
worker writes its success down). A failed job must have begun and must not have
returned (at most one per kill is in the instant between the two: see the test);
nothing is lost; every killed worker's sidecar is gone (none left orphaned,
parent 1) once it settled; every worker still running exits 0 on SIGTERM.
"""
from __future__ import annotations

import json
import os
import random
import signal
import time

import psutil
import pytest

from queueing import dispatch_many
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob
from tests.conftest import WORKER_DATABASES
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES),
              pytest.mark.slow]
DEFAULT = QueueKeys.for_queue("default")


def queue_is_empty(client) -> bool:
    return (client.llen(DEFAULT.ready) + client.zcard(DEFAULT.delayed)
            + client.zcard(DEFAULT.reserved)) == 0


def sessions_alive(sessions: set[int]) -> list[psutil.Process]:
    """Processes still running in the sessions of these (killed) workers: their sidecars
    or settling processes."""
    left = []
    for process in psutil.process_iter(["pid"]):
        try:
            if os.getsid(process.pid) in sessions and process.status() != psutil.STATUS_ZOMBIE:
                left.append(process)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return left


def test_a_kill_storm_at_64_async_slots_charges_only_jobs_cut_short(spawn_worker, rclient):
    total, kills_wanted, width = 3000, 8, 2
    labels = [f"a{i}" for i in range(total)]
    for start in range(0, total, 500):
        dispatch_many([jobs.astorm.s(label) for label in labels[start:start + 500]])
    args = ("--queue=default", "--tries=1", "--quiet", "--concurrency=64", "--timeout=30")
    env = {"TEST_RETRY_AFTER": "4"}
    pool = [spawn_worker(*args, env=env) for _ in range(width)]
    killed: set[int] = set()
    chooser = random.Random(53)
    deadline = time.monotonic() + 240  # a respawned worker takes seconds to start here
    while len(killed) < kills_wanted and time.monotonic() < deadline:
        done = rclient.hlen(jobs.STORM)
        if done >= 0.9 * total:
            break
        if done < (len(killed) + 1) * 0.9 * total / kills_wanted:
            time.sleep(0.05)
            continue
        index = chooser.randrange(width)
        victim = pool[index]
        victim.send(signal.SIGKILL)
        assert victim.wait(10) == -signal.SIGKILL
        killed.add(victim.pid)
        pool[index] = spawn_worker(*args, env=env)
    assert len(killed) >= 4, f"precondition: only {len(killed)} kills"
    wait_until(lambda: queue_is_empty(rclient), timeout=180, interval=0.5,
               message="the storm's queue to drain")
    for worker in pool:
        worker.send(signal.SIGTERM)
    assert [worker.wait(60) for worker in pool] == [0] * width
    started = {k.decode() for k in rclient.hkeys(jobs.STORM_STARTED)}
    returned = {k.decode() for k in rclient.hkeys(jobs.STORM)}
    failed_labels = {json.loads(row.payload)["args"][0] for row in FailedJob.objects.all()}
    # The notes are one round trip each, made in the same step of the event loop as the
    # row's change: a kill can land while one of them is on its way (the loop runs one
    # job's step at a time), so at most one job per kill is charged whose note is
    # missing, or whose completion was counted just before its row said so.
    unstarted, finished = failed_labels - started, failed_labels & returned
    assert len(unstarted) <= len(killed), f"charged before they began: {sorted(unstarted)}"
    assert len(finished) <= len(killed), f"charged after they returned: {sorted(finished)}"
    lost = [label for label in labels if label not in returned and label not in failed_labels]
    assert lost == []
    # Every killed worker's sidecar settled and exited (10 s: a fresh settling process
    # loads Django in about 1 s here, several under the suite's load).
    wait_until(lambda: not sessions_alive(killed), timeout=30,
               message="the killed workers' sidecars to exit")
