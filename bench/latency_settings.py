"""Settings of `bench/latency.py --connection database`: the bench settings plus a
``database`` connection (the database driver) on the site's SQLite file, which the bench
puts in a throwaway HORIZON_VAR_DIR. BENCH_DATABASE_LISTEN=0 sets ``listen: False``:
idle workers then poll every ``--sleep`` as every SQLite worker did before issue 53."""
import os

from bench.settings import *  # noqa: F403
from bench.settings import QUEUE

QUEUE["connections"]["database"] = {
    "driver": "database", "database": "default", "queues": ["bench", "default", "high", "low"],
    "retry_after": 90, "listen": os.environ.get("BENCH_DATABASE_LISTEN", "1") != "0"}
