"""Issue 51: the balancer keeps its bounds. The step policy (bounded_scaling.plan) under
hypothesis, driven through a small simulation of pools whose stopped workers drain for a
while before they exit."""
from hypothesis import given, settings
from hypothesis import strategies as st

from horizon.supervisor.bounded_scaling import Limits, Memory, ceiling, plan

STEP = 3.0  # seconds between readings (balance_cooldown's default)
READINGS_PER_HOUR = int(3600 / STEP)


def simulate(wants, drains, *, pools, start, limits):
    """Run `plan` over a trace of desired counts; a stopped worker drains for its number
    of readings from `drains` (cycled). Yields (counts, draining, starts) per reading."""
    current, draining, memory = dict(start), [], Memory()
    drain_iter = iter(drains * (len(wants) * limits.ceiling + 1)) if drains else None
    for index, want in enumerate(wants):
        draining = [left - 1 for left in draining if left > 1]  # some exited meanwhile
        now = index * STEP
        out, memory = plan(current, dict(zip(pools, want)), draining=len(draining),
                           memory=memory, now=now, limits=limits)
        stopped = sum(max(current[p] - out[p], 0) for p in pools)
        started = sum(max(out[p] - current[p], 0) for p in pools)
        draining += [next(drain_iter) if drain_iter else 1 for _ in range(stopped)]
        current = out
        yield now, dict(current), len(draining), started, stopped


@st.composite
def traces(draw):
    pools = ["a", "b", "c"][: draw(st.integers(1, 3))]
    low = draw(st.integers(0, 2))
    high = draw(st.integers(1, 6))
    bound = ceiling(min_processes=low, max_processes=high, pools=len(pools))
    # any reading, even one that wants more than the bound (never below the minimum)
    want = st.tuples(*[st.integers(low, bound + 3) for _ in pools])
    wants = draw(st.lists(want, min_size=1, max_size=300))
    drains = draw(st.lists(st.integers(1, 8), min_size=1, max_size=10))
    shift = draw(st.integers(1, 3))
    return pools, low, bound, wants, drains, shift


@settings(max_examples=300, deadline=None)
@given(traces())
def test_for_any_load_trace_processes_and_draining_never_exceed_the_bound(trace):
    pools, low, bound, wants, drains, shift = trace
    limits = Limits(ceiling=bound, max_shift=shift)
    for _now, counts, draining, _started, _stopped in simulate(
            wants, drains, pools=pools, start=dict.fromkeys(pools, low), limits=limits):
        assert sum(counts.values()) + draining <= bound
        assert all(count >= 0 for count in counts.values())


@settings(max_examples=300, deadline=None)
@given(traces())
def test_scaling_never_starts_more_than_its_budget_in_any_window(trace):
    pools, low, bound, wants, drains, shift = trace
    limits = Limits(ceiling=bound, max_shift=shift)
    starts = []
    for now, _counts, _draining, started, _stopped in simulate(
            wants, drains, pools=pools, start=dict.fromkeys(pools, low), limits=limits):
        starts += [now] * started
        in_window = [t for t in starts if now - t < limits.start_window]
        # past the budget only an unserved pool starts one, and it gets there by a shrink
        # that waited fall_patience x 2 readings at least (30 s): twice a window per pool
        assert len(in_window) <= limits.starts_per_window + 2 * len(pools)


@settings(max_examples=200, deadline=None)
@given(traces(), st.data())
def test_a_steady_load_settles_scalings_per_hour_stay_within_a_ramp(trace, data):
    """A steady load (the same reading all hour) moves each pool once toward its level
    and then holds: at most one ramp's worth of scalings, however long it runs."""
    pools, low, bound, wants, drains, shift = trace
    level = wants[0]
    start = {p: data.draw(st.integers(low, max(low, bound // len(pools)))) for p in pools}
    limits = Limits(ceiling=bound, max_shift=shift)
    scalings = 0
    for _now, _counts, _draining, started, stopped in simulate(
            [level] * READINGS_PER_HOUR, drains, pools=pools, start=start, limits=limits):
        scalings += started + stopped
    assert scalings <= 2 * bound


def test_the_issue_trace_a_load_that_moves_between_queues_stays_within_two():
    """max_processes 2, min_processes 0, two queues: the load moves from a to b. Before,
    b grew at once while a waited out its streak: 4 processes, plus the draining ones."""
    limits = Limits(ceiling=ceiling(min_processes=0, max_processes=2, pools=2))
    wants = [(2, 0)] * 4 + [(0, 2)] * 8 + [(2, 0)] * 20
    seen = list(simulate(wants, [2], pools=["a", "b"], start={"a": 0, "b": 0},
                         limits=limits))
    assert max(sum(c.values()) + d for _n, c, d, _s, _t in seen) == 2
    assert seen[7][1] == {"a": 0, "b": 2}, "b grew as a's workers exited"
    assert seen[16][1] == {"a": 1, "b": 0}, "past the start budget a still gets one worker"
    assert seen[-1][1] == {"a": 2, "b": 0}, "and its second once the window has passed"


def test_a_bursty_load_keeps_its_workers_between_bursts():
    """min_processes 0, a burst every 30 s: each start lengthens the shrink's patience,
    so the workers stay instead of 25 starts in 4 minutes."""
    limits = Limits(ceiling=2)
    burst = [(2,)] * 2 + [(0,)] * 8  # 6 s of backlog, 24 s idle
    seen = list(simulate(burst * 8, [1], pools=["a"], start={"a": 0}, limits=limits))
    # the policy before issue 51 started 9 in these 4 minutes; now the pair stays
    assert sum(started for _n, _c, _d, started, _s in seen) == 2


def test_a_pool_grows_after_two_readings_unless_it_has_no_process():
    limits = Limits(ceiling=4)
    out, memory = plan({"a": 1}, {"a": 3}, draining=0, memory=Memory(), now=0, limits=limits)
    assert out == {"a": 1}, "one reading above starts nothing"
    out, memory = plan(out, {"a": 3}, draining=0, memory=memory, now=3, limits=limits)
    assert out == {"a": 2}
    out, memory = plan(out, {"a": 3}, draining=0, memory=memory, now=6, limits=limits)
    assert out == {"a": 3}, "the streak goes on: one step a reading"
    out, _ = plan({"a": 0}, {"a": 2}, draining=0, memory=Memory(), now=0, limits=limits)
    assert out == {"a": 1}, "nothing serves a: it grows at once"


def test_minimums_that_do_not_fit_under_max_set_the_bound():
    assert ceiling(min_processes=1, max_processes=1, pools=2) == 2
    assert ceiling(min_processes=0, max_processes=2, pools=2) == 2


def test_manage_check_warns_when_the_minimums_set_the_bound(settings):
    from django.core.checks import run_checks

    def warnings():
        return [e for e in run_checks() if e.id == "horizon.W002"]

    settings.HORIZON = {**settings.HORIZON, "supervisors": {"s": {
        "queues": ["high", "default", "low"], "min_processes": 1, "max_processes": 2}}}
    [warning] = warnings()
    assert "is 3 processes, above max_processes (2); it runs up to 3" in warning.msg
    settings.HORIZON = {**settings.HORIZON, "supervisors": {"s": {
        "queues": ["high", "default", "low"], "min_processes": 1, "max_processes": 2,
        "balance": "off"}}}
    assert warnings() == []
