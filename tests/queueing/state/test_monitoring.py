"""`queue_monitor`: per-queue counts and the oldest ready job's wait, an exit code for cron
past `--max`, and the `queue_busy` signal (Laravel's queue:monitor and QueueBusy)."""
import json
import subprocess
import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queueing.entries.payload import encode
from queueing.signals import queue_busy
from queueing.state import monitoring
from tests.conftest import ROOT, manage_command, subprocess_env
from tests.helpers import payload


def monitor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(manage_command("queue_monitor", *args), cwd=ROOT,
                          env=subprocess_env(HORIZON_TEST_DB_CONNECTIONS="0"),
                          capture_output=True, text=True, timeout=60)


def fill(driver, ready: int, delayed: int = 0, waited: float = 0.0) -> None:
    now = time.time()
    driver.push_many("default", [encode({**payload(), "availableAt": now - waited,
                                         "pushedAt": now - waited}) for _ in range(ready)])
    for i in range(delayed):
        driver.later("default", encode(payload()), now + 60 + i)


def test_max_sets_the_exit_code_and_json_carries_the_counts(driver):
    fill(driver, ready=5, delayed=2, waited=30)
    under = monitor("redis:default", "--max=7", "--json")
    assert under.returncode == 0, under.stderr
    reading = json.loads(under.stdout)["queues"][0]
    assert (reading["connection"], reading["queue"], reading["ready"], reading["delayed"],
            reading["reserved"], reading["size"]) == ("redis", "default", 5, 2, 0, 7)
    assert 29 <= reading["oldest_wait"] < 60
    over = monitor("redis:default", "--max=6", "--json")
    assert over.returncode == 1 and json.loads(over.stdout)["busy"] == ["redis:default"]
    table = monitor("--max=6")  # every queue of every connection, as a table
    assert table.returncode == 1 and "redis:default" in table.stdout and "OVER" in table.stdout


def test_queue_busy_is_sent_once_per_queue_over(driver):
    fill(driver, ready=3)
    heard = []

    def listener(**kwargs):
        heard.append((kwargs["connection"], kwargs["queue"], kwargs["size"], kwargs["most"]))

    queue_busy.connect(listener)
    try:
        with pytest.raises(SystemExit) as exited:
            call_command("queue_monitor", "redis:default", "--max=2")
    finally:
        queue_busy.disconnect(listener)
    assert exited.value.code == 1 and heard == [("redis", "default", 3, 2)]


def test_bad_names_and_options_are_clear_errors():
    with pytest.raises(CommandError, match="unknown queue connection 'nope'"):
        call_command("queue_monitor", "nope:default")
    with pytest.raises(CommandError, match="--max must be 0 or more"):
        call_command("queue_monitor", "--max=-1")
    assert monitor("redis:not/a/queue").returncode != 0


def test_an_empty_queue_reads_zero_and_over_is_pure():
    readings = monitoring.read([("redis", "default")])
    assert readings == [monitoring.QueueReading("redis", "default", 0, 0, 0, 0.0)]
    busy = monitoring.QueueReading("redis", "high", 4, 0, 1, 2.0)
    assert monitoring.over([readings[0], busy], 4) == [busy]
