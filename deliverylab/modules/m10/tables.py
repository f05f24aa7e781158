"""An Iceberg table read from its folder, without a JVM: metadata, snapshots, ancestry, rows (module 10).

A table of the course's Iceberg catalog (a Hadoop catalog) is a folder:

    metadata/v<N>.metadata.json   one per change of the table: schema, properties, and every snapshot it
                                  still keeps, each with its parent, its manifest list and its summary
    metadata/snap-*.avro          a snapshot's manifest list: the manifests that make up the table then
    metadata/*-m<k>.avro          a manifest: data files, with their row counts and column statistics
    metadata/version-hint.text    the newest N: a hint only (never trusted here)
    data/*.parquet                the rows

Iceberg's streaming sink commits each micro-batch as one snapshot whose summary carries
``spark.sql.streaming.queryId`` (the id in the checkpoint's ``metadata`` file) and
``spark.sql.streaming.epochId`` (the batch id). Before it commits batch N it walks from the current
snapshot through the parents to this query's newest snapshot, and skips N if that snapshot's epoch is N
or more (``SparkWrite.BaseStreamingWrite``); :func:`last_epoch` makes the same walk here.

The metadata half (snapshots, ancestors, stamps) reads JSON only and works anywhere; rows and data files
need pyiceberg, which only the Iceberg kernel has (imported on first use).
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from ...checkpoint import query_id  # noqa: F401 - part of this module's API: tables.query_id(checkpoint)
from ...crashlab.sinks import (ICEBERG_CATALOG, iceberg_identifier, iceberg_metadata_file, open_iceberg,  # noqa: F401
                               read_iceberg)
from ...inspector import TextBlock, text_table

QUERY_ID = "spark.sql.streaming.queryId"
EPOCH_ID = "spark.sql.streaming.epochId"
#: The summary key the course's foreachBatch writers stamp each batch with (write option ``snapshot-property.<key>``).
STAMP = "course.batch"


@dataclass(frozen=True)
class Snapshot:
    """One snapshot as the table metadata keeps it (ids and times are random: never print them)."""
    id: int
    parent: int | None
    sequence: int
    timestamp_ms: int
    summary: dict
    manifest_list: str

    @property
    def operation(self) -> str:
        return self.summary.get("operation", "?")

    @property
    def query(self) -> str | None:
        """The streaming query that committed it (None: not a streaming sink's commit)."""
        return self.summary.get(QUERY_ID)

    @property
    def epoch(self) -> int | None:
        """The micro-batch id a streaming sink committed in it."""
        value = self.summary.get(EPOCH_ID)
        return int(value) if value is not None else None

    def records(self, key: str = "added-records") -> int:
        """A count from the summary (``added-records``, ``deleted-records``, ``total-records``...), 0 if absent."""
        return int(self.summary.get(key, 0))


# --------------------------------------------------------------------------- metadata (JSON only)


def metadata_file(table: str | Path) -> Path | None:
    """The newest ``metadata/v<N>.metadata.json`` (by listing the folder), or None if there is no table."""
    return iceberg_metadata_file(table)


def metadata_version(table: str | Path) -> int | None:
    """N of the newest ``v<N>.metadata.json``: how many times the table changed (v1 is its creation)."""
    found = metadata_file(table)
    return int(found.name[1:].split(".")[0]) if found else None


def read_metadata(table: str | Path) -> dict:
    """The newest table metadata as a dict ({} if there is no table yet)."""
    found = metadata_file(table)
    if found is None:
        return {}
    data = found.read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def _snapshot(raw: dict) -> Snapshot:
    return Snapshot(id=raw["snapshot-id"], parent=raw.get("parent-snapshot-id"),
                    sequence=raw.get("sequence-number", 0), timestamp_ms=raw.get("timestamp-ms", 0),
                    summary=dict(raw.get("summary") or {}), manifest_list=raw.get("manifest-list", ""))


def snapshots(table: str | Path, metadata: dict | None = None) -> list[Snapshot]:
    """Every snapshot the metadata keeps, oldest first: ancestors of the current one and any others."""
    metadata = read_metadata(table) if metadata is None else metadata
    return sorted((_snapshot(s) for s in metadata.get("snapshots") or []), key=lambda s: (s.sequence, s.timestamp_ms))


def current(table: str | Path, metadata: dict | None = None) -> Snapshot | None:
    """The current snapshot of the branch ``main`` (None: an empty table)."""
    metadata = read_metadata(table) if metadata is None else metadata
    ref = (metadata.get("refs") or {}).get("main")
    current_id = ref["snapshot-id"] if ref else metadata.get("current-snapshot-id")
    by_id = {s.id: s for s in snapshots(table, metadata)}
    return by_id.get(current_id)


def ancestors(table: str | Path) -> list[Snapshot]:
    """The current snapshot and its parents, newest first. The walk stops at the first parent the metadata
    no longer keeps (expired), as Iceberg's own walk does."""
    metadata = read_metadata(table)
    by_id = {s.id: s for s in snapshots(table, metadata)}
    chain, snapshot = [], current(table, metadata)
    while snapshot is not None:
        chain.append(snapshot)
        snapshot = by_id.get(snapshot.parent) if snapshot.parent is not None else None
    return chain


def query_epochs(table: str | Path, query: str) -> list[int]:
    """The batch ids of ``query``'s snapshots among the current snapshot's ancestors, in commit order."""
    return sorted(s.epoch for s in ancestors(table) if s.query == query and s.epoch is not None)


def last_epoch(table: str | Path, query: str) -> int | None:
    """What Iceberg's streaming sink finds before a commit: the epoch of ``query``'s newest ancestor, or None."""
    for snapshot in ancestors(table):
        if snapshot.query == query:
            return snapshot.epoch
    return None


def would_skip(table: str | Path, query: str, batch: int) -> bool:
    """Would the sink skip batch ``batch`` of ``query`` now (it finds an epoch at or after it)?"""
    last = last_epoch(table, query)
    return last is not None and batch <= last


def stamp_count(table: str | Path, value: str, key: str = STAMP) -> int:
    """How many ancestors of the current snapshot carry ``summary[key] == value`` (a batch stamp)."""
    return sum(1 for s in ancestors(table) if s.summary.get(key) == value)


def has_stamp(table: str | Path, value: str, key: str = STAMP) -> bool:
    """Is the stamp among the ancestors (so a foreachBatch writer that checks it would skip the batch)?"""
    return stamp_count(table, value, key) > 0


def batch_stamp(checkpoint: str | Path, batch_id: int) -> str:
    """The course's batch stamp: ``<query id of the checkpoint>:<batch id>`` (a new checkpoint, a new stamp)."""
    return f"{query_id(checkpoint)}:{batch_id}"


# --------------------------------------------------------------------------- files on disk


def files_on_disk(table: str | Path, folder: str = "") -> list[str]:
    """Files under the table folder (or its sub-folder), relative, sorted; Hadoop's hidden ``.*.crc`` left out."""
    root = Path(table)
    base = root / folder if folder else root
    if not base.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in base.rglob("*")
                  if p.is_file() and not p.name.startswith(".") and not p.name.endswith(".crc"))


def layout(table: str | Path) -> dict[str, int | bool]:
    """Counts of the table's files by kind: metadata versions, manifest lists, manifests, data files."""
    meta = [f.split("/", 1)[1] for f in files_on_disk(table, "metadata")]
    return {
        "metadata files": sum(1 for f in meta if f.startswith("v") and f.endswith(".metadata.json")),
        "manifest lists": sum(1 for f in meta if f.startswith("snap-") and f.endswith(".avro")),
        "manifests": sum(1 for f in meta if not f.startswith("snap-") and f.endswith(".avro")),
        "version hint": "version-hint.text" in meta,
        "data files": sum(1 for f in files_on_disk(table, "data") if f.endswith(".parquet")),
    }


# --------------------------------------------------------------------------- rows and data files (pyiceberg)


def rows(table: str | Path) -> list[tuple]:
    """``(order_id, amount)`` of every row of the current snapshot, duplicates included (what the ledger reads)."""
    return read_iceberg(table)


def order_ids(table: str | Path) -> list:
    """The order ids of every row of the current snapshot, duplicates included."""
    return [order_id for order_id, _ in read_iceberg(table)]


def orphan_files(table: str | Path) -> list[str]:
    """Data files on disk that no snapshot the metadata keeps lists: no Iceberg reader reads them."""
    from ...crashlab.sinks import IcebergTable

    return IcebergTable(str(table), "").files()["leftovers"]


# --------------------------------------------------------------------------- text views


def snapshot_rows(table: str | Path, query: str | None = None) -> list[dict]:
    """One row per snapshot kept, oldest first: operation, epochId, whether ``query`` wrote it, rows added,
    rows in the table, and whether it is an ancestor of the current snapshot (no ids, no times)."""
    chain = {s.id for s in ancestors(table)}
    return [{"n": n, "operation": s.operation, "epoch": s.epoch,
             "query": None if query is None or s.query is None else s.query == query,
             "added": s.records("added-records"), "total": s.records("total-records"), "ancestor": s.id in chain}
            for n, s in enumerate(snapshots(table), start=1)]


def format_snapshots(table: str | Path, query: str | None = None) -> TextBlock:
    """The snapshots as a fixed-width table (``this query``: written by ``query``; ``-`` not a stream's commit)."""
    shown = snapshot_rows(table, query)
    if not shown:
        return TextBlock("no snapshots yet")
    columns = [("n", "#"), ("operation", "operation"), ("epoch", "epochId")]
    columns += [("query", "this query")] if query is not None else []
    columns += [("added", "rows added"), ("total", "rows in table"), ("ancestor", "ancestor of current")]
    rows_ = [{k: ("-" if v is None else v) for k, v in row.items()} for row in shown]
    return TextBlock(text_table(rows_, columns, numeric=("n", "epoch", "added", "total")))


def anatomy(table: str | Path, query: str | None = None) -> TextBlock:
    """The table's files by kind (counts), then its snapshots: Iceberg's counterpart of inspector.format_delta_log."""
    counts = layout(table)
    lines = [f"{kind:<15} {'yes' if value is True else 'no' if value is False else value}"
             for kind, value in counts.items()]
    return TextBlock("\n".join(lines) + "\n\n" + format_snapshots(table, query))
