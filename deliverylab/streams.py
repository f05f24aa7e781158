"""Waiting for streaming queries, so Run-All never races a stream."""
from __future__ import annotations

import time

from . import statusline
from .config import CourseError


def _require_query(query) -> None:
    if not (hasattr(query, "lastProgress") and hasattr(query, "isActive")):
        raise CourseError(
            f"Expected a StreamingQuery (what `writeStream...start()` returns), got {type(query).__name__}. "
            "Pass the query object, not the DataFrame."
        )


def _raise_if_failed(query) -> None:
    if not query.isActive:
        error = query.exception()
        if error is not None:
            raise CourseError(f"The streaming query stopped with an error:\n{str(error)[-1500:]}")


def completed_batches(query) -> int:
    """How many progress reports this run of the query holds (``len(query.recentProgress)``).

    Spark 4.2 adds one report per finished micro-batch (with or without data) and, while no batch
    runs, an "idle" report 10 s after the last one (``spark.sql.streaming.noDataProgressEventInterval``;
    a query that finds nothing to do at its very first trigger reports idle at once); it keeps the latest 99 (one fewer than
    ``spark.sql.streaming.numRecentProgressUpdates``, 100). So this counts batches only while the
    query is busy, and only up to 99: where batches matter, count distinct ``batchId`` values or read
    ``query.lastProgress["batchId"]``. On a new checkpoint the first trigger always runs batch 0 (no
    start offsets yet counts as new data), so there "at least one report" does mean "batch 0 has run"."""
    return len(query.recentProgress)


def wait_for_batches(query, n: int = 1, timeout_s: float = 60) -> int:
    """Block until the query holds at least ``n`` progress reports in this run (see :func:`completed_batches`:
    batches, while it is busy). Returns the count."""
    _require_query(query)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _raise_if_failed(query)
        done = completed_batches(query)
        if done >= n:
            return done
        time.sleep(0.2)
    raise CourseError(
        f"The query finished {completed_batches(query)} of {n} micro-batches in {timeout_s:.0f} s. "
        "Is data arriving on its topic? `query.status` and `query.lastProgress` show what it is doing."
    )


def wait_until_drained(query, timeout_s: float = 120) -> None:
    """Block until everything available in the source has been processed (or the query fails)."""
    _require_query(query)
    deadline = time.monotonic() + timeout_s
    while True:
        _raise_if_failed(query)
        # processAllAvailable blocks until the data available *now* has been processed
        query.processAllAvailable()
        status = query.status
        if not status.get("isDataAvailable") and not status.get("isTriggerActive"):
            return
        if time.monotonic() > deadline:
            raise CourseError(f"The query did not drain its input within {timeout_s:.0f} s (status: {status}).")


def await_termination(query, label: str, timeout_s: float | None = None) -> bool:
    """``query.awaitTermination(timeout_s)`` (True once the query ended; it raises what the query raised),
    saying on the status line which batch the query has finished, so a long wait never looks frozen."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    said = ""
    while not query.awaitTermination(0.5):
        progress = query.lastProgress
        now = f"{label}: batch {progress['batchId']} done" if progress else f"{label}: starting its first batch"
        if now != said:
            statusline.say(now)
            said = now
        if deadline is not None and time.monotonic() > deadline:
            return False
    return True
