"""Issue 51, item 2: events placed on a chart's time axis (pure), and the Metrics page
that draws them and lists the recent ones (Django's test client, real Redis)."""
import time

import pytest

from horizon.dashboard.metrics.charts import AXIS_LEFT, AXIS_RIGHT, line_chart
from horizon.repositories import events, metrics
from horizon.repositories.events import Event
from tests.helpers import text

SERIES = [(1000.0, 5.0), (1060.0, 0.0), (1120.0, 7.0)]


def completed(rclient, name: str, uuid: str, at: float, label: str = "redis:default") -> None:
    """One completion recorded as a worker records it, at `at`."""
    script, keys_, args = metrics.completion_call(
        rclient, job_name=name, uuid=uuid, label=label, runtime=0.01,
        payload={"uuid": uuid}, keep_seconds=3600, now=at)
    script(keys=keys_, args=args)


def test_an_event_is_placed_on_the_time_axis_of_the_chart():
    chart = line_chart(SERIES, 600, 220, axes=True,
                       events=[Event("terminate", 1030.0, "horizon_terminate: web-1")])
    (marker,) = chart.events
    inner = 600 - AXIS_LEFT - AXIS_RIGHT
    assert marker.x == pytest.approx(AXIS_LEFT + inner / 4, abs=0.1)
    assert not marker.band and marker.kind == "terminate"
    assert marker.label == "00:17 UTC · Terminate: horizon_terminate: web-1"


def test_events_outside_the_drawn_span_are_left_out_and_an_outage_is_a_clipped_band():
    chart = line_chart(SERIES, 120, 36, events=[
        Event("restart", 900.0, "before"), Event("restart", 1200.0, "after"),
        Event("outage", 950.0, "away", until=1060.0)])
    (band,) = chart.events
    assert band.band and band.kind == "outage"
    assert band.x == pytest.approx(4.0) and band.width == pytest.approx(56.0, abs=0.1)


def test_a_chart_of_one_snapshot_has_no_markers():
    assert line_chart(SERIES[:1], events=[Event("restart", 1000.0, "x")]).events == ()


@pytest.mark.django_db
def test_the_metrics_page_draws_and_lists_the_events(admin_client, rclient):
    now = time.time()
    for minute in range(4):
        completed(rclient, "app.jobs.Marked", f"u{minute}", now - 240 + minute * 60)
        metrics.take_snapshots(rclient, now=now - 240 + minute * 60)
    events.record("restart", "queue_restart: every worker stops after its current job",
                  at=now - 150)
    events.record("outage", "Horizon's Redis (redis) did not answer for 30 s",
                  at=now - 100, until=now - 70)
    events.record("master_start", "long ago", at=now - 6 * 86400)
    page = text(admin_client.get("/metrics/?series=job:app.jobs.Marked&range=1h"))
    assert page.count('class="event event-restart"') >= 3  # large charts and sparklines
    assert 'class="event-band"' in page
    assert "Workers restarted: queue_restart" in page
    assert page.count('class="event-row') == 3  # listed, even one outside the range
    assert page.index("Redis away") < page.index("Workers restarted</span>")  # newest first
    assert "long ago" in page and page.count("event-master_start") == 2  # row and pill only


@pytest.mark.django_db
def test_the_overview_sparkline_marks_the_events_and_names_the_latest(admin_client, rclient):
    now = time.time()
    for minute, labels in enumerate((("redis:default", "redis:high"), ("redis:default",),
                                     ("redis:default", "redis:high"))):
        for label in labels:
            completed(rclient, "app.jobs.Marked", f"u{minute}{label}",
                      now - 180 + minute * 60, label=label)
        metrics.take_snapshots(rclient, now=now - 180 + minute * 60)
    # every queue's throughput summed per snapshot: 2, 1, 2 jobs/min
    count, summed = metrics.queue_history(rclient, now - 3600)
    assert count == 5 and [v for _, v in summed] == [2.0, 1.0, 2.0]
    events.record("terminate", "horizon_terminate: web-1 (by ops (cli))", at=now - 90)
    page = text(admin_client.get("/"))
    assert 'aria-label="throughput of every queue, past hour"' in page
    assert 'class="event event-terminate"' in page
    assert "Terminate</a>" in page and "horizon_terminate: web-1" in page
    assert "1,891" not in page and '<p class="stat">5</p>' in page  # jobs past hour


@pytest.mark.django_db
def test_the_note_under_the_charts_names_the_last_five_events_only(admin_client, rclient):
    now = time.time()
    for minute in range(3):
        completed(rclient, "app.jobs.Busy", f"b{minute}", now - 3000)
        metrics.take_snapshots(rclient, now=now - 3000 + minute * 1400)
    for i in range(8):
        events.record("restart", f"deploy number {i}", at=now - 2900 + i * 60)
    page = text(admin_client.get("/metrics/?series=job:app.jobs.Busy&range=1h"))
    note = page[page.index("Marked on the charts:"):page.index('id="events"')]
    assert "3 earlier (see Recent events)" in note
    assert "deploy number 2" not in note and "deploy number 3" in note and "number 7" in note
