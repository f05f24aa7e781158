"""Two-phase commit, the general pattern, as a small sink: stage where no reader looks, then publish once.

    <folder>/staging/epoch=<N>/rows.jsonl    phase 1, stage(): written where readers never look
    <folder>/published/epoch=<N>/            phase 2, publish(): ONE rename moves the staged folder here

On one POSIX or HDFS file system a rename is atomic: a reader lists the epoch's folder whole
or not at all. Not on an object store (S3, GCS, Azure Blob through Hadoop's connectors): there a
folder "rename" copies and deletes file by file, so a reader can see part of an epoch.
``stage`` first throws away whatever a crashed attempt left in ``staging/epoch=N``;
``publish`` does nothing when ``published/epoch=N`` exists, so publishing an epoch twice
(a replay after a crash between publish and Spark's commit) changes nothing. The epoch is
the micro-batch id: a replay of batch N stages and publishes epoch N again.

Readers (:func:`read_published`) see published epochs only. This is the shape of the sinks
that recognise a batch they already committed: Delta's commit, the file sink's
``_spark_metadata`` and a Kafka transaction all stage output where readers that honour the log
do not look, then make it visible in one atomic step that records the batch. A MERGE or an
upsert on a key records no batch id: it is safe another way, by being idempotent.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterable

STAGING, PUBLISHED = "staging", "published"


def _epoch_dir(folder: str | Path, phase: str, epoch: int) -> Path:
    return Path(folder) / phase / f"epoch={epoch}"


def stage(folder: str | Path, epoch: int, rows: Iterable[dict]) -> Path:
    """Phase 1: write the epoch's rows under staging/ (readers never look there). Returns the folder."""
    target = _epoch_dir(folder, STAGING, epoch)
    shutil.rmtree(target, ignore_errors=True)  # a crashed attempt's half-staged epoch
    target.mkdir(parents=True)
    with open(target / "rows.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, default=str, sort_keys=True) + "\n")
    return target


def publish(folder: str | Path, epoch: int) -> bool:
    """Phase 2: make the staged epoch visible in one rename (atomic on one POSIX/HDFS file system).
    False if it was published already."""
    published = _epoch_dir(folder, PUBLISHED, epoch)
    staged = _epoch_dir(folder, STAGING, epoch)
    if published.exists():
        shutil.rmtree(staged, ignore_errors=True)
        return False
    published.parent.mkdir(parents=True, exist_ok=True)
    staged.rename(published)
    return True


def epochs(folder: str | Path, phase: str) -> list[int]:
    base = Path(folder) / phase
    if not base.is_dir():
        return []
    return sorted(int(p.name.split("=", 1)[1]) for p in base.iterdir() if p.name.startswith("epoch="))


def read_published(folder: str | Path) -> list[dict]:
    """Every row of every published epoch: what a reader of this sink sees."""
    rows = []
    for epoch in epochs(folder, PUBLISHED):
        with open(_epoch_dir(folder, PUBLISHED, epoch) / "rows.jsonl", encoding="utf-8") as fh:
            rows.extend(json.loads(line) for line in fh if line.strip())
    return rows
