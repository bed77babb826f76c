"""A Redis primary switch under load, on real servers (tests/local_sentinel.py): a planned
switch (SENTINEL FAILOVER) and a crash (the primary SIGKILLed), while two workers with four
slots each run jobs and the test dispatches 100 jobs a second; and the master and the
dashboard across a switch.

Jobs record themselves in a file (``append_line``: label and attempt), outside Redis, so a
job lost with the old primary's unreplicated writes cannot hide. Each test starts its own
group: a switch leaves the servers in a state the next test should not inherit.
"""
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.urls import reverse

from horizon.repositories import state
from queueing.models import FailedJob
from tests.helpers import client_with, start_master
from tests.local_sentinel import LocalSentinel
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

RATE = 100  # dispatches a second
RETRY_AFTER = 10  # a lease lost with the old primary comes back this fast


def use(settings, block: dict) -> None:
    queue = {**settings.QUEUE, "connections": {**settings.QUEUE["connections"]}}
    queue["connections"]["redis"] = block
    settings.QUEUE = queue


def ran(path: Path) -> list[tuple[int, int]]:
    """(label, attempt) of every run so far."""
    if not path.exists():
        return []
    return [(int(a), int(b)) for a, b in
            (line.split() for line in path.read_text().splitlines() if line.strip())]


class Load:
    """Dispatches RATE jobs a second, each from a thread of a pool, so a .delay() that
    waits out a switch does not hold back the ones after it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.returned: dict[int, float] = {}  # label -> when its .delay() returned
        self.started: dict[int, float] = {}
        self.raised: list[tuple[int, str]] = []
        self.pool = ThreadPoolExecutor(64)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Load":
        self.thread.start()
        return self

    def _run(self) -> None:
        label, due = 0, time.monotonic()
        while not self.stopping.is_set():
            self.pool.submit(self._one, label)
            label += 1
            due += 1 / RATE
            time.sleep(max(0.0, due - time.monotonic()))

    def _one(self, label: int) -> None:
        self.started[label] = time.time()
        try:
            jobs.append_line.delay(str(self.path), label)
        except Exception as exc:
            self.raised.append((label, f"{type(exc).__name__}: {exc}"))
        else:
            self.returned[label] = time.time()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(5)
        self.pool.shutdown(wait=True)


def start_workers(spawn_worker, block: dict):
    env = {"TEST_SENTINEL_CONNECTION": json.dumps(block)}
    return [spawn_worker("--quiet", "--concurrency=4", "--timeout=5", env=env)
            for _ in range(2)]


def under_load(group, acks: int, settings, spawn_worker, tmp_path):
    """Two workers on the group's connection (`acks` replica acknowledgements) and a
    dispatching load, once 300 of its jobs have run: (the run log, workers, load)."""
    block = group.connection(replica_acks=acks, retry_after=RETRY_AFTER, block_for=1,
                             switch_wait=20)
    use(settings, block)
    path = tmp_path / "ran.txt"
    workers = start_workers(spawn_worker, block)
    load = Load(path).start()
    wait_until(lambda: len(ran(path)) >= 300, timeout=30, message="300 jobs run")
    return path, workers, load


def stop_workers(workers) -> None:
    import signal
    for worker in workers:
        assert worker.running(), worker.output()  # it never exited on its own
        worker.send(signal.SIGTERM)
    for worker in workers:
        assert worker.wait(60) == 0, worker.output()


@pytest.mark.parametrize("acks", [1, 0])
def test_sentinel_failover_under_load_stalls_and_loses_nothing(
        acks, settings, spawn_worker, tmp_path):
    """SENTINEL FAILOVER while jobs run and 100 a second are dispatched: no .delay()
    raises, every job runs, none fails, the workers carry on, and jobs dispatched after
    the switch run from the new primary. replica_acks=1 with one replica: a write the
    old primary took after the replica was promoted is never acknowledged, so it is
    sent again to the new primary. Without it, what lands on the old primary between
    the promotion and a client's next look at the sentinels (under a second) can be
    lost: measured and printed, everything else asserted (docs/operations.md)."""
    with LocalSentinel() as group:
        path, workers, load = under_load(group, acks, settings, spawn_worker, tmp_path)
        old = group.primary_port()
        new = group.failover()
        switched_at = time.time()
        time.sleep(15)
        load.stop()
        assert load.raised == []
        returned = set(load.returned)
        if acks:
            wait_until(lambda: returned <= {label for label, _ in ran(path)}, timeout=60,
                       interval=0.2, message="every dispatched job to run")
        else:
            time.sleep(RETRY_AFTER + 5)
        lost = returned - {label for label, _ in ran(path)}
        after = {label for label, at in load.started.items() if at > switched_at + 2}
        assert len(after) > 500 and after <= {label for label, _ in ran(path)}
        assert group.primary_port() == new != old
        assert group.server(new).client().info("stats")["total_commands_processed"] > 0
        stop_workers(workers)
        assert FailedJob.objects.count() == 0
        runs = ran(path)
        if acks:
            assert lost == set()
        print(f"SENTINEL FAILOVER, replica_acks={acks}: {len(returned)} dispatched, "
              f"{len(lost)} lost, "
              f"{len(runs) - len(set(runs))} duplicate line(s), "
              f"{len(runs) - len({label for label, _ in runs})} run(s) twice")


@pytest.mark.parametrize("acks", [1, 0])
def test_a_sigkilled_primary_loses_no_acknowledged_dispatch(
        acks, settings, spawn_worker, tmp_path):
    """The primary SIGKILLed under the same load. With replica_acks=1 every job whose
    .delay() returned runs at least once; without it the loss is measured and printed
    (the writes the replicas had not received yet)."""
    with LocalSentinel(replicas=2) as group:
        path, workers, load = under_load(group, acks, settings, spawn_worker, tmp_path)
        died, new = group.kill_primary()
        time.sleep(10)
        load.stop()
        returned = set(load.returned)
        settle = lambda: returned - {label for label, _ in ran(path)}  # noqa: E731
        if acks:
            assert load.raised == []
            wait_until(lambda: not settle(), timeout=60, interval=0.2,
                       message="every acknowledged job to run")
        else:
            time.sleep(RETRY_AFTER + 5)
        lost = settle()
        stop_workers(workers)
        print(f"SIGKILL, replica_acks={acks}: {len(returned)} returned, {len(lost)} lost, "
              f"{len(load.raised)} raised")
        if acks:
            assert lost == set()


def test_the_master_and_the_dashboard_carry_on_across_a_switch(
        settings, spawn_worker, tmp_path):
    with LocalSentinel() as group:
        block = group.connection(block_for=1)
        use(settings, block)
        master = start_master(spawn_worker, TEST_SENTINEL_CONNECTION=json.dumps(block))
        client = group.server(group.primary_port()).client()
        wait_until(lambda: state.overall_status(client) == "running", timeout=30,
                   message="the master to publish itself")
        staff = client_with("view_dashboard")
        assert staff.get(reverse("horizon:overview")).status_code == 200
        old = group.primary_port()
        new = group.failover()
        path = tmp_path / "ran.txt"
        jobs.append_line.delay(str(path), 1)
        wait_until(lambda: ran(path) == [(1, 1)], timeout=30, message="a job after the switch")
        wait_until(lambda: "the Redis primary is now" in master.output(), timeout=30,
                   message="the master to notice the switch")
        assert master.running()
        new_client = group.server(new).client()
        wait_until(lambda: state.overall_status(new_client) == "running", timeout=30,
                   message="the master's state on the new primary")
        page = staff.get(reverse("horizon:overview")).content.decode()
        assert f"now 127.0.0.1:{new}, was 127.0.0.1:{old}" in page
        assert "switched at" in page
