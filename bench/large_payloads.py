"""The memory cost of large payloads: the worker's peak, the completed records, a page.

    .venv/bin/python bench/memory.py large [MB]      (default 5)

Run by bench/memory.py. Three measurements, each against a baseline of tiny jobs:

- the worker's peak resident memory (``/usr/bin/time``'s maximum RSS of one
  ``runworker --stop-when-empty`` process) settling 4 valid jobs of MB megabytes, then
  4 malformed entries of MB megabytes pushed straight into the ready list;
- the bytes ``{horizon}:completed:records`` holds after the valid jobs;
- the Python memory one request for ``/jobs/completed/`` and ``/jobs/pending/`` allocates
  at its peak (tracemalloc), with 4 entries of MB megabytes to list.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import tracemalloc

from common import ROOT

ENTRIES = 4


def _worker_peak_mb() -> float:
    """Max RSS of one worker process draining the bench queue, in MB."""
    with tempfile.NamedTemporaryFile(prefix="hz-rss-", suffix=".txt") as out:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings"}
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name, sys.executable,
                        str(ROOT / "manage.py"), "runworker", "--queue=bench", "--quiet",
                        "--stop-when-empty", "--memory=0", "--tries=1"],
                       env=env, cwd=ROOT, check=False)
        return int(open(out.name).read().split()[-1]) / 1024


def _page_peak_mb(path: str) -> float:
    from django.contrib.auth.models import User
    from django.test import Client

    user = User.objects.filter(username="bench").first() or \
        User.objects.create_superuser("bench", "bench@example.com", "bench")
    client = Client(SERVER_NAME="localhost")
    client.force_login(user)
    client.get(path)  # warm: templates, imports
    tracemalloc.start()
    response = client.get(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert response.status_code == 200, response.status_code
    return peak / 2 ** 20


def measure(megabytes: float) -> None:
    from django.core.management import call_command

    from bench.jobs import noop
    from horizon import keys
    from queueing import dispatch_many
    from queueing.connections import redis_driver
    from queueing.drivers.redis.keys import QueueKeys

    call_command("migrate", verbosity=0)
    client = redis_driver().client
    ready = QueueKeys.for_queue("bench").ready
    size = int(megabytes * 2 ** 20)
    rows = []
    for label, blob in (("tiny jobs", "x"), (f"{megabytes:g} MB jobs", "x" * size)):
        client.flushdb()
        dispatch_many([noop.using(queue="bench").s(blob) for _ in range(ENTRIES)])
        pending_page = _page_peak_mb("/jobs/pending/")
        peak = _worker_peak_mb()
        records = client.memory_usage(keys.completed_records()) or 0
        completed_page = _page_peak_mb("/jobs/completed/")
        rows.append((label, peak, records / 2 ** 20, pending_page, completed_page))
    client.flushdb()
    broken = '{"attempts":0,"uuid":"u","job":"bench.jobs.noop","args":["' + "y" * size
    client.rpush(ready, *[broken] * ENTRIES)
    rows.append((f"{megabytes:g} MB malformed", _worker_peak_mb(), 0.0, 0.0, 0.0))
    client.flushdb()
    print(f"{ENTRIES} entries each; worker peak RSS, completed records, request peaks (MB)")
    print(f"{'case':<18} {'worker':>8} {'records':>8} {'pending':>8} {'completed':>9}")
    for label, peak, records, pending, completed in rows:
        print(f"{label:<18} {peak:8.1f} {records:8.2f} {pending:8.2f} {completed:9.2f}")
    base = rows[0][1]
    for label, peak, *_ in rows[1:]:
        print(f"{label}: the worker's peak is {(peak - base) / megabytes:.1f}x one entry "
              "above the tiny-job baseline")
