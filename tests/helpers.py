"""Helpers the test modules share (seeding jobs, failed rows and Horizon state, starting
masters, waiting for outcomes): one module, so no test module imports another."""
from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import json
import re
import socket
import time
import urllib.request
import uuid as uuid_lib
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import Permission, User
from django.test import Client, override_settings

from horizon.repositories import metrics, state
from queueing import Batch, connections
from queueing.drivers.redis.keys import QueueKeys
from queueing.entries.payload import encode
from queueing.models import FailedJob
from queueing.state import failed as failed_store
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.tcp_proxy import TcpProxy
from tests.testapp.jobs import (
    BATCH_CALLBACKS,
    notes,
)


# -- seeding the dashboard: jobs, failed rows, completed records, Horizon state --
def payload(name="app.jobs.work", **fields) -> dict:
    data = {"attempts": 0, "uuid": str(uuid_lib.uuid4()), "displayName": name.rsplit(".")[-1],
            "job": name, "args": [], "kwargs": {}, "maxTries": 3, "maxExceptions": None,
            "backoff": [5], "timeout": 60, "retryUntil": None, "failOnTimeout": False,
            "pushedAt": time.time() - 5, "tags": [], "chain": [], "connection": "redis",
            "queue": "default"}
    data.update(fields)
    return data


def push(driver, queue="default", **fields) -> dict:
    data = payload(queue=queue, **fields)
    driver.push(queue, encode(data))
    return data


def later(driver, due, queue="default", **fields) -> dict:
    data = payload(queue=queue, **fields)
    driver.later(queue, encode(data), due)
    return data


def fail(queue="default", exception="RuntimeError: boom\n\nTraceback ...", when=None,
         **fields) -> FailedJob:
    data = payload(queue=queue, **fields)
    row = failed_store.record(connection="redis", queue=queue, raw=encode(data),
                              exception=exception, job_uuid=data["uuid"], job_name=data["job"])
    if when is not None:
        FailedJob.objects.filter(pk=row.pk).update(failed_at=when)
    return row


def complete(rclient, name="app.jobs.work", queue="default", runtime=0.120, now=None, **fields):
    data = payload(name=name, queue=queue, **fields)
    script, keys_, args = metrics.completion_call(
        rclient, job_name=name, uuid=data["uuid"], label=f"redis:{queue}", runtime=runtime,
        payload=data, keep_seconds=3600, now=now or time.time())
    script(keys=keys_, args=args)
    return data


def publish(rclient, *, master_status="running", sup_status="running", processes=None):
    state.publish_master(rclient, state.MasterState(
        name="web-1", pid=4242, host="web-1.internal", status=master_status,
        started_at=time.time() - 600, supervisors=["supervisor-1"]))
    state.publish_supervisor(rclient, state.SupervisorState(
        name="supervisor-1", master="web-1", status=sup_status, connection="redis",
        queues=["high", "default", "low"], balance="auto",
        processes=processes or {"high": 1, "default": 2, "low": 1},
        pids=[5001, 5002, 5003, 5004], options={"max_processes": 4}))


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


# -- local HTTP --
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_status(url):
    try:
        return urllib.request.urlopen(url, timeout=2).status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


# -- a master process --
def start_master(spawn_worker, env_name=None, **env):
    extra = {"HORIZON_ENV": env_name} if env_name else {}
    extra.update(env)
    return spawn_worker(command="horizon", env=extra)


# -- Tasks --
def run_async(coroutine):
    """Run a coroutine in a thread of its own (another test may own this thread's loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()



def task_finished(result):
    def check():
        result.refresh()
        return result.is_finished
    return check


# -- batches with worker processes --
def callbacks(kind=None, phase="end"):
    return [n for n in notes(BATCH_CALLBACKS)
            if (kind is None or n["kind"] == kind) and n["phase"] == phase]


def workers(spawn_worker, n=1, *extra):
    return [spawn_worker("--queue=default", "--quiet", "--tries=1", *extra) for _ in range(n)]


def batch_finished(batch_id, *kinds):
    def check():
        found = Batch.find(batch_id)
        return found if found.finished and all(callbacks(k) for k in kinds) else None
    return check


# -- batches on a database connection --
def drain_database(conn, **options) -> int:
    opts = WorkerOptions(connection=conn, queues=("default",), stop_when_empty=True,
                         sleep=0, memory=0, quiet=True, tries=1, **options)
    return Worker(connections.driver(conn), opts, stdout=io.StringIO(),
                  stderr=io.StringIO()).run()


def batch_ends(kind):
    return [n for n in notes(BATCH_CALLBACKS) if n["kind"] == kind and n["phase"] == "end"]


# -- the dashboard tests' three queues (an autouse fixture where imported) --
@pytest.fixture(autouse=True)
def three_queues(settings):
    """A supervisor on high, default and low, so the overview has three known queues."""
    settings.HORIZON = {**settings.HORIZON,
                        "supervisors": {"supervisor-1": {"queues": ["high", "default", "low"]}}}


# -- schedules --
SCHEDULED = QueueKeys.for_queue("scheduled")


EVERY_SECOND = {"name": "tick", "job": "tests.testapp.jobs.record", "every": 1,
                "args": ["tick"], "queue": "scheduled"}


def pushed(rclient, keys=SCHEDULED):
    return [json.loads(raw) for raw in rclient.lrange(keys.ready, 0, -1)]


def slots(rclient):
    return [p["schedule"]["slot"] for p in pushed(rclient) if p["schedule"]["trigger"] ==
            "schedule"]

# -- helpers --



# -- jobs of `default` settled in-process, as a worker's acknowledgement would --
def settle_ready(count: int, outcome: str = "s") -> int:
    """Reserve up to `count` ready jobs of the redis connection's `default` queue and
    acknowledge them ("s") or delete them with `outcome`; how many there were."""
    driver = connections.redis_driver("redis")
    got = driver.reserve("default", count, owner="test")
    if outcome == "s":
        driver.acknowledge(got.jobs)
    else:
        for held in got.jobs:
            driver.delete(held, outcome=outcome)
    return len(got.jobs)


# -- a management command's exit code and output (the status probes) --
def command_status(name: str, *args: str) -> tuple[int, str]:
    """`manage.py <name> <args>` in this process: (its exit code, its stdout)."""
    from django.core.management import call_command

    out = io.StringIO()
    try:
        call_command(name, *args, stdout=out)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue()
    return 0, out.getvalue()


# -- logged-in clients: a staff user with these dashboard permissions, or a superuser --
def client_with(*codenames, username: str = "ops") -> Client:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = Client()
    client.force_login(user)
    return client


def superuser_client(username: str = "root") -> Client:
    """A client logged in as a new superuser (password "pw"), as most page tests use."""
    client = Client()
    client.force_login(User.objects.create_superuser(username, f"{username}@example.com",
                                                     "pw"))
    return client


# -- a failover connection whose Redis is dead (issue 35) --
DEAD_REDIS = "redis://:s3cret-pass@127.0.0.1:1/0"  # nothing listens on port 1: refused


def queue_with(settings, **extra):
    """QUEUE with these connections added (an override_settings)."""
    queue = copy.deepcopy(settings.QUEUE)
    queue["connections"].update(extra)
    return override_settings(QUEUE=queue)


@contextlib.contextmanager
def dead_redis_failover(settings, dbconn):
    """'fo': a dead Redis ('dead') first, then the database connection `dbconn`."""
    with queue_with(settings, dead={"driver": "redis", "url": DEAD_REDIS, "queues": "*"},
                    fo={"driver": "failover", "connections": ["dead", dbconn], "retry_primary_after": 60}):
        connections.reset()
        try:
            yield dbconn
        finally:
            connections.reset()


@contextlib.contextmanager
def redis_outage(settings, dbconn):
    """'fo': Redis through a proxy ('near') first, then the database connection `dbconn`.
    The object yielded has `away()` (the proxy refuses), `back()` (it answers on the same
    address, and the circuit's period has passed), `conn` (the database connection) and
    `worker_env` (the two connections, for spawned processes)."""
    socket_path = urlparse(django_settings.TEST_REDIS_URL).path
    state = {"proxy": TcpProxy(upstream_unix=socket_path)}
    port = state["proxy"].port
    queue = copy.deepcopy(settings.QUEUE)
    queue["connections"]["near"] = {"driver": "redis", "url": state["proxy"].url,
                                    "queues": ["default"]}
    queue["connections"]["fo"] = {"driver": "failover", "connections": ["near", dbconn],
                                  "retry_primary_after": 0.5}

    class Outage:
        conn = dbconn
        worker_env = {"TEST_QUEUE_CONNECTIONS": json.dumps(
            {name: queue["connections"][name] for name in ("near", "fo")})}

        @staticmethod
        def away():
            state["proxy"].close()

        @staticmethod
        def back():
            state["proxy"] = TcpProxy(upstream_unix=socket_path, port=port)
            time.sleep(0.6)  # the circuit's period: the next dispatch probes

    try:
        with override_settings(QUEUE=queue):
            connections.reset()
            yield Outage
    finally:
        state["proxy"].close()
        connections.reset()


def posix_lock_holders(inode: int) -> list[int]:
    """The pids holding a POSIX lock on the file with this inode (/proc/locks): how a
    test sees whether SQLite really locked its files."""
    holders = []
    with open("/proc/locks") as handle:
        for line in handle:
            fields = line.split()
            if "->" in fields:  # a waiter's line
                continue
            if fields[1] == "POSIX" and fields[5].rsplit(":", 1)[-1] == str(inode):
                holders.append(int(fields[4]))
    return holders


def old_key_warnings(settings, block: dict, *, match: str) -> list:
    """`manage.py check`'s queueing.W020 warnings with a connection "old" set to `block`,
    whose old key also raises the DeprecationWarning `match` names."""
    from django.core.checks import run_checks

    settings.QUEUE = {**settings.QUEUE, "connections": {
        **settings.QUEUE["connections"], "old": block}}
    with pytest.warns(DeprecationWarning, match=match):
        return [e for e in run_checks() if e.id == "queueing.W020"]


def retired_horizon(settings, match: str, **keys) -> None:
    """settings.HORIZON with `keys`, some of them retired (a test of a cap or floor that
    is a constant from 0.4 sets it small), read once here expecting the
    DeprecationWarning `match` names: the parsed settings stay cached, so the code under
    test reads them without another."""
    from horizon.configuration.settings import horizon_settings

    settings.HORIZON = {**settings.HORIZON, **keys}
    with pytest.warns(DeprecationWarning, match=match):
        horizon_settings()
