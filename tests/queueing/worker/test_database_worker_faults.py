"""Issue 30: the database driver fences too. A worker on PostgreSQL whose link stops
answering (tests/tcp_proxy.py frozen: no byte moves, no socket closes, as a half-open
connection looks) must never let its job run in a second worker while it still runs it:
its sidecar's renewals have a deadline, and past it the sidecar fences the job (kills
the worker) before the lease lapses. Real processes, a real PostgreSQL; skipped where the
machine has none, as tests/queueing/worker/test_database_worker.py is.

(The module name holds "database" so tests/conftest.py keeps the PostgreSQL connection
for it and for the workers it starts.)
"""
from __future__ import annotations

import json
import signal

import pytest
from django.conf import settings

from queueing.models import QueuedJob
from tests import proctree
from tests.conftest import WORKER_DATABASES
from tests.tcp_proxy import TcpProxy
from tests.testapp import jobs
from tests.workers import alive, wait_until

pytestmark = [pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES),
              pytest.mark.slow]
CONNECTION = "db-pg"


def runs(client, label) -> list[dict]:
    rows = client.hgetall(f"{jobs.TRACK}:runs:{label}")
    return sorted((json.loads(v) for v in rows.values()), key=lambda r: r["start"])


def overlaps(client, label) -> list[tuple[dict, dict]]:
    """Two runs of one job alive at once: a later run started before an earlier one's
    last sign of life (a run ticks every 0.1 s while it lasts; a killed one stops)."""
    found = runs(client, label)
    return [(a, b) for i, a in enumerate(found) for b in found[i + 1:] if b["start"] < a["last"]]


def tracked(label, phase) -> list[dict]:
    found = [json.loads(x) for x in jobs.redis_driver("redis").client.lrange(jobs.TRACK, 0, -1)]
    return [e for e in found if e["label"] == label and e["phase"] == phase]


@pytest.fixture
def pg_connection():
    if CONNECTION not in settings.QUEUE["connections"]:
        pytest.skip(f"PostgreSQL tests skipped: {settings.PG_SKIP_REASON}")
    from queueing.models import ControlValue, PausedQueue, QueuedJob

    alias = settings.QUEUE["connections"][CONNECTION]["database"]
    for model in (QueuedJob, PausedQueue, ControlValue):
        model.objects.using(alias).all().delete()
    return alias


def test_a_postgresql_worker_whose_link_goes_silent_never_lets_its_job_run_twice(
        pg_connection, spawn_worker, rclient):
    """Worker A reaches PostgreSQL through a proxy, worker B directly (retry_after 4 s
    both). A starts a 15 s job; the proxy then stops forwarding. A's sidecar cannot renew
    the lease: it must stop A before the lease lapses, so that when B takes the job (the
    lease lapsed, nobody renews it) A no longer runs it. The job completes, and its runs
    never overlap in time."""
    real = settings.DATABASES[pg_connection]
    proxy = TcpProxy(upstream_tcp=(real["HOST"], int(real["PORT"])))
    proxied = {**real, "HOST": "127.0.0.1", "PORT": str(proxy.port)}
    env = {"TEST_RETRY_AFTER": "4"}
    args = (CONNECTION, "--queue=default", "--tries=3", "--timeout=0", "--sleep=0.2")
    try:
        a = spawn_worker(*args, env={**env, "HORIZON_TEST_PG_SETTINGS": repr(proxied)})
        wait_until(lambda: alive(a) and proctree.children(a.pid), timeout=30,
                   message="worker A's sidecar")
        jobs.tracked.using(connection=CONNECTION).delay("pg-long", 15)
        wait_until(lambda: alive(a) and tracked("pg-long", "start"), timeout=30,
                   message="worker A to start the job")
        assert tracked("pg-long", "start")[0]["pid"] == a.pid
        b = spawn_worker(*args, env=env)
        wait_until(lambda: alive(b) and proctree.children(b.pid), timeout=30,
                   message="worker B's sidecar")
        proxy.freeze()
        wait_until(lambda: alive(b) and tracked("pg-long", "end"), timeout=90, interval=0.2,
                   message="the job to complete")
        wait_until(lambda: len(runs(rclient, "pg-long")) >= 1
                   and all(r["last"] >= r["start"] for r in runs(rclient, "pg-long")),
                   timeout=5, message="the run rows")
        both = overlaps(rclient, "pg-long")
        assert both == [], f"the job ran in two workers at once: {both}"
        ends = tracked("pg-long", "end")
        assert len(ends) == 1, ends
        if ends[0]["pid"] == a.pid:  # A finished it before anyone else started it
            assert len(runs(rclient, "pg-long")) == 1
        alive(b)
        wait_until(lambda: QueuedJob.objects.using(pg_connection).count() == 0, timeout=30,
                   message="the job acknowledged (its row deleted)")
        b.send(signal.SIGTERM)
        assert b.wait(30) == 0
    finally:
        proxy.close()
