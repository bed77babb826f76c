"""Retake the README's screenshots against a populated standalone site.

    .venv/bin/python docs/screenshots.py        (needs Chromium, like the browser tests)

In a throwaway var directory it migrates the standalone site, starts its embedded
redis-server, fills it like a busy installation (pending work over three queues with a
backlog that built up over the past hours, delayed jobs, jobs in backoff with their
errors, failures of several exception types, a paused queue, and a day of metrics
history taken by the real snapshot code, with the events marked on its charts: a Redis
outage and a deploy, when throughput stopped), serves it with gunicorn, logs in with
headless Chromium and saves docs/overview.png, docs/facets.png and docs/metrics.png.
The master's state is published as a running master would; no worker runs, so the
picture holds still.
"""
from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VAR = Path(tempfile.mkdtemp(prefix="hz-shots-"))
os.environ.update(HORIZON_VAR_DIR=str(VAR), DJANGO_SETTINGS_MODULE="standalone.settings")
os.environ.pop("QUEUE_REDIS_URL", None)
sys.path.insert(0, str(ROOT))
PY = sys.executable
JOBS = [("billing.jobs.send_invoice", "send_invoice", 0.6),
        ("media.jobs.resize_image", "resize_image", 0.25),
        ("crm.jobs.sync_contact", "sync_contact", 0.15)]
ERRORS = ["TimeoutError: SMTP server did not answer", "ValueError: invoice has no lines",
          "ConnectionError: payment provider refused", "KeyError: 'contact_id'",
          "PermissionError: bucket media-prod denied"]


def manage(*args: str) -> None:
    subprocess.run([PY, str(ROOT / "manage.py"), *args], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)


def entry(rng: random.Random, pushed: float, **extra) -> dict:
    job, name, _ = rng.choices(JOBS, weights=[w for *_, w in JOBS])[0]
    return {"attempts": 0, "uuid": f"{rng.getrandbits(128):032x}", "displayName": name,
            "job": job, "maxTries": 3, "backoff": [5, 30, 120], "timeout": 60,
            "pushedAt": pushed, "tags": [f"customer:{rng.randint(1, 40)}"],
            "args": [rng.randint(1000, 9999)], "kwargs": {}, **extra}


def populate() -> None:
    import django

    django.setup()
    from django.contrib.auth.models import User

    from horizon import attempts
    from horizon.repositories import counters, events, horizon_client, metrics
    from horizon.repositories.counters import outcome_call
    from queueing import connections
    from queueing.state import failed
    from queueing.entries.payload import encode

    # The picture's jobs are not registered in this site; count them under their names
    # (a real site's workers count registered jobs by name, others as "(unregistered)").
    counters.job_label = lambda name: name or "(malformed)"
    User.objects.create_superuser("admin", password="screenshots")
    rng = random.Random(25)
    client, driver = horizon_client(), connections.redis_driver("redis")
    now = time.time()
    start = now - 24 * 3600
    labels = ["redis:high", "redis:default", "redis:low"]
    outage = range(8 * 60 + 10, 8 * 60 + 22)  # minutes Redis was away: nothing finished
    deploy = 16 * 60 + 30  # horizon_terminate, then the master started again
    for minute in range(24 * 60):
        t = start + minute * 60
        hour = minute / 60
        backlog = hour > 20  # the past four hours: more arrives than the workers clear
        done = []
        stopped = minute in outage or deploy <= minute < deploy + 3
        for n in range(0 if stopped else rng.randint(40, 70) if not backlog
                       else rng.randint(25, 40)):
            data = entry(rng, t - 5)
            queue = rng.choice(["default"] * 5 + ["high"])
            done.append(metrics.CompletedJob(data["job"], data["uuid"], f"redis:{queue}",
                                             rng.uniform(0.05, 0.4), t + n / 100,
                                             encode(data)))
        script, keys_, args = metrics.completions_call(client, done, keep_seconds=3600)
        script(keys=keys_, args=args)
        for item in done[::4]:  # waits of first deliveries, longer as the backlog grows
            wait = rng.uniform(0.5, 3) + (max(hour - 20, 0) * 600 if backlog else 0)
            call = outcome_call(client, queue_label=item.label, job=item.name, kind="done",
                                runtime=item.runtime, wait=wait)
            call[0](keys=call[1], args=call[2])
        for _ in range(rng.choice([0, 0, 1, 2]) + (3 if 13 < hour < 14 else 0)):
            call = outcome_call(client, queue_label="redis:default", kind="failed",
                                job=rng.choice(JOBS)[0], runtime=0.1, wait=None)
            call[0](keys=call[1], args=call[2])
        if backlog:
            driver.push_many("default", [encode(entry(rng, t)) for _ in range(17)])
            if minute % 3 == 0:
                driver.push_many("high", [encode(entry(rng, t))])
        metrics.take_snapshots(client, now=t + 59, queues=labels)
    events.record("outage", "Horizon's Redis (redis) did not answer master 'web-1' for "
                  f"{len(outage) * 60} s", at=start + outage[0] * 60,
                  until=start + (outage[-1] + 1) * 60)
    events.record("terminate", "horizon_terminate: web-1 (by deploy (cli))",
                  at=start + deploy * 60 + 5)
    events.record("master_stop", "master 'web-1' stopped on web-1.internal",
                  at=start + deploy * 60 + 40)
    events.record("master_start", "master 'web-1' started on web-1.internal (pid 4242)",
                  at=start + (deploy + 3) * 60 - 20)
    events.record("restart", "queue_restart: every worker stops after its current job "
                  "(by deploy (cli))", at=start + (20 * 60 + 45) * 60)
    driver.push_many("low", [encode(entry(rng, now - 600)) for _ in range(180)])
    for i in range(60):
        driver.later("default", encode(entry(rng, now - 60)), now + 120 + i * 90)
    for i in range(12):
        data = entry(rng, now - 400, attempts=rng.choice([1, 2]))
        driver.later("default", encode(data), now + 20 + i * 25)
        attempts.record(data["uuid"], {"attempt": data["attempts"], "at": now - 30,
                                       "worker": "web-1:5102:supervisor-1",
                                       "outcome": "released", "queue": "redis:default",
                                       "error": rng.choice(ERRORS[:3]) + "\n\nTraceback ..."})
    for _ in range(140):
        data = entry(rng, now - 7200, attempts=3)
        error = rng.choices(ERRORS, weights=[40, 25, 20, 10, 5])[0]
        failed.record(connection="redis", queue=rng.choice(["default", "default", "high"]),
                      raw=encode(data), job_uuid=data["uuid"], job_name=data["job"],
                      exception=f"{error}\n\nTraceback (most recent call last): ...")
    driver.pause("low")


def publish() -> None:
    from horizon.repositories import horizon_client, state

    client = horizon_client()
    state.publish_master(client, state.MasterState(
        name="web-1", pid=4242, host="web-1.internal", status="running",
        started_at=time.time() - 5 * 3600, environment="production",
        supervisors=["supervisor-1"]))
    state.publish_supervisor(client, state.SupervisorState(
        name="supervisor-1", master="web-1", status="running", connection="redis",
        queues=["high", "default", "low"], balance="auto",
        processes={"high": 1, "default": 3, "low": 0}, pids=[5101, 5102, 5103, 5104],
        options={"min_processes": 1, "max_processes": 4}))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    manage("migrate", "--noinput")
    manage("embedded_redis", "start")
    web = None
    try:
        populate()
        port = free_port()
        web = subprocess.Popen([PY, "-m", "gunicorn", "standalone.wsgi", "-b",
                                f"127.0.0.1:{port}", "-w", "2"], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)
        shoot(f"http://127.0.0.1:{port}")
    finally:
        if web is not None:
            web.terminate()
            web.wait()
        manage("embedded_redis", "stop")
        shutil.rmtree(VAR, ignore_errors=True)


def shoot(base: str) -> None:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("HORIZON_CHROMIUM") or shutil.which("chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium,
                                             args=["--headless=new", "--no-sandbox"])
        page = browser.new_page(viewport={"width": 1360, "height": 900}, base_url=base)
        page.goto("/login/?next=/")
        page.fill("#id_username", "admin")
        page.fill("#id_password", "screenshots")
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/")
        for name, path in (("overview", "/"), ("facets", "/jobs/pending/"),
                           ("metrics", "/metrics/?series=queue:redis:default&range=24h")):
            publish()
            page.goto(path)
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(ROOT / "docs" / f"{name}.png"), full_page=name == "metrics")
            print(f"docs/{name}.png")
        browser.close()


if __name__ == "__main__":
    main()
