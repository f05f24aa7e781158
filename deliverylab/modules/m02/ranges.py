"""A batch's offset range, ``{partition: (start, end)}``, as Spark reported it and as a learner wrote it.

    reported_range(record, topic)   the range in one progress record (Spark's startOffset -> endOffset)
    spark_range(pipe, batch, run)   the range Spark reported for a batch of a crash-lab pipeline
    as_range(value)                 a learner's answer in the same shape, or None if it is not one

Spark's progress report (``StreamingQueryProgress``) is written by the engine as the batch
finishes, independently of the checkpoint files, so it is a second witness of what a batch
read: comparing it with ``offsets/N`` shows that the checkpoint tells the truth.
"""
from __future__ import annotations

Range = dict[int, tuple[int, int]]


def reported_range(record: dict, topic: str) -> Range | None:
    """The range one progress record says its batch read on ``topic`` (None if it names no end)."""
    end = (record.get("end_offset") or {}).get(topic)
    if not end:
        return None
    start = (record.get("start_offset") or {}).get(topic) or {}
    return {int(p): (int(start.get(p, 0)), int(e)) for p, e in sorted(end.items(), key=lambda kv: int(kv[0]))}


def spark_range(pipe, batch: int, run: int | None = None) -> Range | None:
    """What Spark reported it read in ``batch`` during run ``run`` (default: the latest run that ran it)."""
    records = [r for r in pipe.progress(run=run) if r.get("batch") == batch]
    return reported_range(records[-1], pipe.topic) if records else None


def as_range(value) -> Range | None:
    """``{partition: (start, end)}`` with int partitions (digit strings accepted), or None if it is not one."""
    if not isinstance(value, dict) or not value:
        return None
    out = {}
    for partition, pair in value.items():
        if isinstance(partition, str) and partition.isdigit():
            partition = int(partition)
        if not isinstance(partition, int) or isinstance(partition, bool):
            return None
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            return None
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in pair):
            return None
        out[partition] = (pair[0], pair[1])
    return dict(sorted(out.items()))
