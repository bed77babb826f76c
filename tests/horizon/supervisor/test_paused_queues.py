"""A paused queue: the supervisor does not grow its pool, the overview says it is paused."""
import pytest

from horizon.configuration.settings import parse_supervisor
from horizon.dashboard.overview import reads
from horizon.repositories import metrics
from horizon.supervisor import balancer
from horizon.supervisor.supervisor import Supervisor
from queueing import dispatch_many
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)


def supervisor() -> Supervisor:
    config = parse_supervisor("supervisor-1", {
        "queues": ["high", "default"], "balance": "auto", "min_processes": 1,
        "max_processes": 6}, "redis")
    return Supervisor(config, "test-master", log=lambda message: None)


def test_a_paused_queue_counts_as_idle_for_the_balancer(driver):
    dispatch_many([jobs.record.s(i) for i in range(50)])
    dispatch_many([jobs.record.using(queue="high").s(i) for i in range(3)])
    sup = supervisor()
    pending, _ = sup.load()
    assert pending == {"high": 3, "default": 50}

    driver.pause("default")
    pending, runtime = sup.load()
    assert pending == {"high": 3, "default": 0}
    desired = balancer.desired_processes(mode="auto", queues=("high", "default"),
                                         pending=pending, runtime_ms=runtime,
                                         min_processes=1, max_processes=6)
    assert desired["default"] == 1, "no growth for a queue no worker may take from"

    driver.resume("default")
    assert sup.load()[0]["default"] == 50


def test_the_overview_shows_a_paused_queue_as_paused_not_as_waiting(driver, rclient, settings):
    settings.HORIZON = {**settings.HORIZON,
                        "supervisors": {"supervisor-1": {"queues": ["high", "default"]}}}
    script, keys_, args = metrics.completion_call(
        rclient, job_name="tests.testapp.jobs.record", uuid="u1", label="redis:default",
        runtime=2.0, payload={}, keep_seconds=60, now=1.0)
    script(keys=keys_, args=args)
    dispatch_many([jobs.record.s(i) for i in range(10)])
    assert reads.overview().max_wait_queue.name == "default"

    driver.pause("default")
    view = reads.overview()
    row = next(r for r in view.queues if r.ref.name == "default")
    assert row.paused and row.wait_text == "paused"
    assert view.max_wait_queue is None and view.max_wait_text == "—"
    assert [r.name for r in view.paused_queues] == ["default"]
