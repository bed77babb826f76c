"""Workflows' promises under failure (issue 48, job controls): a chord's callback is sent
exactly once even when the worker sending it dies mid-way, and a chord member that
expires or is skipped is a defined outcome for the callback. Real Redis, real workers."""
import os
import signal
import time
from urllib.parse import urlparse

import pytest

from queueing import Batch, chord, group
from queueing.drivers.redis.keys import QueueKeys
from tests.helpers import queue_with
from tests.testapp import jobs, workflow_jobs
from tests.workers import stop_all, wait_until

pytestmark = [pytest.mark.django_db(transaction=True)]


def notes(label):
    return [n for n in jobs.notes() if n.get("label") == label]


@pytest.mark.slow
def test_a_worker_killed_while_sending_a_chords_callback_does_not_lose_it(
        spawn_worker, rclient, settings):
    """The callback goes to connection "proxy" (the same Redis through a TCP proxy the
    test freezes), so the worker running the chord's callback job hangs in the middle
    of sending it; the worker and its sidecar are then SIGKILLed (a host crash). When
    the job's lease lapses another worker runs it again: the callback must be sent then,
    once (before the fix, a "fired" mark set before the send made every later run
    return at once: DONE, and no callback ever)."""
    from tests.tcp_proxy import TcpProxy

    url = os.environ["TEST_REDIS_URL"]
    if not url.startswith("unix:"):
        pytest.skip("the proxy forwards to the plain test Redis's unix socket")
    proxy = TcpProxy(upstream_unix=urlparse(url).path)
    env = {"TEST_PROXY_URL": proxy.url, "TEST_RETRY_AFTER": "4",
           "TEST_SOCKET_TIMEOUT": "120", "TEST_SOCKET_CONNECT_TIMEOUT": "120"}
    try:
        with queue_with(settings, proxy={"driver": "redis", "url": proxy.url, "queues": "*"}):
            doomed = spawn_worker("--queue=default", "--tries=3", env=env)
            proxy.freeze()
            found = chord(group(workflow_jobs.square.s(i) for i in range(3)),
                          workflow_jobs.collect.using(connection="proxy", queue="chordcb")
                          .s("lost-callback")).dispatch()
            wait_until(lambda: len(notes("square")) == 3, timeout=30,
                       message="the members to run")
            # the callback job runs and reached its send: it opened its connection to
            # the proxy (nothing else in this worker uses that connection)
            reserved = QueueKeys.for_queue("default").reserved
            wait_until(lambda: any(b"queueing.workflows.chord_callback" in member
                                   for member in rclient.zrange(reserved, 0, -1)),
                       timeout=30, message="the chord's callback job to be taken")
            wait_until(lambda: proxy.connections >= 1, timeout=30,
                       message="the callback job to start sending")
            time.sleep(1.0)  # let it get as far as it can: it is stuck in the send
            os.killpg(doomed.pid, signal.SIGKILL)
            doomed.wait()
            proxy.thaw()
            survivor = spawn_worker("--queue=default,chordcb", "--tries=3", env=env)
            # its lease (4 s) lapses, the survivor runs the callback job again
            wait_until(lambda: notes("lost-callback"), timeout=60, interval=0.2,
                       message="the chord's callback to run")
            time.sleep(1.5)  # a second callback would come now
            called = notes("lost-callback")
            assert len(called) == 1, called
            assert called[0]["results"] == [0, 1, 4]
            assert Batch.find(found.id).finished
            stop_all([survivor])
    finally:
        proxy.close()


def test_a_callback_sent_once_is_not_sent_again_and_reads_no_results(rclient, driver):
    """A second run of the chord's callback job (its worker died after the send, before
    the acknowledgement) finds the claim the push created: nothing is pushed, and the
    results (dropped by the run that sent it) are not read, so the run does not fail."""
    from queueing.middleware.store import state_client
    from queueing.workflows.once import send_once

    control = state_client(driver)
    reads = []

    def values():
        reads.append(1)
        return [1, 4]

    callback = workflow_jobs.collect.using(queue="cb-once").s("once")
    assert send_once(control, "batch-once", callback, [], values) is True
    assert send_once(control, "batch-once", callback, [], values) is False
    assert reads == [1], "the second run read no results"
    assert driver.sizes("cb-once").pending == 1


def test_a_chord_member_that_expires_or_is_skipped_gives_the_callback_none(spawn_worker):
    """Issue 48: a member that expires (never started) or that its middleware skips is
    counted a success by its batch; its chord's callback gets None in its place (it
    used to fail with "no result kept", and a retry could not help)."""
    from tests.testapp import control_jobs

    found = chord(group(workflow_jobs.square.s(0),
                        workflow_jobs.square.using(expires=0.3).s(1),
                        control_jobs.skippable.s("member", True),
                        [workflow_jobs.square.s(3), control_jobs.skippable.s("link", True)],
                        workflow_jobs.square.s(4)),
                  workflow_jobs.collect.s("partial")).dispatch()
    time.sleep(0.6)  # member 1 is past its expiry before any worker is up
    worker = spawn_worker("--queue=default")
    wait_until(lambda: notes("partial"), timeout=30, message="the chord's callback")
    assert notes("partial")[0]["results"] == [0, None, None, None, 16]
    assert Batch.find(found.id).finished
    stop_all([worker])
