"""Control commands refuse mistakes with a clear message and a non-zero exit."""
import copy

import pytest
from django.core.management import call_command

from horizon.repositories import state
from queueing.dispatching import registry
from queueing.dispatching.jobs import job
from queueing.drivers.redis.keys import QueueKeys
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_pausing_an_unknown_supervisor_exits_1_and_lists_the_running_ones(spawn_worker,
                                                                         rclient):
    spawn_worker(command="horizon")
    wait_until(lambda: state.supervisors(rclient), timeout=20, message="a supervisor")
    for command in ("horizon_pause_supervisor", "horizon_continue_supervisor"):
        wrong = spawn_worker("nope", command=command)
        assert wrong.wait() == 1
        assert "unknown supervisor 'nope'; running supervisors: supervisor-1" in wrong.output()
    assert state.supervisors(rclient)[0].status == "running"


def test_supervisor_commands_without_a_master_say_so(spawn_worker):
    wrong = spawn_worker("supervisor-1", command="horizon_pause_supervisor")
    assert wrong.wait() == 1
    assert "no Horizon master is running" in wrong.output()


UNREACHABLE = {"TEST_REDIS_URL": "redis://127.0.0.1:1/0"}  # port 1: nothing listens


def test_status_has_its_own_exit_code_when_redis_cannot_be_reached(spawn_worker):
    status = spawn_worker(command="horizon_status", env=UNREACHABLE)
    assert status.wait(30) == 3
    out = status.output()
    assert "cannot reach Redis" in out and "127.0.0.1:1" in out
    assert "paused" not in out and "inactive" not in out


def test_control_commands_report_unreachable_redis_without_a_traceback(spawn_worker):
    pause = spawn_worker(command="horizon_pause", env=UNREACHABLE)
    assert pause.wait(30) == 3
    assert "cannot reach Redis" in pause.output() and "Traceback" not in pause.output()


def test_a_redis_password_is_never_printed(spawn_worker):
    status = spawn_worker(command="horizon_status",
                          env={"TEST_REDIS_URL": "redis://:s3cret@127.0.0.1:1/0"})
    assert status.wait(30) == 3
    assert "s3cret" not in status.output() and "***" in status.output()


@pytest.mark.parametrize("command", [
    ("runworker", "--queue="),
    ("runworker", "--queue=,"),
    ("queue_size", "--queue="),
    ("queue_clear", "--queue=", "--force"),
])
def test_an_empty_queue_option_is_refused(spawn_worker, rclient, command):
    from queueing import dispatch_many
    from tests.testapp import jobs

    dispatch_many([jobs.record.s("kept")])
    name, *args = command
    refused = spawn_worker(*args, command=name)
    assert refused.wait(30) == 1, refused.output()
    assert "queue" in refused.output().lower()
    assert rclient.llen(QueueKeys.for_queue("default").ready) == 1  # nothing cleared or run


@pytest.mark.parametrize("command", [
    ("runworker", "nope"),
    ("queue_pause", "default", "--connection=nope"),
    ("queue_size", "nope"),
])
def test_an_unknown_connection_is_refused_listing_the_configured(spawn_worker, command):
    name, *args = command
    refused = spawn_worker(*args, command=name)
    assert refused.wait(30) == 1
    assert "unknown queue connection 'nope'; configured: null, redis, sync" in \
        refused.output()


def test_a_worker_that_cannot_reach_redis_exits_1_before_reporting_ready(spawn_worker):
    """It waits for Redis as a running worker would (--reconnect-timeout), saying so,
    then gives up with exit 1, never having reported ready."""
    refused = spawn_worker("--reconnect-timeout=2", command="runworker", env=UNREACHABLE)
    assert refused.wait(30) == 1
    assert "waiting for Redis for connection 'redis'" in refused.output()
    assert "cannot reach Redis for connection 'redis'" in refused.output()


def with_allowlist(settings, queues):
    value = copy.deepcopy(settings.QUEUE)
    value["connections"]["redis"]["queues"] = queues
    settings.QUEUE = value


@pytest.fixture
def typo_job():
    @job(queue="hgih", name="tests.typo_job")
    def typo():
        pass

    yield typo
    registry._registry.pop("tests.typo_job", None)


def test_check_warns_about_a_job_queue_its_connection_refuses(settings, typo_job, capsys):
    with_allowlist(settings, ["high", "default", "low"])  # "low": the TASKS backend's
    call_command("check", tags=["queueing"])
    err = capsys.readouterr().err
    assert "queueing.W002" in err
    assert "queue='hgih', which its connection 'redis' does not accept" in err
    assert "accepted now: high, default, low" in err


def test_check_warns_about_a_job_naming_an_unknown_connection(capsys):
    @job(queue="default", connection="redsi", name="tests.typo_connection")
    def typo():
        pass

    try:
        call_command("check", tags=["queueing"])
    finally:
        registry._registry.pop("tests.typo_connection", None)
    err = capsys.readouterr().err
    assert "queueing.W003" in err and "'redsi', which is not configured" in err


def test_check_is_quiet_when_a_connection_accepts_the_queue(settings, typo_job, capsys):
    with_allowlist(settings, ["high", "default", "low", "hgih"])
    call_command("check", tags=["queueing"])
    assert "'tests.typo_job'" not in capsys.readouterr().err  # other test jobs may use 'low'


def test_queue_commands_list_the_accepted_queues(spawn_worker, settings):
    # through a subprocess the allowlist comes from settings, so use the env override
    refused = spawn_worker("hgih", command="queue_pause",
                           env={"TEST_QUEUE_ALLOWLIST": "high,default,low"})
    assert refused.wait(30) == 1
    assert "unknown queue 'hgih' on connection 'redis'; it accepts: high, default, low" in \
        refused.output()
