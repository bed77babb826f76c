"""Issue 31, item 4: capacity is processes x slots; a stuck queue never reads "no wait"."""
from horizon.dashboard.shared import formatting
from horizon.queue_reads import capacity


def test_capacity_counts_slots():
    assert capacity.slots({"concurrency": 8}) == 8
    assert capacity.slots({}) == 1 and capacity.slots({"concurrency": True}) == 1
    assert capacity.capacity([(1, 8), (2, 1)]) == 10


def test_a_stalled_queue_waits_at_least_its_oldest_job_s_age():
    # 10 pending for 5 minutes behind one long job; no job has finished: runtime unknown
    assert capacity.expected_wait(10, 0.0, 1, 300.0) == 300.0
    assert capacity.expected_wait(100, 1000.0, 4, 2.0) == 25.0, "x runtime / slots"
    assert capacity.expected_wait(0, 1000.0, 1, 50.0) == 0.0


def test_backlog_growth_and_saturation():
    assert capacity.backlog_growing(3, 5) and not capacity.backlog_growing(5, 5)
    assert not capacity.backlog_growing(None, 5)
    assert capacity.saturated(8, 8) and not capacity.saturated(1, 8)
    assert not capacity.saturated(0, 0)


def test_counts_read_as_english():
    assert formatting.count(1, "process") == "1 process"
    assert formatting.count(4, "process") == "4 processes"
    assert formatting.count(1200, "job") == "1,200 jobs"
