"""A sync job's walk through the worker is a short hallway (issue 49).

``bench/job_walk.py`` follows one no-op job at ``--concurrency=8`` through a real worker
(reserved, handed to a slot thread, run, written down, acknowledged with a real Redis
round trip) and counts its stays in ``queueing.worker``'s modules: each call into
another worker module starts one, and so does each return. Issue 49 asks for at most
15 stays in at most 7 modules; a reader following a job reads that many places.
"""
import os
import re
import subprocess
import sys

from tests.conftest import ROOT

WALK = re.compile(r"in queueing\.worker: (\d+) stays in (\d+) modules")


def test_a_sync_job_walks_at_most_15_stays_in_7_worker_modules():
    env = {key: value for key, value in os.environ.items()
           if key not in ("BENCH_REDIS_URL", "DJANGO_SETTINGS_MODULE")}  # its own server
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "job_walk.py"), "--show"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)

    assert done.returncode == 0, done.stderr[-2000:]
    stays, modules = map(int, WALK.search(done.stdout).groups())
    walk = done.stdout.split("job walk")[0]
    assert stays <= 15, walk
    assert modules <= 7, walk
