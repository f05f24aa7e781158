"""Module 04: event-time arithmetic and the per-batch dedup state (pure, no Spark)."""
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from deliverylab.config import CourseError
from deliverylab.modules.m04 import watermarks as wm

UTC = timezone.utc


@pytest.mark.parametrize("text, seconds", [("30 seconds", 30), ("1 minute", 60), ("10 minutes", 600),
                                           ("2 hours", 7200), (" 1 day ", 86400)])
def test_delays_as_withwatermark_takes_them(text, seconds):
    assert wm.parse_delay(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("bad", ["1 min", "minute", "-1 minute", "", 60, None])
def test_bad_delays_are_refused(bad):
    with pytest.raises(CourseError):
        wm.parse_delay(bad)


def test_times_parse_from_orders_and_progress():
    assert wm.parse_time("2026-01-01T00:09:03Z") == datetime(2026, 1, 1, 0, 9, 3, tzinfo=UTC)
    assert wm.parse_time("2026-01-01T00:09:03.000Z") == datetime(2026, 1, 1, 0, 9, 3, tzinfo=UTC)
    assert wm.parse_time(datetime(2026, 1, 1)) == datetime(2026, 1, 1, tzinfo=UTC)
    assert wm.iso(datetime(2026, 1, 1, 0, 9, 3, tzinfo=UTC)) == "2026-01-01T00:09:03Z"
    with pytest.raises(CourseError):
        wm.parse_time("yesterday")


def test_the_watermark_is_the_latest_event_time_minus_the_delay():
    times = ["2026-01-01T00:00:10Z", "2026-01-01T00:10:03Z", "2026-01-01T00:05:00Z"]
    assert wm.watermark_after(times, "1 minute") == datetime(2026, 1, 1, 0, 9, 3, tzinfo=UTC)
    assert wm.watermark_after([], "1 minute") == wm.EPOCH


def test_spans_and_durations():
    orders = [{"event_time": "2026-01-01T00:00:00Z"}, {"event_time": "2026-01-01T00:06:42Z"}]
    assert wm.event_time_span(orders) == timedelta(minutes=6, seconds=42)
    progress = [{"timestamp": "2026-11-22T12:00:00.000Z", "ms": 500},
                {"timestamp": "2026-11-22T12:00:10.000Z", "ms": 1500}]
    assert wm.wall_clock_span(progress) == timedelta(seconds=11.5)
    assert wm.duration(timedelta(minutes=6, seconds=42)) == "6 min 42 s" and wm.duration(timedelta(seconds=11.5)) == "11 s"


def test_state_history_keeps_stateful_batches_in_order_last_run_wins():
    progress = [
        {"batch": 1, "rows": 99, "state_rows": 150, "state_dropped": 0, "watermark": "2026-01-01T00:00:45.000Z"},
        {"batch": 0, "rows": 99, "state_rows": 97, "state_dropped": 0, "watermark": "1970-01-01T00:00:00.000Z"},
        {"batch": 2, "rows": 10, "state_rows": None, "state_dropped": None, "watermark": None},  # no state
        {"batch": 1, "rows": 99, "state_rows": 151, "state_dropped": 2, "watermark": "2026-01-01T00:00:45.000Z"},
    ]
    history = wm.state_history(progress)
    assert [h["batch"] for h in history] == [0, 1]
    assert history[1]["state_rows"] == 151 and history[1]["late_rows"] == 2
    assert history[0]["watermark"] == wm.EPOCH


def test_wait_for_watermark_returns_at_once_or_explains(monkeypatch):
    pipe = SimpleNamespace(name="p", progress=lambda: [
        {"batch": 3, "rows": 0, "state_rows": 5, "state_dropped": 0, "watermark": "2026-01-01T00:09:03.000Z"}])
    assert wm.wait_for_watermark(pipe, "2026-01-01T00:09:03Z") == datetime(2026, 1, 1, 0, 9, 3, tzinfo=UTC)
    with pytest.raises(CourseError, match="did not reach the watermark"):
        wm.wait_for_watermark(pipe, "2026-01-01T00:10:00Z", timeout_s=0.2)
