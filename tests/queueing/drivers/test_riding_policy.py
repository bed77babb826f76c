"""The pause policy a sentinel connection's writes ride a primary switch with
(queueing/drivers/redis/riding.py ``next_pause``), shared by ``Rider.call`` and
``Rider.acall``. A pure function: no Redis needed; the rides themselves are tested on
real servers in test_sentinel.py and test_sentinel_failover.py."""
from queueing.drivers.redis.riding import FIRST_PAUSE, LONGEST_PAUSE, next_pause


def test_pauses_double_from_the_first_up_to_the_longest():
    pauses = [next_pause(failed, deadline=100.0, now=0.0) for failed in range(1, 8)]
    assert pauses == [FIRST_PAUSE, 0.1, 0.2, 0.4, LONGEST_PAUSE, LONGEST_PAUSE, LONGEST_PAUSE]


def test_a_pause_never_passes_the_deadline():
    assert next_pause(1, deadline=10.0, now=9.98) == 10.0 - 9.98
    assert next_pause(9, deadline=10.0, now=9.75) == 0.25


def test_at_or_after_the_deadline_there_is_no_pause_the_error_is_raised():
    assert next_pause(1, deadline=10.0, now=10.0) is None
    assert next_pause(3, deadline=10.0, now=12.5) is None


def test_a_long_ride_stays_at_the_longest_pause():
    assert next_pause(10_000, deadline=1e9, now=0.0) == LONGEST_PAUSE
