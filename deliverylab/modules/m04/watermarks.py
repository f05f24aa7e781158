"""Event-time arithmetic and the dedup state a pipeline reported, batch by batch.

Spark's rule, checked on this Spark (4.2.0) in the lesson: at the end of a micro-batch the
watermark becomes *the largest event time seen so far minus the delay*; the next batch
uses it. It moves only when events with later event times arrive, never with the clock.

    watermark_after(["2026-01-01T00:10:03Z", ...], "1 minute")   # 2026-01-01 00:09:03+00:00
    state_history(pipe.progress())                               # per batch: state rows, late rows, watermark
"""
from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone

from ...config import CourseError

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_DELAY = re.compile(r"^\s*(\d+)\s+(second|minute|hour|day)s?\s*$")


def parse_delay(delay: str) -> timedelta:
    """A watermark delay as ``withWatermark`` takes it ("30 seconds", "1 minute", "2 hours") as a timedelta."""
    match = _DELAY.match(delay) if isinstance(delay, str) else None
    if not match:
        raise CourseError(f"A delay looks like '30 seconds', '1 minute' or '10 minutes', not {delay!r}.")
    return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])


def parse_time(value) -> datetime:
    """An event time or a watermark (ISO text such as "2026-01-01T00:09:03.000Z", or a datetime) in UTC."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str):
        raise CourseError(f"Expected a time such as '2026-01-01T00:09:03Z', not {value!r}.")
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise CourseError(f"{value!r} is not a time such as '2026-01-01T00:09:03Z'.") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def iso(moment: datetime) -> str:
    """A UTC time as order events spell it: ``2026-01-01T00:09:03Z``."""
    return parse_time(moment).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def watermark_after(event_times, delay: str) -> datetime:
    """The watermark once these event times have been seen: the largest minus ``delay`` (1970 if none)."""
    times = [parse_time(t) for t in event_times]
    return max(times) - parse_delay(delay) if times else EPOCH


def event_time_span(orders: list[dict]) -> timedelta:
    """From the earliest to the latest event time of ``orders``."""
    times = [parse_time(o["event_time"]) for o in orders]
    return max(times) - min(times) if times else timedelta(0)


def wall_clock_span(progress: list[dict]) -> timedelta:
    """From the start of the first reported micro-batch to the end of the last (the clock on the wall)."""
    timed = [p for p in progress if p.get("timestamp")]
    if not timed:
        return timedelta(0)
    first, last = timed[0], timed[-1]
    return parse_time(last["timestamp"]) + timedelta(milliseconds=last.get("ms") or 0) - parse_time(first["timestamp"])


def duration(span: timedelta) -> str:
    """``6 min 44 s`` / ``12 s``: a span as a person reads it (whole seconds)."""
    seconds = int(span.total_seconds())
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


def state_history(progress: list[dict]) -> list[dict]:
    """One entry per micro-batch with a stateful operator, in batch order (a replayed batch: its last run).

    Each is ``{"batch", "rows", "state_rows", "late_rows", "watermark"}``: input rows, rows
    kept in the dedup state after the batch, rows dropped as too late, and the watermark
    the batch used (a datetime, or None without a watermark).
    """
    by_batch: dict[int, dict] = {}
    for record in progress:
        if record.get("state_rows") is None:
            continue
        mark = record.get("watermark")
        by_batch[record["batch"]] = {"batch": record["batch"], "rows": record.get("rows", 0),
                                     "state_rows": record["state_rows"], "late_rows": record.get("state_dropped") or 0,
                                     "watermark": parse_time(mark) if mark else None}
    return [by_batch[b] for b in sorted(by_batch)]


def current_watermark(pipe) -> datetime | None:
    """The watermark of the pipeline's latest micro-batch (None if it reported none)."""
    history = state_history(pipe.progress())
    return history[-1]["watermark"] if history else None


def wait_for_watermark(pipe, expected: datetime, timeout_s: float = 30) -> datetime:
    """Wait until a micro-batch of ``pipe`` has run with a watermark at or past ``expected`` (its state
    is then evicted up to it). Spark runs such a batch, with or without data, as soon as the
    watermark has moved."""
    expected = parse_time(expected)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        mark = current_watermark(pipe)
        if mark is not None and mark >= expected:
            return mark
        time.sleep(0.1)
    raise CourseError(f"Pipeline {pipe.name!r} did not reach the watermark {iso(expected)} within {timeout_s:.0f} s "
                      f"(it is at {current_watermark(pipe)}). Did all its orders arrive? Try pipe.drain() first.")
