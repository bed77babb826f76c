"""bench/soak.py's settings: the bench's (its own Redis, the standalone site) with one
supervisor shaped like the issue's run: 3 worker processes of 8 slots each, balance off.
SOAK_FAILED_MAX sets the failed store's cap (and so the timelines', completed_max +
failed_max), so a short run reaches them (the defaults, 100,000 and 110,000, take hours
at soak rates)."""
import os

from bench.settings import *  # noqa: F403

HORIZON = {
    "connection": "redis",
    "name": "soak-master",
    "supervisors": {
        "soak": {"queues": ["default"], "balance": "off", "min_processes": 3,
                 "max_processes": 3, "concurrency": 8, "tries": 1, "timeout": 20,
                 "memory": 512},
    },
    "trim": {"completed": 10, "metrics": 1440,
             "failed_max": int(os.environ.get("SOAK_FAILED_MAX", "100000"))},
}
# the workers block for a second when idle (a supervisor's block_for until issue 49)
QUEUE = {**QUEUE, "connections": {**QUEUE["connections"],  # noqa: F405
                                  "redis": {**QUEUE["connections"]["redis"],  # noqa: F405
                                            "block_for": 1}}}
