"""Dashboard page timings with 1,000,000 pending jobs and 100,000 failed jobs.

    .venv/bin/python bench/dashboard.py [--pending 1000000] [--failed 100000] [--runs 50]
        [--failing 20] [--only failed] [--keep] [--reuse] [--poll 2] [--snapshots 240]

Fills the bench Redis (BENCH_REDIS_URL, else a throwaway one: FLUSHed) and a
SQLite file under var/bench-dashboard/ (migrated first), logs a staff user in with
Django's test Client, requests every page `--runs` times after a short warm-up, and
prints p50/p95/max in ms per page. Everything it filled is removed at the end.
The target: every page under 100 ms at the 95th percentile (the failed list: 50 ms
with 100,000 rows while workers fail jobs at 20 a second, `--failing 20`, which writes
failed rows through failed.record, as a worker does, from a process of its own).
`--poll 2` waits 2 s before each measured load, as one open tab polling a list does:
each load then finds the counts a page keeps for its refresh interval expired.
"""
import argparse
import datetime as dt
import json
import os
import random
import subprocess
import sys
import time
import uuid as uuid_lib

from common import ROOT, percentile, setup_django

os.environ.setdefault("HORIZON_VAR_DIR", str(ROOT / "var" / "bench-dashboard"))
setup_django()

from django.contrib.auth.models import Permission, User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from horizon.repositories import metrics, state  # noqa: E402
from queueing.connections import redacted_url, redis_driver  # noqa: E402
from queueing.entries.payload import encode  # noqa: E402
from queueing.models import FailedJob  # noqa: E402
from queueing.state.failed import exception_class, tags_column  # noqa: E402

JOBS = ["billing.jobs.send_invoice", "mail.jobs.send_welcome", "search.jobs.reindex",
        "media.jobs.resize_image", "reports.jobs.nightly_export"]
NEEDLE_UUID = "ffffffff-0000-4000-8000-00000000beef"
TRACEBACK = "".join(f'  File "/srv/app/{m}.py", line {n}, in handle\n    step_{n}()\n'
                    for n, m in enumerate(["billing/jobs", "billing/invoices", "core/http"] * 4))


def payload(i: int, now: float, queue: str) -> dict:
    name = JOBS[i % len(JOBS)]
    return {"attempts": 0, "uuid": str(uuid_lib.UUID(int=random.getrandbits(128), version=4)),
            "displayName": name.rsplit(".", 1)[-1], "job": name, "args": [i],
            "kwargs": {"customer_id": i % 5000, "api_token": "tok_live_x"}, "maxTries": 3,
            "maxExceptions": None, "backoff": [10, 60], "timeout": 60, "retryUntil": None,
            "failOnTimeout": False, "pushedAt": now - 3600 + i / 1000,
            "tags": [f"customer:{i % 5000}"], "chain": [], "connection": "redis", "queue": queue}


# Builds `count` payloads inside Redis from one template per job name and pushes them as
# push.lua does (ready list, a notify token each, the uuid index and its sequence): ten
# million entries made in Python took over an hour of this shared machine's CPU.
SERVER_FILL = """
local templates = cjson.decode(ARGV[1])
local first, count = tonumber(ARGV[2]), tonumber(ARGV[3])
local sequence = redis.call('INCRBY', KEYS[4], count) - count
for start = first, first + count - 1, 100 do
  local entries, tokens = {}, {}
  for i = start, math.min(start + 99, first + count - 1) do
    local id = string.format('%08x-0000-4000-8000-%012x', i, i)
    entries[#entries + 1] = string.format(templates[(i % #templates) + 1], id, i, i % 5000,
                                          i % 5000)
    tokens[#tokens + 1] = '1'
    redis.call('ZADD', KEYS[3], sequence + i - first + 1, id)
  end
  redis.call('RPUSH', KEYS[1], unpack(entries))
  redis.call('RPUSH', KEYS[2], unpack(tokens))
end
return redis.call('LLEN', KEYS[1])
"""


def fill_pending_in_redis(driver, pending: int, now: float) -> None:
    """`pending` entries of the default queue, shaped as `payload` makes them, built by a
    script in chunks of 50,000 (Redis answers others between chunks)."""
    templates = []
    for name in JOBS:
        data = {**payload(0, now, "default"), "job": name,
                "displayName": name.rsplit(".", 1)[-1]}
        text = encode({**data, "uuid": "@U", "args": [-1], "tags": ["customer:-2"],
                       "kwargs": {"customer_id": -3, "api_token": "tok_live_x"}})
        templates.append(text.replace("%", "%%").replace('"@U"', '"%s"')
                         .replace("[-1]", "[%d]").replace("customer:-2", "customer:%d")
                         .replace('"customer_id":-3', '"customer_id":%d'))
    k = driver.keys("default")
    script = driver.client.register_script(SERVER_FILL)
    for first in range(0, pending, 50_000):
        script(keys=[k.ready, k.notify, k.index, k.sequence],
               args=[json.dumps(templates), first, min(50_000, pending - first)])
    # the needle: a known uuid in the middle, re-indexed at its position
    middle = pending // 2
    old = json.loads(driver.client.lindex(k.ready, middle))["uuid"]
    raw = driver.client.lindex(k.ready, middle).decode().replace(old, NEEDLE_UUID)
    score = driver.client.zscore(k.index, old)
    driver.client.lset(k.ready, middle, raw)
    driver.client.zrem(k.index, old)
    driver.client.zadd(k.index, {NEEDLE_UUID: score})


def fill_redis(driver, pending: int, minutes: int = 60) -> None:
    client = driver.client
    now = time.time()
    started = time.perf_counter()
    fill_pending_in_redis(driver, pending, now)
    for i in range(10_000):
        driver.later("low", encode(payload(i, now, "low")), now + 60 + i)
    driver.push_many("high", [encode(payload(i, now, "high")) for i in range(500)])
    for _ in range(200):
        driver.pop("high", owner="bench-host:4242:supervisor-1")
    # Recent successes and `minutes` of one-minute snapshots (an hour unless --snapshots
    # says more: the metrics page's default range draws up to four hours), for completed
    # and metrics.
    pipe = client.pipeline(transaction=False)
    start = now - minutes * 60
    for minute in range(minutes):
        for n in range(100):
            data = payload(minute * 100 + n, start + minute * 60, "default")
            script, keys_, args = metrics.completion_call(
                client, job_name=data["job"], uuid=data["uuid"], label="redis:default",
                runtime=0.05 + (n % 7) / 100, payload=data, keep_seconds=7200,
                now=start + minute * 60 + n / 2)
            script(keys=keys_, args=args, client=pipe)
        pipe.execute()
        metrics.take_snapshots(client, now=start + minute * 60 + 59)
    print(f"filled Redis in {time.perf_counter() - started:.1f} s: "
          f"{driver.sizes('default').pending:,} pending, 10,000 delayed, 200 reserved, "
          f"{minutes * 100:,} completions recorded, {minutes} snapshots per series")


MASTER = state.MasterState(name="bench-host", pid=4242, host="bench-host", status="running",
                           started_at=time.time() - 600, supervisors=["supervisor-1"])
SUPERVISOR = state.SupervisorState(
    name="supervisor-1", master="bench-host", status="running", connection="redis",
    queues=["high", "default", "low"], balance="auto",
    processes={"high": 2, "default": 6, "low": 1}, pids=list(range(5000, 5009)), options={})


def keep_alive(client) -> None:
    """Publish the master's state again, as a running master would (it expires in 15 s)."""
    state.publish_master(client, MASTER)
    state.publish_supervisor(client, SUPERVISOR)


def fill_failed(count: int) -> None:
    started = time.perf_counter()
    now = timezone.now()
    rows = []
    for i in range(count):
        data = payload(i, time.time(), "default")
        kind = ["TimeoutError: SMTP server did not answer", "ValueError: invoice has no lines",
                "ConnectionError: upstream refused"][i % 3]
        text = encode(data)
        rows.append(FailedJob(  # the columns failed.record writes, tags included
            uuid=data["uuid"], connection="redis", queue="default" if i % 4 else "high",
            job=data["job"], payload=text, tags=tags_column(text),
            exception=f"{kind}\n\nTraceback (most recent call last):\n{TRACEBACK}",
            exception_class=exception_class(kind),
            failed_at=now - dt.timedelta(seconds=i * 25)))
        if len(rows) == 5000:
            FailedJob.objects.bulk_create(rows)
            rows = []
    FailedJob.objects.bulk_create(rows)
    print(f"filled {FailedJob.objects.count():,} failed rows in "
          f"{time.perf_counter() - started:.1f} s")


def write_failures(rate: float) -> int:
    """Write failed rows at `rate` a second, as workers do (failed.record), until killed:
    run in a process of its own so that its work does not share the pages' interpreter."""
    from queueing.state import failed

    n = 0
    started = time.monotonic()
    while True:
        data = payload(n, time.time(), "default")
        failed.record(connection="redis", queue="default", raw=encode(data),
                      exception="ValueError: invoice has no lines\n\nTraceback (most "
                      f"recent call last):\n{TRACEBACK}", job_uuid=data["uuid"],
                      job_name=data["job"])
        n += 1
        time.sleep(max(0.0, started + n / rate - time.monotonic()))


def keep_failing(rate: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "--write-failures", str(rate)],
                            env=os.environ.copy())


def pages(driver, pending: int) -> dict[str, tuple[str, dict]]:
    middle = FailedJob.objects.order_by("-failed_at")[FailedJob.objects.count() // 2]
    delayed_raw, delayed_score = driver.delayed("low", 5000, 5000)[0]
    delayed_uuid = json.loads(delayed_raw)["uuid"]
    hx = {"HX-Request": "true"}
    half = pending // 2
    return {
        "overview": ("/", {}),
        "overview (htmx poll)": ("/", hx),
        "pending": ("/jobs/pending/", {}),
        "pending, middle page": (f"/jobs/pending/?queue=redis:default&start={half}", hx),
        "pending, search by tag": ("/jobs/pending/?q=customer:42", hx),
        "pending, search (no match)": ("/jobs/pending/?q=nothing-like-this", hx),
        "delayed": ("/jobs/delayed/", {}),
        "reserved": ("/jobs/reserved/", {}),
        "completed": ("/jobs/completed/", {}),
        "completed, search": ("/jobs/completed/?q=reindex", hx),
        "failed": ("/failed/", {}),
        "failed, page 1,000": ("/failed/?start=50000", hx),
        "failed, queue filter": ("/failed/?queue=redis:high", hx),
        "failed, search": ("/failed/?q=SMTP", hx),
        "failed, search (no match)": ("/failed/?q=nothing-like-this", hx),
        "job detail (pending, middle)":
            (f"/jobs/pending/{NEEDLE_UUID}/?queue=redis:default&at={half}", {}),
        "job detail (delayed)":
            (f"/jobs/delayed/{delayed_uuid}/?queue=redis:low&score={delayed_score!r}", {}),
        "job detail (failed)": (f"/jobs/failed/{middle.uuid}/", {}),
        "workers": ("/workers/", {}),
        "metrics": ("/metrics/", {}),
        "schedules": ("/schedules/", {}),
        "prometheus scrape (/metrics)": ("/metrics", {}),
    }


CPU_TIMES: list[float] = []  # the last `measure`'s CPU ms per load (this process's)


POLL = [0.0]  # seconds waited before each measured load (--poll): one tab's refresh


def measure(client: Client, url: str, headers: dict, runs: int) -> list[float]:
    """Wall ms per load; CPU_TIMES gets this process's CPU ms per load beside them, which
    a busy shared machine disturbs far less (Redis's share is not in it: the pages' own
    work, SQLite's included, is; so is a thread the load started that is still running
    when it returns)."""
    for _ in range(3):
        response = client.get(url, headers=headers)
        assert response.status_code == 200, (url, response.status_code)
    times = []
    CPU_TIMES.clear()
    for _ in range(runs):
        time.sleep(POLL[0])
        started, cpu = time.perf_counter(), time.process_time()
        response = client.get(url, headers=headers)
        times.append((time.perf_counter() - started) * 1000)
        CPU_TIMES.append((time.process_time() - cpu) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return times


def profiled(client: Client, url: str, headers: dict, runs: int) -> list[float]:
    """`measure`, under cProfile, printing where a load's time goes (why a page is slow
    before changing it)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    times = measure(client, url, headers, runs)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pending", type=int, default=1_000_000)
    parser.add_argument("--failed", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--keep", action="store_true", help="leave the data in place")
    parser.add_argument("--reuse", action="store_true",
                        help="measure what an earlier --keep run left (no filling)")
    parser.add_argument("--failing", type=float, default=0,
                        help="failed rows written a second while measuring")
    parser.add_argument("--only", default="", help="only the pages whose name starts so")
    parser.add_argument("--profile", action="store_true",
                        help="profile the pages measured (cProfile, the 25 costliest calls)")
    parser.add_argument("--poll", type=float, default=0,
                        help="seconds waited before each measured load (one tab polling)")
    parser.add_argument("--snapshots", type=int, default=60,
                        help="minutes of metric snapshots filled (the metrics page draws "
                             "up to 240 in its default 4-hour range)")
    parser.add_argument("--write-failures", type=float, default=0, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.write_failures:
        return write_failures(options.write_failures)
    POLL[0] = options.poll
    driver = redis_driver()
    print(f"redis: {redacted_url(driver.config.url or 'embedded')}; "
          f"sqlite: {os.environ['HORIZON_VAR_DIR']}")
    call_command("migrate", verbosity=0)
    if not options.reuse:
        driver.client.flushdb()
        FailedJob.objects.all().delete()
    User.objects.filter(username="bench-operator").delete()
    try:
        if options.reuse:
            options.pending = driver.sizes("default").pending
            print(f"reusing {options.pending:,} pending and "
                  f"{FailedJob.objects.count():,} failed rows")
        else:
            fill_redis(driver, options.pending, options.snapshots)
            fill_failed(options.failed)
        user = User.objects.create_user("bench-operator", password="x", is_staff=True)
        user.user_permissions.add(Permission.objects.get(codename="view_dashboard"))
        client = Client(HTTP_HOST="localhost")  # a host the site's ALLOWED_HOSTS accepts
        client.force_login(user)
        print(f"\n{'page':34} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'cpu p50':>8} "
              f"{'cpu p95':>8}   ({options.runs} runs)")
        worst = 0.0
        writer = keep_failing(options.failing) if options.failing else None
        if writer is not None:
            time.sleep(2)  # started, and writing
        for name, (url, headers) in pages(driver, options.pending).items():
            if not name.startswith(options.only):
                continue
            keep_alive(driver.client)
            times = (profiled(client, url, headers, options.runs) if options.profile
                     else measure(client, url, headers, options.runs))
            p95 = percentile(times, 95)
            worst = max(worst, p95)
            print(f"{name:34} {percentile(times, 50):8.1f} {p95:8.1f} {max(times):8.1f} "
                  f"{percentile(CPU_TIMES, 50):8.1f} {percentile(CPU_TIMES, 95):8.1f}")
        if writer is not None:
            writer.terminate()
            writer.wait()
            print(f"\nwhile {options.failing:g} failed rows a second were written "
                  f"({FailedJob.objects.count() - options.failed:,} during the run)")
        print(f"\nslowest p95: {worst:.1f} ms ({'under' if worst < 100 else 'OVER'} 100 ms)")
        return 0 if worst < 100 else 1
    finally:
        if not options.keep:
            driver.client.flushdb()
            FailedJob.objects.all().delete()
            User.objects.filter(username="bench-operator").delete()


if __name__ == "__main__":
    sys.exit(main())
