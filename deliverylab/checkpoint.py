"""The one reader of what a streaming query keeps on disk (Spark 4.2's default formats, unchanged since 4.0;
no Spark needed). Spark 4.2 can also write an offset log ``v2`` and commit logs ``v2``/``v3`` (off by default:
``spark.sql.streaming.offsetLog.formatVersion``, ``spark.sql.streaming.stateStore.checkpointFormatVersion``);
this reader knows only the defaults.

A checkpoint folder holds:

* ``metadata``        one JSON line ``{"id": "<query id>"}``; the id survives restarts
* ``offsets/<N>``     the plan for batch N, written *before* the batch runs (the write-ahead
                      log): ``v1``, a JSON line of batch metadata (watermark, batch time,
                      conf), then one line per source with the offsets where batch N *ends*;
                      for Kafka ``{"topic":{"0":500,"1":500}}``, ``-`` for a source with none
* ``commits/<N>``     written *after* the sink has finished batch N: ``v1`` + ``{"nextBatchWatermarkMs":0}``
* ``sources/<i>/0``   where source i started: a zero byte, ``v1``, then the same Kafka JSON
* ``state/``          the state store of stateful operators (deduplication, aggregations)

Batch N reads from where batch N-1 ended (batch 0 from ``sources/<i>/0``) to where
``offsets/N`` says. An offsets file without its commit is a batch that was planned but
not finished: on restart Spark runs it again with the same offsets. That holds in micro-batch mode with
Spark's defaults. In real-time mode ``offsets/N`` is written when batch N ends (lesson 06), and a restart
deletes an uncommitted one and runs batch N again over whatever has arrived by then
(``MicroBatchExecution``: ``offsetLog.purgeAfter(lastCommittedBatchId)``); with asynchronous progress
tracking (the writer option ``asyncProgressTrackingEnabled``, off by default) a batch's offsets are written
at most once per ``asyncProgressTrackingCheckpointIntervalMs``, and a restart runs everything after the last
commit on disk as one batch (``AsyncProgressTrackingMicroBatchExecution``).

Spark's file sink keeps a log of the same shape in ``<folder>/_spark_metadata/<N>``: ``v1``
then one JSON line per file the batch published (``.compact`` files merge older ones).

Every file is read the same way: leading zero bytes dropped, then split into lines.
Files named only by digits are log entries; ``.crc`` and ``.tmp`` files are not.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

_DIGITS = re.compile(r"^\d+$")
NO_OFFSETS = "-"


# --------------------------------------------------------------------------- files


def log_lines(path: str | Path) -> list[str]:
    """Lines of a Spark metadata log file, minus the leading zero byte some writers add."""
    return Path(path).read_bytes().lstrip(b"\x00").decode("utf-8", errors="replace").split("\n")


def numbered_files(folder: str | Path) -> dict[int, Path]:
    """Files named only by a number (batch ids); .crc, temp files and anything else are skipped."""
    folder = Path(folder)
    if not folder.is_dir():
        return {}
    return {int(p.name): p for p in folder.iterdir() if p.is_file() and _DIGITS.match(p.name)}


def parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


# --------------------------------------------------------------------------- offsets


def kafka_offsets(line: str | None) -> dict[tuple[str, int], int] | None:
    """``{"topic":{"0":5}}`` as ``{("topic", 0): 5}``; None when the line is not Kafka offsets."""
    document = parse_json(line) if line else None
    if not isinstance(document, dict) or not document:
        return None
    offsets = {}
    for topic, partitions in document.items():
        if not isinstance(partitions, dict):
            return None
        for partition, offset in partitions.items():
            if not _DIGITS.match(str(partition)) or not isinstance(offset, int):
                return None
            offsets[(topic, int(partition))] = offset
    return offsets


def topic_offsets(line: str | None, topic: str) -> dict[int, int] | None:
    """``{partition: offset}`` for one topic from a Kafka offsets line; None if the topic is not in it."""
    offsets = kafka_offsets(line)
    if offsets is None or not any(t == topic for t, _ in offsets):
        return None
    return {p: o for (t, p), o in offsets.items() if t == topic}


def read_offsets_file(path: str | Path) -> dict[str, Any]:
    """One ``offsets/<N>`` file: ``{"version", "metadata", "sources"}``, sources as raw lines."""
    lines = log_lines(path)
    metadata = parse_json(lines[1]) if len(lines) > 1 and lines[1].strip() else None
    return {"version": lines[0].strip() if lines else "",
            "metadata": metadata if isinstance(metadata, dict) else None,
            "sources": [line.strip() for line in lines[2:] if line.strip()]}


def start_line(ckpt: str | Path, source_index: int = 0) -> str | None:
    """The raw offsets line in ``sources/<i>/0``: where that source started (batch 0 reads from here)."""
    path = Path(ckpt) / "sources" / str(source_index) / "0"
    if not path.is_file():
        return None
    lines = log_lines(path)
    body = [line for line in lines[1:] if line.strip()] if lines and lines[0].startswith("v") else lines
    return body[0].strip() if body else None


def query_id(ckpt: str | Path) -> str | None:
    """The query id in ``<ckpt>/metadata`` (Delta's streaming sink uses it as the txn appId)."""
    path = Path(ckpt) / "metadata"
    if not path.is_file():
        return None
    document = parse_json(log_lines(path)[0])
    return document.get("id") if isinstance(document, dict) else None


# --------------------------------------------------------------------------- batches


def batch_ids(ckpt: str | Path) -> tuple[set[int], set[int]]:
    """Batch ids with an ``offsets`` file and with a ``commits`` file."""
    ckpt = Path(ckpt)
    return set(numbered_files(ckpt / "offsets")), set(numbered_files(ckpt / "commits"))


def next_batch_id(ckpt: str | Path) -> int:
    """The id the checkpoint gives its next new batch."""
    offsets, _ = batch_ids(ckpt)
    return max(offsets) + 1 if offsets else 0


def source_line(ckpt: str | Path, batch: int, source_index: int = 0) -> str | None:
    """The raw end-offsets line of one source in ``offsets/<batch>`` (None if there is no such file)."""
    path = Path(ckpt) / "offsets" / str(batch)
    if not path.is_file():
        return None
    sources = read_offsets_file(path)["sources"]
    return sources[source_index] if source_index < len(sources) else None


def _topic_end(ckpt: Path, batch: int, topic: str) -> dict[int, int] | None:
    path = ckpt / "offsets" / str(batch)
    if not path.is_file():
        return None
    for line in read_offsets_file(path)["sources"]:
        found = topic_offsets(line, topic)
        if found is not None:
            return found
    return None


def topic_start(ckpt: str | Path, topic: str) -> dict[int, int] | None:
    """Where the source reading ``topic`` started (``sources/<i>/0``), or None if not recorded."""
    sources = Path(ckpt) / "sources"
    for index in sorted(int(p.name) for p in sources.iterdir() if p.name.isdigit()) if sources.is_dir() else []:
        found = topic_offsets(start_line(ckpt, index), topic)
        if found is not None:
            return found
    return None


def batch_range(ckpt: str | Path, batch: int, topic: str) -> dict[int, tuple[int, int]] | None:
    """``{partition: (start, end)}`` of one planned batch on ``topic`` (None if it has no offsets file)."""
    ckpt = Path(ckpt)
    end = _topic_end(ckpt, batch, topic)
    if end is None:
        return None
    start = (_topic_end(ckpt, batch - 1, topic) if batch > 0 else topic_start(ckpt, topic)) or {}
    return {p: (start.get(p, 0), e) for p, e in sorted(end.items())}


def done_offsets(ckpt: str | Path, topic: str) -> dict[int, int]:
    """``{partition: offset}`` up to which the query has *finished* its batches.

    The end of the last batch with a commits file; before any, where the source started
    (a query that started at the latest offsets has nothing to do for older records).
    """
    ckpt = Path(ckpt)
    done = dict(topic_start(ckpt, topic) or {})
    _, commits = batch_ids(ckpt)
    if commits:
        for p, off in (_topic_end(ckpt, max(commits), topic) or {}).items():
            done[p] = max(off, done.get(p, 0))
    return done


def batch_watermark_ms(ckpt: str | Path, batch: int) -> int | None:
    """The event-time watermark batch N ran with (from its offsets metadata)."""
    path = Path(ckpt) / "offsets" / str(batch)
    if not path.is_file():
        return None
    metadata = read_offsets_file(path)["metadata"] or {}
    return metadata.get("batchWatermarkMs")


# --------------------------------------------------------------------------- file sink log


def file_sink_files(sink: str | Path) -> set[str]:
    """Files the file sink's ``_spark_metadata`` log publishes, relative to the sink folder."""
    sink = Path(sink)
    listed: set[str] = set()
    log = sink / "_spark_metadata"
    if not log.is_dir():
        return listed
    entries = [p for p in log.iterdir() if p.is_file() and (_DIGITS.match(p.name) or p.name.endswith(".compact"))]
    for entry in entries:
        for line in log_lines(entry):
            document = parse_json(line) if line.startswith("{") else None
            if not isinstance(document, dict) or not document.get("path"):
                continue
            local = Path(unquote(urlparse(document["path"]).path))
            try:
                listed.add(local.relative_to(sink.resolve()).as_posix())
            except ValueError:
                listed.add(local.name)
    return listed
