"""Line charts as inline SVG geometry (pure: a series in, coordinates out).

The metrics page draws throughput and runtime over the stored snapshots on the server,
so there is no chart library to vendor and nothing runs in the browser (the page's
Content-Security-Policy allows no inline script). The template only places the numbers
this module computes into an <svg>: the line, the axes with their labels and units, and
one hover target per snapshot whose value shows on hover or keyboard focus (CSS only).
"""
from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from horizon.repositories.events import Event

# Room around the plot of a chart with axes: labels left of the y axis, below the x axis.
AXIS_LEFT, AXIS_BOTTOM, AXIS_TOP, AXIS_RIGHT = 104, 24, 12, 14  # room for "12,500 jobs/min"
# A compressed scale shows this many times its top's range: a value 1/1000 of the top
# still rises a tenth of the height, 1/100 a third (log1p(value / top * LOG_RANGE)).
LOG_RANGE = 1000.0


@dataclass(frozen=True, slots=True)
class Tick:
    position: float  # y (value ticks) or x (time ticks) in the chart's coordinates
    label: str
    anchor: str = "middle"  # SVG text-anchor, so edge labels stay inside the box


@dataclass(frozen=True, slots=True)
class Point:
    x: float
    y: float
    label: str  # "12:03 UTC: 42 jobs/min"
    band: float  # left edge of its hover target
    band_width: float
    label_x: float
    label_y: float
    anchor: str


@dataclass(frozen=True, slots=True)
class Marker:
    """An event drawn on a chart (repositories/events.py): a vertical line at `x`, or
    for an outage a band `width` wide; `label` is its tooltip."""

    kind: str
    x: float
    width: float
    label: str

    @property
    def band(self) -> bool:
        return self.width > 0

    @property
    def hit_x(self) -> float:
        return self.x - 5 if not self.band else self.x  # a 10-px target for a line

    @property
    def hit_width(self) -> float:
        return self.width if self.band else 10.0


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    line: str  # polyline "x,y x,y ..."
    area: str  # polygon closing the line down to the x axis
    top: float  # the value of the top edge
    latest: float | None
    points: int
    first_time: float | None
    last_time: float | None
    # Charts drawn with axes (the metrics page's large charts) also have these:
    unit: str = ""
    plot: tuple[float, float, float, float] = (0, 0, 0, 0)  # left, top, right, bottom
    y_ticks: tuple[Tick, ...] = ()
    x_ticks: tuple[Tick, ...] = ()
    marks: tuple[Point, ...] = ()
    events: tuple[Marker, ...] = ()
    frame: tuple[float, float, float, float] = (0, 0, 0, 0)  # the plot's box, any chart

    @property
    def empty(self) -> bool:
        return self.points == 0

    @property
    def plot_height(self) -> float:
        return self.plot[3] - self.plot[1]

    @property
    def y_label_x(self) -> float:
        return self.plot[0] - 6

    @property
    def x_label_y(self) -> float:
        return self.height - 5

    @property
    def single(self) -> bool:
        """One snapshot: a value to show, but no line to draw yet."""
        return self.points == 1


def nice_ceiling(value: float) -> float:
    """The smallest 1/2/5 x 10^n at or above `value`, so axis labels are round."""
    if value <= 0:
        return 1.0
    magnitude = 1.0
    while magnitude * 10 <= value:
        magnitude *= 10
    while magnitude > value:
        magnitude /= 10
    for step in (1, 2, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


DURATION_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                  21600, 43200, 86400, 172800, 604800)  # seconds an axis may top out at


def nice_duration(seconds: float) -> float:
    """The smallest round duration at or above `seconds` (30 s, 15 min, 2 h), so a wait
    axis reads in whole units; halves of these are round too (pure)."""
    for step in DURATION_STEPS:
        if step >= seconds:
            return float(step)
    return nice_ceiling(seconds)


def clock(timestamp: float, days: bool = False) -> str:
    """A snapshot's time on the x axis: hours and minutes, UTC like the rest of the pages;
    with `days` (a chart spanning more than a day) the day comes first ("Mon 23 14:05")."""
    stamp = dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)
    return stamp.strftime("%a %d %H:%M" if days else "%H:%M")


def plain_number(value: float) -> str:
    if value >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:.2g}" if value < 1 else f"{value:.1f}"


def line_chart(series: list[tuple[float, float]], width: int = 600, height: int = 160,
               pad: int = 4, *, axes: bool = False, unit: str = "",
               value_text: Callable[[float], str] | None = None,
               top: float | None = None,
               ceiling: Callable[[float], float] = nice_ceiling,
               compressed: bool = False, events: Sequence[Event] = ()) -> Chart:
    """Scale (time, value) pairs, oldest first, into a `width` x `height` box.

    With `axes`, the plot leaves room for value ticks (0, half, top, labelled by
    `value_text`, else a number and `unit`) and time ticks, and every point gets a
    hover label with its time and value. `top` gives charts that are compared (a
    table of sparklines) one shared scale; `ceiling` rounds the top (durations use
    nice_duration). `events` within the drawn span become `Chart.events` (markers
    placed on the same time axis: an outage as a band). `compressed` draws on a
    logarithmic scale from 0 to `top`: on one linear scale a queue of 4 jobs/min
    beside one of 1,800 was a flat line at zero (issue 31), on this one it keeps its
    shape and still sits below the big one.
    """
    if not series:
        return Chart(width, height, "", "", 1.0, None, 0, None, None, unit)
    describe = value_text or (lambda v: f"{plain_number(v)} {unit}".strip())
    times = [t for t, _ in series]
    top = ceiling(max(max(v for _, v in series), top or 0.0))
    t0, t1 = min(times), max(times)
    span = (t1 - t0) or 1.0
    days = t1 - t0 > 86400
    if axes:
        left, upper, right, lower = AXIS_LEFT, AXIS_TOP, width - AXIS_RIGHT, height - AXIS_BOTTOM
    else:
        left, upper, right, lower = pad, pad, width - pad, height - pad
    inner_w, inner_h = right - left, lower - upper

    def x_of(t: float) -> float:
        return left + (t - t0) / span * inner_w if len(series) > 1 else left + inner_w / 2

    def y_of(v: float) -> float:
        share = max(v, 0.0) / top
        if compressed:
            share = math.log1p(share * LOG_RANGE) / math.log1p(LOG_RANGE)
        return upper + inner_h - share * inner_h

    coords = [(x_of(t), y_of(v)) for t, v in series]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    base = f"{lower:.1f}"
    area = f"{coords[0][0]:.1f},{base} {line} {coords[-1][0]:.1f},{base}"
    frame = (left, upper, right, lower)
    markers = place(events, t0, t1, x_of, days) if len(series) > 1 else ()
    if not axes:
        return Chart(width, height, line, area, top, series[-1][1], len(series), t0, t1,
                     unit, events=markers, frame=frame)

    y_ticks = tuple(Tick(round(y_of(v), 1), describe(v) if v else f"0 {unit}".strip())
                    for v in (0.0, top / 2, top))
    if len(series) > 1:
        x_ticks: tuple[Tick, ...] = (Tick(left, clock(t0, days), "start"),
                                     Tick(right, clock(t1, days), "end"))
        if inner_w > 300 and t1 - t0 >= 180:
            x_ticks = (x_ticks[0], Tick(left + inner_w / 2, clock((t0 + t1) / 2, days)),
                       x_ticks[1])
    else:
        x_ticks = (Tick(coords[0][0], clock(t0)),)
    marks = []
    step = inner_w / (len(series) - 1) if len(series) > 1 else inner_w
    for (t, v), (x, y) in zip(series, coords):
        band = max(left, x - step / 2)
        band_right = min(right, x + step / 2) if len(series) > 1 else right
        anchor = "start" if x - left < 90 else "end" if right - x < 90 else "middle"
        label_y = y - 10 if y - 10 > upper + 10 else y + 20
        marks.append(Point(round(x, 1), round(y, 1), f"{clock(t, days)} UTC: {describe(v)}",
                           round(band, 1), round(band_right - band, 1), round(x, 1),
                           round(label_y, 1), anchor))
    return Chart(width, height, line, area, top, series[-1][1], len(series), t0, t1, unit,
                 frame, y_ticks, x_ticks, tuple(marks), markers, frame)


def place(events: Sequence[Event], t0: float, t1: float, x_of: Callable[[float], float],
          days: bool = False) -> tuple[Marker, ...]:
    """The events that fall within [t0, t1] as markers on the axis `x_of` (pure); an
    outage that overlaps the span is a band clipped to it."""
    out = []
    for event in events:
        end = event.until if event.until is not None else event.at
        if end < t0 or event.at > t1:
            continue
        start, stop = max(event.at, t0), min(end, t1)
        x = x_of(start)
        width = max(x_of(stop) - x, 2.0) if event.until is not None else 0.0
        label = f"{clock(event.at, days)} UTC · {event.title}: {event.text}"
        out.append(Marker(event.kind, round(x, 1), round(width, 1), label))
    return tuple(out)
