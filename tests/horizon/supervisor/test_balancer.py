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


# -- issue 31: hysteresis, and never a busy worker when an idle one can go ------------------
from horizon.supervisor.balancer import pick_to_stop, with_hysteresis  # noqa: E402


def test_a_pool_grows_at_once_and_shrinks_only_after_a_streak_of_lower_readings():
    targets, lows = with_hysteresis({"a": 7}, {"a": 9}, {}, patience=3)
    assert targets == {"a": 9} and lows == {}
    # a steady load whose backlog dips for one or two readings keeps its processes
    lows = {}
    for want in (6, 5):
        targets, lows = with_hysteresis({"a": 7}, {"a": want}, lows, patience=3)
        assert targets == {"a": 7}
    targets, lows = with_hysteresis({"a": 7}, {"a": 7}, lows, patience=3)
    assert targets == {"a": 7} and lows == {}, "a reading at its count ends the streak"
    for want in (6, 5):
        targets, lows = with_hysteresis({"a": 7}, {"a": want}, lows, patience=3)
    targets, lows = with_hysteresis({"a": 7}, {"a": 4}, lows, patience=3)
    assert targets == {"a": 6}, "to the most any reading of the streak wanted"
    assert lows == {}


def test_a_flapping_load_does_not_flap_the_pool():
    """The review's steady load: desired wobbles 6..8 around 7; without hysteresis every
    dip stopped a worker and the next reading started one."""
    current, lows, changes = {"a": 7}, {}, 0
    for want in [7, 6, 8, 7, 6, 7, 8, 6, 7, 7, 6, 8] * 5:
        targets, lows = with_hysteresis(current, {"a": want}, lows, patience=5)
        step = step_toward(current, targets, 1)
        changes += step != current
        current = step
    assert changes <= 12, changes  # only the rises (to 8) move it; it never sinks below 7
    assert current["a"] >= 7


def test_scaling_down_picks_idle_workers_before_busy_ones():
    workers = [(101, False), (102, True), (103, False), (104, True)]  # oldest first
    assert pick_to_stop(workers, 1) == [103], "the newest idle one"
    assert pick_to_stop(workers, 2) == [103, 101]
    assert pick_to_stop(workers, 3) == [103, 101, 104], "a busy one only when it must"
    assert pick_to_stop([(1, True), (2, True)], 1) == [2]
    assert pick_to_stop(workers, 0) == []
