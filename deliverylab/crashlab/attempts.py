"""Which micro-batches ran, how often, and which runs were replays: from events alone.

Pure functions over what the drivers reported (progress events, per run) and what the
notebook saw (crashes), so they are tested without a broker or Spark.
"""
from __future__ import annotations

from typing import Callable, Iterable

#: After these points the crashed attempt had handed all of its rows to the sink.
WROTE_EVERYTHING = ("after_sink_write", "after_commit")


def batch_attempts(runs: int, progress: dict[int, list[dict]], crashes: Iterable[tuple[int, int, str]],
                   checkpoint_of: Callable[[int], str], rows_of: Callable[[int, int], int],
                   fresh_checkpoints: bool = False) -> list[dict]:
    """Every attempt of a micro-batch that processed rows, in order, over runs 1..``runs``.

    ``progress[run]``: the run's progress events (``{"batch", "rows"}``). ``crashes``:
    ``(run, batch, point)`` of every crash that hit a batch. ``checkpoint_of(run)``: the
    checkpoint that run used. ``rows_of(batch, run)``: the rows a planned batch covers
    (from its offset range; 0 if unknown).

    Each attempt is ``{"run", "batch_id", "rows", "replay", "crashed"}``. ``replay`` is True
    when an earlier run had already started that batch in the same checkpoint and crashed
    before ``commits/N``: the restart ran it again with the same offsets. A crashed attempt
    is listed (``crashed=True``) when the crash left all its rows in the sink's hands
    (``after_sink_write``, ``after_commit``). A ``before_sink_write`` attempt wrote
    nothing, and a ``mid_sink_write`` attempt an unknown part, so those are not listed but
    still make the next attempt a replay. ``rows`` counts the batch's input rows: on an
    idempotent sink a replay processes them without adding them again.
    """
    by_run: dict[int, list[tuple[int, str]]] = {}
    for run, batch, point in crashes:
        by_run.setdefault(run, []).append((batch, point))
    started: set[tuple[str, int]] = set()   # (checkpoint, batch) attempts seen so far
    out: list[dict] = []

    def add(run: int, batch: int, rows: int, crashed: bool) -> None:
        key = (checkpoint_of(run), batch)
        out.append({"run": run, "batch_id": batch, "rows": rows,
                    "replay": not fresh_checkpoints and key in started, "crashed": crashed})
        started.add(key)

    for run in range(1, runs + 1):
        reported = set()
        for event in progress.get(run, []):
            if event.get("rows") and event["batch"] not in reported:
                reported.add(event["batch"])
                add(run, event["batch"], event["rows"], False)
        for batch, point in sorted(by_run.get(run, [])):
            if batch in reported:
                continue
            rows = rows_of(batch, run) if point in WROTE_EVERYTHING else 0
            if rows:
                add(run, batch, rows, True)
            else:  # it started the batch, whatever it got to write
                started.add((checkpoint_of(run), batch))
    return out
