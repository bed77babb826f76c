"""Test settings: the standalone site's, pointed at a throwaway Redis and SQLite file.

The first process to import this (pytest) starts a redis-server on a unix socket in a
temp folder, with the same code the product uses, unless TEST_REDIS_URL names one. It
exports the URL and the database path in the environment, so worker processes that the
tests spawn (with DJANGO_SETTINGS_MODULE=tests.settings) use the same server and file.
"""
import atexit
import json
import os
import tempfile

os.environ.setdefault("HORIZON_VAR_DIR", tempfile.mkdtemp(prefix="hz-var-"))

from horizon.settings import *  # noqa: E402,F401,F403
from horizon.settings import INSTALLED_APPS, QUEUE, VAR_DIR  # noqa: E402

if not os.environ.get("TEST_REDIS_URL"):
    from queueing.embedded_redis import EmbeddedRedis

    _server = EmbeddedRedis(tempfile.mkdtemp(prefix="hz-redis-"), persistent=False)
    os.environ["TEST_REDIS_URL"] = _server.ensure_running()
    atexit.register(_server.stop)

TEST_REDIS_URL = os.environ["TEST_REDIS_URL"]
QUEUE["connections"]["redis"]["url"] = TEST_REDIS_URL
QUEUE["connections"]["redis"]["queues"] = "*"
QUEUE["connections"]["redis"]["block_for"] = 1
# Worker processes started by tests may shorten the lease to test expiry.
QUEUE["connections"]["redis"]["retry_after"] = float(os.environ.get("TEST_RETRY_AFTER", 90))
QUEUE["connections"]["redis"]["max_deliveries"] = int(os.environ.get("TEST_MAX_DELIVERIES", 5))

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

INSTALLED_APPS = [*INSTALLED_APPS, "tests.testapp"]
# Worker processes started by tests may beat faster, so a killed one is seen gone sooner.
QUEUE_WORKER_HEARTBEAT = float(os.environ.get("TEST_WORKER_HEARTBEAT", 5))
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Supervisor tests pick one of these with HORIZON_ENV in the master's environment.
HORIZON = {
    "connection": "redis",
    "name": os.environ.get("HORIZON_TEST_MASTER", "test-master"),
    "defaults": {"balance": "auto", "min_processes": 1, "max_processes": 3,
                 "balance_cooldown": 1, "balance_max_shift": 1, "tries": 1,
                 "timeout": 20, "sleep": 0.5},
    "supervisors": {"supervisor-1": {"queue": ["default"]}},
    "environments": {
        "two-queues": {"supervisor-1": {"queue": ["high", "default"], "max_processes": 2}},
        "off": {"supervisor-1": {"queue": ["high", "default"], "balance": "off",
                                 "max_processes": 2}},
    },
}

# Tests hand masters extra HORIZON keys (schedule, waits, notifications) as JSON.
HORIZON.update(json.loads(os.environ.get("HORIZON_TEST_EXTRA") or "{}"))

# Django's Tasks framework on our queue: core django.tasks on Django 6, the backport on 5.2.
try:
    import django.tasks  # noqa: F401
except ImportError:
    try:
        import django_tasks  # noqa: F401
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
