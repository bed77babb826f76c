"""Issue 47, part 1: HORIZON['stop_timeout'] is checked, reaches every worker as
--stop-timeout, and sets the master's last resort; the stop clock's arithmetic."""
import pytest

from horizon.configuration.settings import HorizonConfigError, parse, settings_errors
from horizon.supervisor.master import KILL_GRACE
from horizon.supervisor.supervisor import Supervisor
from queueing.worker.process_control import SignalFlags
from queueing.worker.stopping import StopClock, stop_reason

BLOCK = {"connection": "redis", "supervisors": {"s1": {"queues": ["default"]}}}


def test_the_default_is_sixty_seconds_and_every_worker_gets_it():
    config = parse(BLOCK)
    assert config.stop_timeout == 60
    supervisor = Supervisor(config.supervisors[0], "m", stop_timeout=config.stop_timeout)
    assert "--stop-timeout=60" in supervisor.worker_arguments(("default",))
    assert parse({**BLOCK, "stop_timeout": 7.5}).stop_timeout == 7.5


@pytest.mark.parametrize("bad", [-1, "60", True, None, float("inf")])
def test_a_bad_stop_timeout_is_refused_with_the_top_level_check(bad):
    with pytest.raises(HorizonConfigError, match="stop_timeout"):
        parse({**BLOCK, "stop_timeout": bad})
    [error] = settings_errors({**BLOCK, "stop_timeout": bad})
    assert error.check_id == "horizon.E001"


def test_the_master_kills_only_past_the_stop_timeout_and_its_grace(rclient):
    from horizon.supervisor.master import Master

    master = Master(parse({**BLOCK, "stop_timeout": 12}), rclient)
    assert master.kill_after() == 12 + KILL_GRACE


def test_the_stop_clock_starts_at_the_first_stop_signal():
    flags = SignalFlags()
    clock = StopClock(flags, 5.0)
    assert clock.remaining() is None and not clock.due() and clock.waited() == 0
    flags._on_quit(15, None)
    first = flags.quit_at
    flags._on_quit(15, None)  # a second signal keeps the first one's clock
    assert flags.quit_at == first
    assert clock.remaining(first + 2) == 3.0 and not clock.due(first + 4.9)
    assert clock.due(first + 5) and clock.waited(first + 6) == 6
    assert stop_reason(6.2, 5) == "handed back by a stop after 6 s (the stop timeout is 5 s)"
