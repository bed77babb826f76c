"""Issue 51, item 3: the Workers page shows each worker process's start time and
resident memory beside the memory limit that restarts it; a real master publishes them."""
import json
import re
import time

import pytest

from horizon import keys
from horizon.dashboard.workers.processes import process_rows
from horizon.repositories import state
from tests.helpers import publish, start_master, superuser_client
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def sup_with(workers, memory=128):
    return state.SupervisorState(
        name="supervisor-1", master="web-1", status="running", connection="redis",
        queues=["default"], balance="auto", processes={"default": len(workers)},
        pids=[w["pid"] for w in workers], options={"memory": memory}, workers=workers)


def test_rows_show_memory_of_the_limit_oldest_first_and_mark_one_near_it():
    now = time.time()
    rows = process_rows(sup_with([
        {"pid": 12, "pool": "default", "started_at": now - 5, "memory_mb": 110.4},
        {"pid": 11, "pool": "default", "started_at": now - 600, "memory_mb": 61.0,
         "draining": True},
        {"pid": 13, "pool": "default", "started_at": now - 1, "memory_mb": None}]), now)
    assert [r.pid for r in rows] == [11, 12, 13]
    assert (rows[0].memory, rows[0].limit, rows[0].near_limit, rows[0].draining) == \
        ("61 MB", "of 128 MB", False, True)
    assert rows[1].near_limit, "110 of 128 MB: past 80%, it restarts soon"
    assert rows[2].memory == "unknown" and rows[0].started.relative == "10 min ago"
    assert process_rows(sup_with([{"pid": 1, "memory_mb": 50}], memory=0))[0].limit == ""


def test_a_newer_masters_state_with_unknown_fields_still_reads(rclient):
    publish(rclient)
    name = state.supervisors(rclient)[0].key
    blob = json.loads(rclient.get(keys.supervisor(name)))
    rclient.set(keys.supervisor(name), json.dumps({**blob, "from_the_future": 1}))
    assert state.supervisors(rclient)[0].name == "supervisor-1"


def test_a_real_master_publishes_its_workers_memory_and_the_page_shows_it(spawn_worker,
                                                                          rclient):
    start_master(spawn_worker)

    def published():
        found = state.supervisors(rclient)
        workers = found[0].workers if found else []
        # a process a moment after its fork has barely any memory: wait for Django's
        return workers if workers and all((w.get("memory_mb") or 0) > 5
                                          for w in workers) else None

    [worker] = wait_until(published, timeout=30, message="a worker with its memory")
    assert worker["memory_mb"] < 1000 and abs(time.time() - worker["started_at"]) < 60
    page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ",
                                      superuser_client().get("/workers/").content.decode()))
    assert " MB of 128 MB" in page  # its memory now (it moves between two reads)
    assert str(worker["pid"]) in page and "Worker processes" in page
