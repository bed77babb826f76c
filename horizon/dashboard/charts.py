"""Line charts as inline SVG geometry (pure: a series in, coordinates out).

The metrics page draws throughput and runtime over the stored snapshots on the server,
so there is no chart library to vendor and nothing runs in the browser. The template
only places the numbers this module computes into an <svg>.
"""
from __future__ import annotations

from dataclasses import dataclass


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

    @property
    def empty(self) -> bool:
        return self.points == 0


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


def line_chart(series: list[tuple[float, float]], width: int = 600, height: int = 160,
               pad: int = 4) -> Chart:
    """Scale (time, value) pairs, oldest first, into a `width` x `height` box."""
    if not series:
        return Chart(width, height, "", "", 1.0, None, 0, None, None)
    times = [t for t, _ in series]
    top = nice_ceiling(max(v for _, v in series))
    t0, t1 = min(times), max(times)
    span = (t1 - t0) or 1.0
    inner_w, inner_h = width - 2 * pad, height - 2 * pad

    def xy(t: float, v: float) -> str:
        x = pad + (t - t0) / span * inner_w if len(series) > 1 else width / 2
        y = pad + inner_h - (max(v, 0.0) / top) * inner_h
        return f"{x:.1f},{y:.1f}"

    coords = [xy(t, v) for t, v in series]
    line = " ".join(coords)
    left = coords[0].split(",")[0]
    right = coords[-1].split(",")[0]
    base = f"{height - pad:.1f}"
    area = f"{left},{base} {line} {right},{base}"
    return Chart(width, height, line, area, top, series[-1][1], len(series), t0, t1)
