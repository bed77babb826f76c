"""The dispatch circuit (queueing/drivers/circuit.py), pure: the clock is passed in."""
from queueing.drivers.circuit import Circuit


def test_a_failure_opens_it_and_one_probe_tries_again_after_the_wait():
    circuit = Circuit(retry_after=10)
    assert circuit.allows(0) and not circuit.is_open
    assert circuit.failed(0) is True  # the switch
    assert not circuit.allows(5)
    assert circuit.allows(10)  # the probe
    assert not circuit.allows(10.1)  # the others wait for the probe's answer
    assert circuit.failed(11) is False  # still open: no second switch
    assert not circuit.allows(20) and circuit.allows(21)
    assert circuit.succeeded() is True and circuit.allows(21) and not circuit.is_open
    assert circuit.failures == 0


def test_a_success_while_closed_is_no_switch():
    circuit = Circuit(retry_after=1)
    assert circuit.succeeded() is False
