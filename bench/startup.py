"""Start-up: `runworker` from its spawn to its first job, and a fresh settling process
(issue 53).

    .venv/bin/python bench/startup.py [--runs 5]

(a) a job is queued, then `manage.py runworker` is spawned; the time from the spawn to
    the job's body starting (median and worst of `--runs`), at --concurrency 1 and 8;
(b) the fresh interpreter a sidecar starts to settle a dead worker's running jobs
    (queueing/worker/sidecar_process.py) does what it does before its first store call:
    start Python, load Django as the worker did, build the settlers; timed to its exit.
(c) the floor under (a), each in a fresh interpreter with the collector off as the
    worker's start has it (queueing/worker/early_gc.py), timed from the spawn: Python
    up; `django.setup()` with the site's other apps (Django's contrib apps, django-htmx)
    but none of this project's; the same plus `import redis`, which every Redis worker
    pays (peers included); and `django.setup()` with every app, this project's too.
    (a) minus the last is the worker's own way from a loaded Django to its first job.
Uses BENCH_REDIS_URL or a throwaway redis-server (bench/settings.py).

The worker imports the project's packages from this checkout: under
PYTHONDONTWRITEBYTECODE and with no __pycache__ there, each start compiles them from
source (a quarter to a third of its CPU to the first job), which an installed wheel, or
an image that runs compileall (deploy/Dockerfile), does not. The last line says which it measured;
`python -m compileall -q manage.py queueing horizon standalone bench` measures the other.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

from common import ROOT, setup_django

setup_django()

from bench.jobs import LATENCY_STARTS, hop  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402

SETTLER = """
import sys, django
sys.path[:0] = [{root!r}]
django.setup()
from queueing.worker import sidecar_process
from queueing.worker.options import WorkerOptions
from queueing.observability.job_log import JobLog
sidecar_process.settlers(WorkerOptions(), JobLog(None, worker="bench"), "bench")
"""


def first_job(concurrency: int) -> float:
    client = redis_driver().client
    client.flushdb()
    hop.using(queue="bench").delay("first")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings"}
    spawned = time.time()
    worker = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runworker", "--queue=bench", "--quiet",
         f"--concurrency={concurrency}"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    try:
        while client.hget(LATENCY_STARTS, "first") is None:
            if time.time() - spawned > 120:
                raise RuntimeError("the worker took no job in 120 s")
            time.sleep(0.002)
        return float(client.hget(LATENCY_STARTS, "first")) - spawned
    finally:
        worker.terminate()
        worker.wait(30)


FLOOR = """
import gc, sys, time
gc.disable()
up = time.time()
sys.path[:0] = [{root!r}]
if {step} >= 1:
    import django
    from django.conf import settings
    if {step} < 3:  # the site without this project's apps
        settings.INSTALLED_APPS = [app for app in settings.INSTALLED_APPS
                                   if app.split(".")[0] not in {ours!r}]
    django.setup()
if {step} == 2:
    import redis
print(up, time.time())
"""
OURS = ("queueing", "horizon", "standalone", "bench")
FLOOR_STEPS = ("Python up (spawn to its first statement)",
               "django.setup(), the site's apps without this project's",
               "the same plus import redis (every Redis worker's client)",
               "django.setup() with every app (this project's too)")


def floor(step: int) -> float:
    """Spawn to the end of `step` of FLOOR (see the module docstring, (c))."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings"}
    started = time.time()
    done = subprocess.run(
        [sys.executable, "-c", FLOOR.format(root=str(ROOT), step=step, ours=OURS)],
        env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    up, ended = map(float, done.stdout.split()[-2:])
    return (up if step == 0 else ended) - started


def settler() -> float:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings"}
    started = time.time()
    subprocess.run([sys.executable, "-c", SETTLER.format(root=str(ROOT))], env=env,
                   cwd=ROOT, check=True)
    return time.time() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print("| start-up | median s | worst s |\n|---|---|---|")
    for concurrency in (1, 8):
        times = [first_job(concurrency) for _ in range(args.runs)]
        print(f"| runworker --concurrency {concurrency}: spawn to first job | "
              f"{statistics.median(times):.2f} | {max(times):.2f} |", flush=True)
    times = [settler() for _ in range(args.runs)]
    print(f"| fresh settling process: spawn to ready (Django loaded) | "
          f"{statistics.median(times):.2f} | {max(times):.2f} |")
    for step, what in enumerate(FLOOR_STEPS):
        times = [floor(step) for _ in range(args.runs)]
        print(f"| floor: {what} | {statistics.median(times):.2f} | {max(times):.2f} |",
              flush=True)
    redis_driver().client.flushdb()
    print(f"\n{bytecode_note()}")


def bytecode_note() -> str:
    """Whether the workers above compiled the checkout's modules at each start."""
    compiled = (ROOT / "queueing" / "worker" / "__pycache__").is_dir()
    if compiled:
        return "the checkout's packages ran from their compiled bytecode (__pycache__)"
    if sys.dont_write_bytecode:
        return ("the checkout's packages were compiled from source at each start "
                "(PYTHONDONTWRITEBYTECODE, no __pycache__)")
    return "the checkout's packages were compiled by the first start and cached"


if __name__ == "__main__":
    main()
