"""Benchmark settings: the standalone site's, on the machine's TCP Redis like the peers.

BENCH_REDIS_URL picks the server (default redis://127.0.0.1:6379/10, a database the
peer benchmarks do not use). Every bench FLUSHes that database.
"""
import os

from horizon.settings import *  # noqa: F401,F403
from horizon.settings import INSTALLED_APPS, QUEUE

BENCH_REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/10")
QUEUE["connections"]["redis"]["url"] = BENCH_REDIS_URL
QUEUE["connections"]["redis"]["queues"] = ["bench", "default", "high", "low"]
INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
LOGGING = {"version": 1, "disable_existing_loggers": False}
# The Redis benches measure Redis alone (bench/database.py adds its own connections).
QUEUE["connections"].pop("database", None)
