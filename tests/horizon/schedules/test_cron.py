"""The pure cron parser and next-fire function, including daylight-saving changes."""
import datetime as dt

import pytest

from horizon.schedules.cron import CronError, Interval, next_fire, parse, parse_field

UTC = dt.UTC


def at(text, zone=UTC):
    return dt.datetime.fromisoformat(text).replace(tzinfo=zone)


def fires(expression, after, count=1, zone="UTC"):
    cron = parse(expression)
    out, current = [], at(after)
    for _ in range(count):
        current = next_fire(cron, current, zone)
        out.append(current.isoformat())
    return out


def test_fields_steps_ranges_lists_and_names():
    assert parse_field("*/15", 0, 59) == {0, 15, 30, 45}
    assert parse_field("1-5", 0, 6) == {1, 2, 3, 4, 5}
    assert parse_field("10-20/5", 0, 59) == {10, 15, 20}
    assert parse_field("50/5", 0, 59) == {50, 55}
    assert parse_field("1,15,31", 1, 31) == {1, 15, 31}
    assert parse_field("jan,JUN-aug", 1, 12, {"jan": 1, "jun": 6, "aug": 8}) == {1, 6, 7, 8}
    assert parse("0 0 * * 7").weekdays == {0}  # 7 is Sunday too
    assert parse("0 0 * * sun-tue").weekdays == {0, 1, 2}


@pytest.mark.parametrize("bad, reason", [
    ("* * * *", "has 4 fields"),
    ("60 * * * *", "outside 0-59"),
    ("*/0 * * * *", "step"),
    ("5-1 * * * *", "backwards"),
    ("x * * * *", "not a number"),
    ("0 0 30 2 *", "never fires"),
    ("1,,2 * * * *", "empty list item"),
])
def test_bad_expressions_say_why(bad, reason):
    with pytest.raises(CronError, match=reason):
        parse(bad)


def test_next_fire_is_strictly_after():
    assert fires("*/5 * * * *", "2026-01-01T10:00:00", 3) == [
        "2026-01-01T10:05:00+00:00", "2026-01-01T10:10:00+00:00", "2026-01-01T10:15:00+00:00"]
    assert fires("*/5 * * * *", "2026-01-01T10:04:59.5") == ["2026-01-01T10:05:00+00:00"]


def test_aliases_month_rollover_and_leap_day():
    assert fires("@monthly", "2026-12-15T00:00:00") == ["2027-01-01T00:00:00+00:00"]
    assert fires("@hourly", "2026-01-01T23:30:00") == ["2026-01-02T00:00:00+00:00"]
    assert fires("0 12 29 2 *", "2026-03-01T00:00:00") == ["2028-02-29T12:00:00+00:00"]


def test_day_of_month_or_day_of_week_when_both_are_restricted():
    # 13th of the month OR any Friday (2026-03-06 is a Friday)
    assert fires("0 0 13 * fri", "2026-03-01T00:00:00", 3) == [
        "2026-03-06T00:00:00+00:00", "2026-03-13T00:00:00+00:00", "2026-03-20T00:00:00+00:00"]
    # weekday only: Mondays
    assert fires("30 9 * * mon", "2026-03-01T00:00:00") == ["2026-03-02T09:30:00+00:00"]


def test_time_zone_wall_clock():
    # 09:00 in Paris is 08:00 UTC in winter and 07:00 UTC in summer
    assert fires("0 9 * * *", "2026-01-10T12:00:00", zone="Europe/Paris") == [
        "2026-01-11T08:00:00+00:00"]
    assert fires("0 9 * * *", "2026-07-10T12:00:00", zone="Europe/Paris") == [
        "2026-07-11T07:00:00+00:00"]


def test_spring_forward_gap():
    # Paris skips 02:00-03:00 on 2026-03-29. A fixed 02:30 job runs right after the gap
    # (03:30 CEST = 01:30 UTC); an every-half-hour job has no run in the gap.
    assert fires("30 2 * * *", "2026-03-28T12:00:00", 2, zone="Europe/Paris") == [
        "2026-03-29T01:30:00+00:00", "2026-03-30T00:30:00+00:00"]
    assert fires("*/30 * * * *", "2026-03-29T00:15:00", 3, zone="Europe/Paris") == [
        "2026-03-29T00:30:00+00:00", "2026-03-29T01:00:00+00:00", "2026-03-29T01:30:00+00:00"]


def test_fall_back_overlap():
    # Paris repeats 02:00-03:00 on 2026-10-25 (00:00-01:00 UTC twice over).
    # A fixed 02:30 job fires once, at the first pass; */30 keeps real-time steps.
    assert fires("30 2 * * *", "2026-10-24T12:00:00", 2, zone="Europe/Paris") == [
        "2026-10-25T00:30:00+00:00", "2026-10-26T01:30:00+00:00"]
    assert fires("*/30 * * * *", "2026-10-24T23:45:00", 5, zone="Europe/Paris") == [
        "2026-10-25T00:00:00+00:00", "2026-10-25T00:30:00+00:00", "2026-10-25T01:00:00+00:00",
        "2026-10-25T01:30:00+00:00", "2026-10-25T02:00:00+00:00"]


def test_intervals_are_epoch_aligned():
    every = Interval(10)
    assert every.next_after(1000.0) == 1010
    assert every.next_after(1009.99) == 1010
    assert Interval(1).next_after(5.5) == 6
