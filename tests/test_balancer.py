"""The balancing math is pure: numbers in, process counts out."""
from horizon.supervisor.balancer import desired_processes, pool_names, step_toward


def desired(mode="auto", pending=None, runtime=None, low=1, high=10, queues=("a", "b")):
    return desired_processes(mode=mode, queues=queues, pending=pending or {},
                             runtime_ms=runtime or {}, min_processes=low, max_processes=high)


def test_idle_queues_sit_at_their_minimum():
    assert desired(pending={"a": 0, "b": 0}) == {"a": 1, "b": 1}
    assert desired(low=0, pending={}) == {"a": 0, "b": 0}


def test_auto_splits_spare_processes_by_time_to_clear():
    # a: 100 jobs x 10 ms = 1 s; b: 100 jobs x 30 ms = 3 s -> spare 8 split 2:6
    assert desired(pending={"a": 100, "b": 100}, runtime={"a": 10, "b": 30}) == {"a": 3, "b": 7}


def test_auto_never_gives_a_queue_more_processes_than_jobs():
    assert desired(pending={"a": 2, "b": 0}, runtime={"a": 1000}) == {"a": 2, "b": 1}


def test_auto_counts_unmeasured_backlog():
    assert desired(pending={"a": 50, "b": 0}) == {"a": 9, "b": 1}


def test_simple_splits_evenly_between_busy_queues():
    assert desired("simple", pending={"a": 100, "b": 100}, runtime={"a": 1, "b": 99}) == \
        {"a": 5, "b": 5}
    assert desired("simple", pending={"a": 100, "b": 0}) == {"a": 9, "b": 1}


def test_off_is_one_pool_scaled_by_total_backlog():
    assert pool_names("off", ["a", "b"]) == ["a,b"]
    assert desired("off", pending={"a": 3, "b": 2}) == {"a,b": 5}
    assert desired("off", pending={"a": 300}) == {"a,b": 10}
    assert desired("off", pending={}) == {"a,b": 1}


def test_total_never_exceeds_max_when_minimums_fit():
    result = desired(pending={"a": 1000, "b": 1000, "c": 1000}, queues=("a", "b", "c"), high=7)
    assert sum(result.values()) == 7 and min(result.values()) >= 1


def test_steps_are_bounded_by_max_shift():
    assert step_toward({"a": 1, "b": 5}, {"a": 4, "b": 1}, 1) == {"a": 2, "b": 4}
    assert step_toward({"a": 1}, {"a": 4}, 5) == {"a": 4}
    assert step_toward({}, {"a": 2}, 1) == {"a": 1}


def test_capacity_is_processes_times_concurrency():
    """A process running 8 jobs at once covers 8 pending jobs: 16 pending need 2, not 16."""
    from horizon.supervisor.balancer import desired_processes, processes_for

    assert processes_for(16, 8) == 2 and processes_for(17, 8) == 3 and processes_for(0, 8) == 0
    for mode in ("auto", "simple"):
        got = desired_processes(mode=mode, queues=["default"], pending={"default": 16},
                                runtime_ms={}, min_processes=1, max_processes=10,
                                concurrency=8)
        assert got == {"default": 2}
    assert desired_processes(mode="off", queues=["a", "b"], pending={"a": 30, "b": 10},
                             runtime_ms={}, min_processes=1, max_processes=10,
                             concurrency=8) == {"a,b": 5}
