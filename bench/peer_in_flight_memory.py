"""Dramatiq's resident memory per job in flight, measured as bench/in_flight_memory.py
measures ours: the RSS of one worker process with T threads and T jobs waiting in
`time.sleep`, less the RSS of an idle worker with one thread, per job. (Dramatiq starts
all its threads up front, so busy-minus-idle of the same worker would leave out the
threads' own memory; ours starts them as jobs arrive.)

    ~/.cache/bench-peers-venv/bin/python bench/peer_in_flight_memory.py [THREADS ...]

Run it with the peer harness's virtualenv (../shared/bench-peers/run_all.sh makes it;
it has Dramatiq). Uses Redis at 127.0.0.1:6379 database 11 (flushed). The actor module
is written to a temporary directory; nothing of Dramatiq's is copied here.
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import psutil
import redis

URL = os.environ.get("PEER_MEMORY_REDIS_URL", "redis://127.0.0.1:6379/11")
SETTLE = 4.0  # seconds for the worker to start, or for its threads to take the jobs

ACTORS = textwrap.dedent(f"""
    import time
    import dramatiq
    from dramatiq.brokers.redis import RedisBroker

    dramatiq.set_broker(RedisBroker(url={URL!r}))

    @dramatiq.actor(max_retries=0, time_limit=600_000)
    def sleep_io(seconds):
        time.sleep(seconds)
""")


def worker_process(parent: psutil.Process) -> psutil.Process:
    """Dramatiq's CLI forks its worker processes: the one child that is not a watcher."""
    deadline = time.time() + 30
    while time.time() < deadline:
        children = parent.children(recursive=True)
        if children:
            return max(children, key=lambda p: p.memory_info().rss)
        time.sleep(0.2)
    raise RuntimeError("dramatiq started no worker process")


def measure(threads: int, folder: str, baseline: float | None = None) -> float:
    redis.Redis.from_url(URL).flushdb()
    env = dict(os.environ, PYTHONPATH=folder)
    cli = subprocess.Popen([sys.executable, "-m", "dramatiq", "peer_actors", "--processes",
                            "1", "--threads", str(threads)], env=env, cwd=folder,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(SETTLE)
        worker = worker_process(psutil.Process(cli.pid))
        idle = worker.memory_info().rss / 2**20
        sys.path.insert(0, folder)
        import peer_actors
        for _ in range(threads):
            peer_actors.sleep_io.send(2 * SETTLE)
        time.sleep(SETTLE)
        busy = worker.memory_info().rss / 2**20
    finally:
        cli.terminate()
        cli.wait(60)
    if baseline is not None:
        per_job_kb = (busy - baseline) * 1024 / threads
        print(f"dramatiq threads={threads:<4} worker idle {idle:.1f} MB, busy {busy:.1f} MB, "
              f"one idle thread {baseline:.1f} MB: {per_job_kb:.0f} KB per job in flight")
    return idle


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "peer_actors.py"), "w") as module:
            module.write(ACTORS)
        baseline = measure(1, folder)
        for threads in [int(a) for a in sys.argv[1:]] or [8, 64]:
            measure(threads, folder, baseline)
