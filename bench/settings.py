"""Benchmark settings: the standalone site's, on a Redis that only the bench uses.

BENCH_REDIS_URL picks the server (for instance redis://127.0.0.1:6379/10, a TCP Redis as
the peer benchmarks in docs/benchmarks.md used). Without it, the first bench process
starts a throwaway redis-server on a unix socket in a temp folder (the product's own
EmbeddedRedis) and exports its URL, so worker processes the bench spawns use the same
server; it is stopped when that process exits. Every bench FLUSHes its database.
"""
import atexit
import os
import shutil
import tempfile

from standalone.settings import *  # noqa: F403
from standalone.settings import INSTALLED_APPS, QUEUE

if not os.environ.get("BENCH_REDIS_URL") and not os.environ.get("BENCH_SENTINEL_CONNECTION"):
    from queueing.drivers.redis.embedded import EmbeddedRedis

    _folder = tempfile.mkdtemp(prefix="hz-bench-redis-")
    _server = EmbeddedRedis(_folder, persistent=False)
    os.environ["BENCH_REDIS_URL"] = _server.ensure_running()
    atexit.register(shutil.rmtree, _folder, True)  # runs after the stop below (LIFO)
    atexit.register(_server.stop)

BENCH_REDIS_URL = os.environ.get("BENCH_REDIS_URL", "")
QUEUE["connections"]["redis"]["url"] = BENCH_REDIS_URL
QUEUE["connections"]["redis"]["queues"] = ["bench", "default", "high", "low"]
INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
LOGGING = {"version": 1, "disable_existing_loggers": False}
# bench/sentinel.py: the "redis" connection behind its local Sentinel group (JSON block).
if os.environ.get("BENCH_SENTINEL_CONNECTION"):
    import json

    QUEUE["connections"]["redis"] = json.loads(os.environ["BENCH_SENTINEL_CONNECTION"])
# The Redis benches measure Redis alone (bench/database.py adds its own connections).
QUEUE["connections"].pop("database", None)
