"""A worker's sidecar never uses SQLite from a forked copy of the worker.

SQLite keeps its file-lock bookkeeping per process, and ``fork()`` copies it: a
connection opened in a forked child of a process that had the database open believes it
holds the locks its parent held, and takes none. Its writes are then not serialised
with other processes', and another process that closes what it believes is the last
connection checkpoints and deletes the write-ahead log under it ("disk I/O error",
"database disk image is malformed"). The suite run on 3 processes found it (stop 43).

The worker forks its sidecar at start and again whenever one dies or wedges, while the
worker may hold a SQLite connection (a job that queried it, the database driver's own
session). Each test here makes that happen (the sidecar is SIGKILLed while a job holds
the worker's connection open, so the replacement is forked with SQLite open), then
checks what SQLite needs: the process that touches the database holds a real POSIX lock
on its ``-shm`` file (/proc/locks), and the database passes ``PRAGMA integrity_check``.

- a ``database`` connection on SQLite: the sidecar renews leases there every tick;
- a Redis connection whose failed store is SQLite: whatever settles a job lost with its
  worker writes the failed row and runs the job's ``failed`` hook.

(The module name holds "database" so tests/conftest.py keeps the database connections
for it and for the workers it starts.)
"""
from __future__ import annotations

import os
import signal
import sqlite3

import pytest
from django.conf import settings
from django.db import connections

from queueing.models import FailedJob, QueuedJob
from tests import proctree
from tests.conftest import WORKER_DATABASES
from tests.helpers import posix_lock_holders
from tests.testapp import jobs
from tests.workers import until

pytestmark = [pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)]
SQLITE_CONNECTION = "db-lite"


def sidecars(worker) -> list[int]:
    return proctree.children(worker.pid)


def started(label) -> bool:
    return any(m["label"] == label for m in jobs.marks("start"))


def shm_inode() -> int:
    return os.stat(f"{settings.DATABASES['default']['NAME']}-shm").st_ino


def holds_sqlite_lock(pid: int) -> bool:
    return pid in posix_lock_holders(shm_inode())


def integrity() -> str:
    with sqlite3.connect(settings.DATABASES["default"]["NAME"], timeout=30) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def replace_sidecar(worker) -> int:
    """SIGKILL the worker's sidecar; the worker forks (or starts) a new one, now while
    its job holds the worker's SQLite connection open. The new one's pid."""
    [first] = until(lambda: sidecars(worker), 30, "the worker's sidecar", worker)
    os.kill(first, signal.SIGKILL)
    [second] = until(lambda: [p for p in sidecars(worker) if p != first], 15,
                     "a new sidecar", worker)
    return second


@pytest.fixture
def sqlite_default():
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
        pytest.skip("the failed store is not SQLite here")
    return settings.DATABASES["default"]["NAME"]


def test_a_sidecar_renewing_leases_on_a_sqlite_database_connection_takes_real_locks(
        sqlite_default, spawn_worker, rclient):
    """A worker on the ``db-lite`` connection runs a 20 s job (retry_after 3 s, so its
    sidecar renews the lease every 0.2 s). Its sidecar is replaced while the job holds
    the worker's SQLite session: the new sidecar renews the lease, and holds a real lock
    on the database while it does."""
    if SQLITE_CONNECTION not in settings.QUEUE["connections"]:
        pytest.skip("no database connection on SQLite here")
    QueuedJob.objects.using("default").all().delete()
    worker = spawn_worker(SQLITE_CONNECTION, "--queue=default", "--timeout=0", "--sleep=0.2",
                          env={"TEST_RETRY_AFTER": "3"})
    jobs.sleep_mark.using(connection=SQLITE_CONNECTION).delay(20, "long")
    until(lambda: started("long"), 30, "the job to start", worker)
    sidecar = replace_sidecar(worker)
    killed_at = QueuedJob.objects.using("default").get().reserved_until

    def renewed() -> bool:
        row = QueuedJob.objects.using("default").get()
        return row.reserved_until is not None and row.reserved_until > killed_at + 0.5

    until(renewed, 15, "the new sidecar to renew the lease", worker)
    until(lambda: holds_sqlite_lock(sidecar), 5,
          f"the renewing sidecar {sidecar} to hold a real lock on the SQLite database "
          f"(holders: {posix_lock_holders(shm_inode())})", worker)
    worker.send(signal.SIGTERM)
    worker.wait(30)
    connections.close_all()
    assert integrity() == "ok"


def test_a_job_lost_with_its_worker_is_settled_by_a_process_with_real_sqlite_locks(
        sqlite_default, spawn_worker, rclient):
    """A Redis worker runs a job that queried SQLite (the failed store's database) and
    sleeps. Its sidecar is replaced meanwhile, then the worker is SIGKILLed: the job is
    failed (tries 1) with its ``failed`` hook run, by a process that holds real locks on
    SQLite, and the failed row is there in a sound database."""
    FailedJob.objects.all().delete()
    worker = spawn_worker("--queue=default", "--timeout=0", "--sleep=0.2")
    uuid = jobs.LostWithTheDatabase.delay("lost", 60)
    until(lambda: started("lost"), 30, "the job to start", worker)
    replace_sidecar(worker)
    worker.send(signal.SIGKILL)
    worker.wait(15)

    def hooked() -> list[dict]:
        return [n for n in jobs.notes(jobs.FAILED_HOOKS) if n["label"] == "lost"]

    try:
        [hook] = until(hooked, 30, "the lost job's failed hook")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the worker's output:\n{worker.output()[-4000:]}") from None
    assert "the worker running it died" in hook["error"]
    assert hook["locked"] is True, (
        "the lost job was settled (its failed hook run) by a process holding no real "
        "lock on SQLite: a forked copy of the worker")
    assert FailedJob.objects.filter(uuid=uuid).exists()
    connections.close_all()
    assert integrity() == "ok"
