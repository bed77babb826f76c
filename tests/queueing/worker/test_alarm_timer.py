"""The inline executor's timeout timer (execution.AlarmInterrupts): armed about once per
timeout for back-to-back jobs, never once per job, and still exact for each job."""
import signal
import time
from types import SimpleNamespace

import pytest

from queueing.worker.execution import AlarmInterrupts
from queueing.worker.process_control import TimeoutInterrupt


@pytest.fixture
def alarm():
    interrupts = AlarmInterrupts()
    previous = signal.signal(signal.SIGALRM, interrupts.on_alarm)
    yield interrupts
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def _prepared(timeout: float) -> SimpleNamespace:
    return SimpleNamespace(job=SimpleNamespace(uuid="u"), timeout=timeout)


def _sleep(seconds: float) -> None:
    time.sleep(seconds)  # a frame of the job's own, where an interrupt may land


def test_back_to_back_jobs_arm_the_timer_once(alarm, monkeypatch):
    calls = []
    real = signal.setitimer
    monkeypatch.setattr(signal, "setitimer", lambda *a: calls.append(a) or real(*a))
    for _ in range(50):
        assert alarm.call(_prepared(30.0), lambda: 7) == 7
    assert len(calls) == 1


def test_a_timer_left_by_an_earlier_job_does_not_cut_a_later_one_short(alarm):
    alarm.call(_prepared(0.3), lambda: None)  # leaves the timer ringing 0.3 s from now
    time.sleep(0.15)
    began = time.monotonic()
    with pytest.raises(TimeoutInterrupt):
        alarm.call(_prepared(0.3), _sleep, 2.0)  # the early ring is re-armed
    assert 0.28 <= time.monotonic() - began < 1.0


def test_a_job_without_a_timeout_ignores_a_timer_left_armed(alarm):
    alarm.call(_prepared(0.1), lambda: None)
    began = time.monotonic()
    alarm.call(_prepared(0.0), _sleep, 0.3)  # rings meanwhile: nothing raised
    assert time.monotonic() - began >= 0.3
    assert alarm.call(_prepared(0.2), lambda: 1) == 1  # armed again for its own deadline
