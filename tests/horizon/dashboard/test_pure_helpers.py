"""The dashboard's pure helpers: masking, paging, formatting, charts, queue matching."""
import pytest

from horizon.dashboard.jobs.listings import matches
from horizon.dashboard.metrics import charts
from horizon.dashboard.shared import formatting, masking, paging
from horizon.queue_reads.queues import QueueRef, processes_for
from horizon.repositories.state import SupervisorState


# -- masking ------------------------------------------------------------------------------
def test_secret_looking_keys_are_masked_at_any_depth():
    data = {"kwargs": {"password": "hunter2", "api_key": "abc", "Authorization": "Bearer x",
                       "nested": [{"refresh_token": "t", "client_secret": "s", "ok": 1}],
                       "user": "alice", "empty_password": ""},
            "args": [1, "two"]}
    masked = masking.mask(data)
    assert masked["kwargs"]["password"] == masking.MASK
    assert masked["kwargs"]["api_key"] == masking.MASK
    assert masked["kwargs"]["Authorization"] == masking.MASK
    assert masked["kwargs"]["nested"][0] == {"refresh_token": masking.MASK,
                                             "client_secret": masking.MASK, "ok": 1}
    assert masked["kwargs"]["user"] == "alice"
    assert masked["kwargs"]["empty_password"] == ""  # nothing to hide; shows it was empty
    assert masked["args"] == [1, "two"]
    assert data["kwargs"]["password"] == "hunter2", "the input is not modified"


def test_non_string_secret_values_are_masked_too():
    assert masking.mask({"token": 12345, "secret": {"a": 1}}) == {
        "token": masking.MASK, "secret": masking.MASK}


@pytest.mark.parametrize("text, expected", [
    ("redis://:s3cret@cache:6379/0", "redis://:********@cache:6379/0"),
    ("connect postgres://app:pw@db/x failed", "connect postgres://app:********@db/x failed"),
    ("Authorization: Bearer abcdefghijklmnop", "Authorization: Bearer ********"),
    ("http://example.com/a:b@c", "http://example.com/a:b@c"),
    ("nothing to see", "nothing to see"),
])
def test_credentials_in_free_text_are_cut_out(text, expected):
    assert masking.mask_text(text) == expected


def test_strings_inside_payloads_get_text_masking():
    assert masking.mask(["redis://u:pw@h/0"]) == ["redis://u:********@h/0"]


# -- paging -------------------------------------------------------------------------------
def test_slices_lay_queues_end_to_end():
    segments = [("a", 30), ("b", 0), ("c", 100)]
    assert paging.slices(segments, 0, 50) == [paging.Slice("a", 0, 29, 0),
                                              paging.Slice("c", 0, 19, 30)]
    assert paging.slices(segments, 50, 50) == [paging.Slice("c", 20, 69, 50)]
    assert paging.slices(segments, 120, 50) == [paging.Slice("c", 90, 99, 120)]
    assert paging.slices(segments, 130, 50) == []
    assert paging.slices(segments, 0, 0) == []


def test_page_positions_and_neighbours():
    page = paging.Page(start=50, size=50, total=120)
    assert (page.first, page.last, page.previous, page.next) == (51, 100, 0, 100)
    last = paging.Page(start=100, size=50, total=120)
    assert (last.first, last.last, last.next) == (101, 120, None)
    empty = paging.Page(start=0, size=50, total=0)
    assert (empty.first, empty.last, empty.previous, empty.next) == (0, 0, None, None)


@pytest.mark.parametrize("raw, total, expected", [
    (None, 100, 0), ("abc", 100, 0), ("-5", 100, 0), ("60", 100, 60),
    ("500", 120, 100), ("500", 0, 0), ("500", None, 500),
])
def test_clamp_start(raw, total, expected):
    assert paging.clamp_start(raw, total) == expected


# -- formatting ---------------------------------------------------------------------------
@pytest.mark.parametrize("seconds, text", [
    (0.4, "0.4 s"), (5, "5 s"), (42, "42 s"), (185, "3 min 5 s"), (120, "2 min"),
    (7800, "2 h 10 min"), (3 * 86400 + 4 * 3600, "3 d 4 h"),
])
def test_duration(seconds, text):
    assert formatting.duration(seconds) == text


def test_moment_is_relative_and_absolute():
    past = formatting.moment(1_700_000_000, now=1_700_000_090)
    assert past.relative == "1 min 30 s ago"
    assert past.absolute == "2023-11-14 22:13:20 UTC"
    assert past.iso == "2023-11-14T22:13:20+00:00"
    assert formatting.moment(1_700_000_030, now=1_700_000_000).relative == "in 30 s"
    assert formatting.moment(None, now=0) is None
    assert formatting.moment(1e30, now=0) is None


def test_runtime():
    assert formatting.runtime(3.21) == "3.2 ms"
    assert formatting.runtime(250) == "250 ms"
    assert formatting.runtime(2500) == "2.5 s"


# -- charts -------------------------------------------------------------------------------
@pytest.mark.parametrize("value, ceiling", [(0, 1), (0.3, 0.5), (1, 1), (7, 10), (12, 20),
                                            (480, 500), (1001, 2000)])
def test_nice_ceiling(value, ceiling):
    assert charts.nice_ceiling(value) == pytest.approx(ceiling)


def test_line_chart_scales_into_the_box():
    chart = charts.line_chart([(0, 0), (30, 5), (60, 10)], width=104, height=54, pad=2)
    assert chart.line == "2.0,52.0 52.0,27.0 102.0,2.0"
    assert chart.area.startswith("2.0,52.0 2.0,52.0") and chart.area.endswith("102.0,52.0")
    assert (chart.top, chart.latest, chart.points) == (10, 10, 3)
    assert charts.line_chart([]).empty


def test_a_chart_with_axes_labels_values_with_units_and_times_in_utc():
    start = 1_700_000_000 - 1_700_000_000 % 3600  # on the hour
    chart = charts.line_chart([(start, 3), (start + 60, 7), (start + 120, 4)], 540, 220,
                              axes=True, unit="jobs/min")
    assert [t.label for t in chart.y_ticks] == ["0 jobs/min", "5 jobs/min", "10 jobs/min"]
    assert chart.y_ticks[0].position == chart.plot[3] and chart.y_ticks[2].position == chart.plot[1]
    assert [t.label for t in chart.x_ticks] == ["22:00", "22:02"]
    assert [m.label for m in chart.marks] == ["22:00 UTC: 3 jobs/min", "22:01 UTC: 7 jobs/min",
                                              "22:02 UTC: 4 jobs/min"]
    bands = [(m.band, m.band + m.band_width) for m in chart.marks]
    assert bands[0][0] == chart.plot[0] and bands[-1][1] == chart.plot[2]
    assert all(a[1] == b[0] for a, b in zip(bands, bands[1:])), "hover targets tile the plot"
    runtime = charts.line_chart([(start, 250.0)], 540, 220, axes=True, unit="ms",
                                value_text=formatting.runtime)
    assert runtime.single and runtime.marks[0].label == "22:00 UTC: 250 ms"
    assert runtime.y_ticks[-1].label == "500 ms"


# -- queue helpers ------------------------------------------------------------------------
def test_processes_count_pools_that_serve_several_queues():
    sups = [SupervisorState("s1", "m", "running", "redis", ["high", "low"], "off",
                            {"high,low": 3}, [], {}),
            SupervisorState("s2", "m", "running", "redis", ["high"], "auto", {"high": 2}, [], {}),
            SupervisorState("s3", "m", "running", "other", ["high"], "auto", {"high": 9}, [], {})]
    assert processes_for(QueueRef("redis", "high"), sups) == 5
    assert processes_for(QueueRef("redis", "low"), sups) == 3
    assert processes_for(QueueRef("redis", "default"), sups) == 0


def test_filter_matches_name_class_uuid_and_tags():
    data = {"displayName": "SendInvoice", "job": "billing.jobs.send_invoice",
            "uuid": "abc-123", "tags": ["customer:42", "urgent"]}
    for needle in ("sendinvoice", "billing.jobs", "abc-1", "customer:42", "urg"):
        assert matches(needle, data)
    assert not matches("refund", data)
    assert not matches("x", {})


@pytest.mark.parametrize("value", ["0c7e-4f", "a/b", "100%", "é x", "a?b#c", "<b>&'\""])
def test_row_links_are_what_reverse_makes(value):
    """links.RowLink reverses once a page; each row's link must equal reverse's own."""
    from django.urls import reverse

    from horizon.dashboard.shared import links

    assert links.RowLink("horizon:job", "pending")(value) == reverse(
        "horizon:job", args=["pending", value])
    assert links.RowLink("horizon:job-delete", "delayed")(value) == reverse(
        "horizon:job-delete", args=["delayed", value])
    assert links.RowLink("horizon:job-run")(value) == reverse("horizon:job-run", args=[value])
