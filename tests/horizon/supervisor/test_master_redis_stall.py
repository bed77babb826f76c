"""The master rides out a Redis stall: 30 s of DEBUG SLEEP (a server busy with a slow
script, a fork on a big dataset, a VM paused) costs it no worker and no restart."""
import os
import threading
import time

import pytest
import redis

from horizon.repositories import state
from tests.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_the_master_survives_a_30_second_stall_without_losing_its_workers(
        spawn_worker, rclient, settings):
    try:
        rclient.execute_command("DEBUG", "SLEEP", "0")
    except redis.ResponseError as exc:
        pytest.skip(f"this server refuses DEBUG: {exc}")
    master = spawn_worker(command="horizon")
    wait_until(lambda: state.supervisors(rclient) and len(state.supervisors(rclient)[0].pids) >= 1,
               timeout=20, message="a running master with workers")
    wait_until(lambda: "started on redis" in master.output(), timeout=20,
               message="the worker ready (past its start-up checks)")
    time.sleep(1)
    before = set(state.supervisors(rclient)[0].pids)
    # Another client stalls the server; everyone else's calls wait (or time out) meanwhile.
    stall = redis.Redis.from_url(os.environ["TEST_REDIS_URL"])

    def sleep_30():
        try:
            stall.execute_command("DEBUG", "SLEEP", "30")
        except redis.TimeoutError:
            pass  # this client gave up; the server sleeps on all the same

    sleeper = threading.Thread(target=sleep_30)
    started = time.monotonic()
    sleeper.start()
    time.sleep(30)
    wait_until(lambda: stall.ping(), timeout=30, message="Redis answering again")
    assert time.monotonic() - started >= 30
    time.sleep(6)  # a few master turns after the stall
    assert master.running(), master.output()
    after = state.supervisors(rclient)[0]
    assert set(after.pids) == before, (
        f"workers were replaced during the stall: {before} -> {set(after.pids)}\n"
        + master.output())
    assert [m.pid for m in state.masters(rclient)] == [master.pid]
