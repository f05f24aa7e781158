"""What each batch of a query read, from its progress reports; for lesson 02's asynchronous progress tracking demo.

    batches_read(progress, topic)   [{"batch", "rows", "range"}] for every batch that read records of ``topic``,
                                    oldest first; ``range`` is ``{partition: (start, end)}``
    describe(batches)               the same as one short line: ``batch 0: 0-10, batch 1: 10-20``

By default Spark writes ``offsets/N`` before batch N and ``commits/N`` after it, for every batch, so a
restart runs again exactly the range of the batch that was cut short. With the writer option
``asyncProgressTrackingEnabled=true`` (Spark 4.2's ``AsyncProgressTrackingMicroBatchExecution``) both logs
are written by a background thread, and only for the first batch of a run and for a batch that starts at least
``asyncProgressTrackingCheckpointIntervalMs`` (default 1000) after the last batch whose offsets were written;
the batches in between are kept in memory only. A restart then plans the batches that were only in memory anew
(after the last batch whose ``commits`` file is on disk, everything since in one batch): neither their batch
numbers nor their ranges come back (``asynctracking.py`` runs it). The progress reports are a record of what each
run read that does not depend on the checkpoint, which is why the lesson compares them.
"""
from __future__ import annotations

import json

from .ranges import Range, reported_range


def _as_dict(report) -> dict:
    """A progress report as a dict: PySpark's StreamingQueryProgress (its ``json``) or a dict already."""
    if isinstance(report, dict):
        return report
    return json.loads(report.json)


def _offsets(value) -> dict:
    """A source's start or end offset as a dict (Spark gives the Kafka source's as JSON, parsed or not)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def batches_read(progress, topic: str) -> list[dict]:
    """``[{"batch", "rows", "range"}]`` for the batches of one run that read records of ``topic``, by batch id.

    Reports without rows (a query waiting for data reports that too) are left out; a batch reported twice
    keeps its last report."""
    found: dict[int, dict] = {}
    for report in progress:
        report = _as_dict(report)
        rows = int(report.get("numInputRows") or 0)
        if rows <= 0:
            continue
        for source in report.get("sources") or []:
            start, end = _offsets(source.get("startOffset")), _offsets(source.get("endOffset"))
            span = reported_range({"start_offset": start, "end_offset": end}, topic)
            if span is not None:
                found[int(report["batchId"])] = {"batch": int(report["batchId"]), "rows": rows, "range": span}
    return [found[b] for b in sorted(found)]


def _span(span: Range) -> str:
    if len(span) == 1:
        (start, end), = span.values()
        return f"offsets {start}-{end}"
    return ", ".join(f"partition {p} offsets {s}-{e}" for p, (s, e) in span.items())


def describe(batches: list[dict]) -> str:
    """``batch 0: 10 rows (offsets 0-10); batch 1: ...``: what ``batches_read`` found, in one line."""
    return "; ".join(f"batch {b['batch']}: {b['rows']} rows ({_span(b['range'])})" for b in batches) or "no batch read records"
