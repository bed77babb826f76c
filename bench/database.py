"""The database driver on PostgreSQL, and django-tasks-db in the same run.

    .venv/bin/pip install 'django-tasks-db[compat]'   # optional: the comparison
    .venv/bin/python bench/database.py [N]

Makes a `horizon_bench` role and database as the server's superuser (local socket, as
the tests do) unless BENCH_POSTGRES names one, migrates it, then for each system:
(a) enqueue N/4 jobs one by one (one INSERT + COMMIT each, autocommit);
(b) enqueue N jobs in bulk (dispatch_many; django-tasks-db: one enqueue per task inside
    one transaction, as it has no bulk API);
(c) drain N no-op jobs with 1, then 2 worker processes: steady jobs/s = jobs / (time from
    the first job taken to the table being empty), read by polling the table;
(d) dispatch-to-start latency of 200 jobs sent 20 ms apart to an idle worker: woken by
    LISTEN/NOTIFY, and polling with --sleep 1 (the other databases' way).
Our drains are run 3 times (the median is printed), django-tasks-db's once (it is about
twenty times slower here).
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ["DJANGO_SETTINGS_MODULE"] = "bench.database_settings"

from tests import pg_server

if "BENCH_POSTGRES" not in os.environ:
    problem = pg_server._sql_as_superuser(
        "DO $$BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'horizon_bench') "
        "THEN CREATE ROLE horizon_bench LOGIN CREATEDB PASSWORD 'horizon_bench'; END IF; END$$")
    if problem is None:
        problem = pg_server._sql_as_superuser("CREATE DATABASE horizon_bench OWNER horizon_bench")
        problem = None if problem is None or "already exists" in problem else problem
    if problem:
        sys.exit(f"no PostgreSQL to bench on: {problem}")

from common import ROOT, latency_samples, percentile, setup_django

setup_django()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from bench.jobs import noop, stamp  # noqa: E402
from queueing import dispatch_many  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402

call_command("migrate", verbosity=0)


def table_count(table: str, where: str = "") -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {table} {where}")
        return cursor.fetchone()[0]


def empty_tables() -> None:
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE queueing_jobs")
        if settings.PEER:
            cursor.execute("TRUNCATE django_tasks_database_dbtaskresult")


def spawn(command: list[str]) -> subprocess.Popen:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.database_settings"}
    return subprocess.Popen([sys.executable, str(ROOT / "manage.py"), *command], env=env,
                            cwd=ROOT, stdout=subprocess.DEVNULL)


# -- the systems ----------------------------------------------------------------------
class Ours:
    name = "horizon database driver"
    table, pending = "queueing_jobs", ""
    runs = 3  # drains per worker count (the median is printed)

    def left(self):
        return table_count(self.table, self.pending)

    def one(self, i):
        noop.using(connection="db", queue="bench").delay(i)

    def bulk(self, n):
        for start in range(0, n, 1000):
            dispatch_many([noop.using(connection="db", queue="bench").s(i)
                           for i in range(start, min(start + 1000, n))])

    def worker(self, i):
        return spawn(["runworker", "db", "--queue=bench", "--quiet", "--stop-when-empty",
                      f"--name=b{i}"])


class Peer(Ours):
    name = "django-tasks-db 0.13 (db_worker)"
    table = "django_tasks_database_dbtaskresult"
    runs = 1  # it drains ~20x slower: one run each
    pending = "WHERE status IN ('READY', 'RUNNING')"

    def one(self, i):
        from bench.peer_tasks import noop_task

        noop_task.enqueue(i)

    def bulk(self, n):
        from bench.peer_tasks import noop_task

        with transaction.atomic():
            for i in range(n):
                noop_task.enqueue(i)

    def worker(self, i):
        return spawn(["db_worker", "--batch", "--interval=0.01", "--no-startup-delay",
                      "--no-reload", f"--worker-id=b{i}"])


class RedisReference:
    """The same worker on the Redis driver, drained in the same run, for scale."""

    name = "horizon Redis driver (reference)"

    def left(self):
        sizes = redis_driver().sizes("bench")
        return sizes.pending + sizes.reserved

    def bulk(self, n):
        redis_driver().client.flushdb()
        for start in range(0, n, 1000):
            dispatch_many([noop.using(queue="bench").s(i)
                           for i in range(start, min(start + 1000, n))])

    def worker(self, i):
        return spawn(["runworker", "redis", "--queue=bench", "--quiet", "--stop-when-empty",
                      "--block-for=0", f"--name=r{i}"])


def enqueue_rates(system, n: int) -> tuple[float, float]:
    empty_tables()
    started = time.perf_counter()
    for i in range(n // 4):
        system.one(i)
    one = (n // 4) / (time.perf_counter() - started)
    empty_tables()
    started = time.perf_counter()
    system.bulk(n)
    return one, n / (time.perf_counter() - started)


def drain_rate(system, n: int, workers: int) -> float:
    empty_tables()
    system.bulk(n)
    procs = [system.worker(i) for i in range(workers)]
    first = None
    while True:
        left = system.left()
        now = time.perf_counter()
        if first is None and left < n:
            first = now
        if left == 0:
            break
        time.sleep(0.01)
    for proc in procs:
        proc.wait(60)
    return n / (now - first)


def latency(connection_name: str, extra: list[str], count: int = 200) -> list[float]:
    empty_tables()
    client = redis_driver().client
    worker = spawn(["runworker", connection_name, "--queue=bench", "--quiet", *extra])
    time.sleep(2.0)
    for _ in range(5):  # warm-up
        stamp.using(connection=connection_name, queue="bench").delay(time.time())
    time.sleep(1.5)
    return latency_samples(client, worker, count, lambda _: stamp.using(
        connection=connection_name, queue="bench").delay(time.time()), pause=0.02)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0]
    print(f"PostgreSQL {version} on 127.0.0.1, N={n:,} no-op jobs, {os.cpu_count()} CPUs")
    peer = settings.PEER and os.environ.get("BENCH_PEER", "1") == "1"  # BENCH_PEER=0: skip
    systems = [Ours()] + ([Peer()] if peer else [])
    if not settings.PEER:
        print("(django-tasks-db not installed: pip install 'django-tasks-db[compat]')")
    for system in systems:
        one, bulk = enqueue_rates(system, n)
        drains = {}
        for workers in (1, 2):
            runs = sorted(drain_rate(system, n, workers) for _ in range(system.runs))
            drains[workers] = runs * 3 if len(runs) == 1 else runs
        print(f"{system.name}: enqueue {one:,.0f}/s one by one, {bulk:,.0f}/s bulk; "
              f"drain 1 worker {drains[1][1]:,.0f} jobs/s ({drains[1][0]:,.0f}-"
              f"{drains[1][2]:,.0f}), 2 workers {drains[2][1]:,.0f} jobs/s "
              f"({drains[2][0]:,.0f}-{drains[2][2]:,.0f})")
    reference = RedisReference()
    runs = sorted(drain_rate(reference, n, 1) for _ in range(3))
    print(f"{reference.name}: drain 1 worker {runs[1]:,.0f} jobs/s "
          f"({runs[0]:,.0f}-{runs[2]:,.0f})")
    for label, conn, extra in (("LISTEN/NOTIFY", "db", []),
                               ("polling --sleep 1", "db-poll", ["--sleep=1"])):
        values = latency(conn, extra)
        print(f"dispatch-to-start latency, {label}: p50 {percentile(values, 50):.2f} ms, "
              f"p99 {percentile(values, 99):.2f} ms, max {max(values):.2f} ms "
              f"({len(values)} jobs)")
    empty_tables()


if __name__ == "__main__":
    main()
