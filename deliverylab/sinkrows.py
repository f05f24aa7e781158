"""Delivered rows read back from the course's real sinks: a Delta table, a Parquet folder, a SQLite table, a
Kafka topic. Each reader returns a list of ``(order_id, Decimal amount)`` for the ledger (``ledger.reconcile``);
:func:`read_delta_states` adds each row's status, for ``ledger.reconcile_states``.

The ledger re-exports these readers (``ledger.read_delta`` and the rest), as lessons call them.
"""
from __future__ import annotations

import json
import sqlite3
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from .config import CourseError
from .rows import check_id, normalise_rows, normalise_states, to_amount

ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


def _is_local(path: str) -> bool:
    return "://" not in path and not path.startswith("file:")


def _collect_pairs(df, where: str) -> list[tuple[Any, Decimal]]:
    """Collect order_id and amount from a Spark DataFrame as (order_id, Decimal) pairs."""
    missing = [c for c in ("order_id", "amount") if c not in df.columns]
    if missing:
        raise CourseError(
            f"{where} has columns {df.columns} but no {', '.join(missing)}. "
            "The ledger needs order_id and amount; check what the pipeline writes."
        )
    return normalise_rows(((r[0], r[1]) for r in df.select("order_id", "amount").collect()), where)


def read_delta(spark, path: str | Path) -> list[tuple[Any, Decimal]]:
    """Rows of the Delta table at ``path`` as committed in its latest version."""
    path = str(path)
    if _is_local(path) and not (Path(path) / "_delta_log").is_dir():
        raise CourseError(f"no Delta table at {path} (no _delta_log folder). Run the pipeline first.")
    return _collect_pairs(spark.read.format("delta").load(path), f"Delta table {path}")


def read_delta_states(spark, path: str | Path) -> list[tuple[Any, Decimal, Any]]:
    """Rows of the Delta table at ``path`` (latest version) as ``(order_id, Decimal amount, status)``."""
    path = str(path)
    if _is_local(path) and not (Path(path) / "_delta_log").is_dir():
        raise CourseError(f"no Delta table at {path} (no _delta_log folder). Run the pipeline first.")
    df = spark.read.format("delta").load(path)
    missing = [c for c in ("order_id", "amount", "status") if c not in df.columns]
    if missing:
        raise CourseError(f"Delta table {path} has columns {df.columns} but no {', '.join(missing)}: the final-state "
                          "ledger needs order_id, amount and status.")
    return normalise_states((tuple(r) for r in df.select("order_id", "amount", "status").collect()), f"Delta table {path}")


# Internal Spark SQL setting: when true, a directory written by the file sink is listed
# like any other folder instead of through its _spark_metadata commit log.
_IGNORE_SINK_LOG = "spark.sql.streaming.fileStreamSink.ignoreMetadata"


def read_parquet(spark, path: str | Path, honour_sink_log: bool = True) -> list[tuple[Any, Decimal]]:
    """Rows of every Parquet file under ``path``, read as a plain folder (no Delta log).

    On a Delta table folder this also returns files of uncommitted attempts and files
    that later commits removed: exactly what a reader that ignores the log would see.
    A folder written by Spark's own file sink has a ``_spark_metadata`` log that Spark
    honours by default; pass ``honour_sink_log=False`` to list the folder regardless.
    """
    path = str(path)
    if _is_local(path) and not Path(path).exists():
        raise CourseError(f"nothing at {path}. Run the pipeline that writes it first.")
    previous = spark.conf.get(_IGNORE_SINK_LOG, None)
    spark.conf.set(_IGNORE_SINK_LOG, "false" if honour_sink_log else "true")
    try:
        return _collect_pairs(spark.read.parquet(path), f"Parquet folder {path}")
    finally:
        if previous is None:
            spark.conf.unset(_IGNORE_SINK_LOG)
        else:
            spark.conf.set(_IGNORE_SINK_LOG, previous)


def _quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_sqlite(db_path: str | Path, table: str) -> list[tuple[Any, Decimal]]:
    """Rows of ``table`` in the SQLite file ``db_path`` (opened read-only, never created)."""
    db_path = Path(db_path)
    if not db_path.is_file():
        raise CourseError(f"no SQLite database at {db_path}. Run the pipeline that writes it first.")
    connection = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        known = {
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        }
        if table not in known:
            raise CourseError(
                f"{db_path.name} has no table {table!r} (it has: {', '.join(sorted(known)) or 'none'})."
            )
        try:
            rows = connection.execute(f"SELECT order_id, amount FROM {_quote_identifier(table)}").fetchall()
        except sqlite3.OperationalError as error:
            raise CourseError(f"cannot read order_id and amount from {table!r} in {db_path.name}: {error}") from None
    finally:
        connection.close()
    return normalise_rows(rows, f"sqlite table {table}")


def parse_order_json(value: bytes | str | None, where: str = "a record") -> tuple[Any, Decimal] | None:
    """One Kafka record value (JSON with order_id and amount) as a pair; None for a tombstone."""
    if value is None:
        return None
    try:
        text = value.decode("utf-8") if isinstance(value, bytes) else value
        document = json.loads(text, parse_float=Decimal)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CourseError(f"{where} is not JSON: {value[:80]!r}") from None
    if not isinstance(document, dict) or "order_id" not in document or "amount" not in document:
        raise CourseError(f"{where} is JSON but not an order with order_id and amount: {str(document)[:80]}")
    order_id = check_id(document["order_id"], where)
    return order_id, to_amount(document["amount"], order_id)


def _position(consumer, tp, timeout_ms: int) -> int:
    position = consumer.position(tp, timeout_ms=timeout_ms)
    return -1 if position is None else position


def read_kafka_topic(
    bootstrap: str,
    topic: str,
    isolation_level: str = "read_committed",
    timeout_s: float = 30.0,
) -> list[tuple[Any, Decimal]]:
    """Every order in ``topic`` from the beginning up to the end offsets at call time.

    ``read_committed`` skips records of aborted transactions and stops before any
    transaction that is still open; ``read_uncommitted`` shows everything written,
    aborted attempts included. Records are returned partition by partition, in offset order.
    """
    if isolation_level not in ISOLATION_LEVELS:
        raise CourseError(f"isolation_level must be one of {ISOLATION_LEVELS}, not {isolation_level!r}.")
    from kafka import TopicPartition

    from .stack import kafka

    timeout_ms = int(timeout_s * 1000)
    with kafka.consumer(bootstrap, client_id="deliverylab-ledger", isolation_level=isolation_level,
                        consumer_timeout_ms=timeout_ms) as consumer:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise CourseError(f"topic {topic!r} does not exist on {bootstrap}. Produce to it (or create it) first.")
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps, timeout_ms=timeout_ms)
        return _drain(consumer, tps, end, timeout_s, topic)


def _drain(consumer, tps, end: dict, timeout_s: float, topic: str) -> list[tuple[Any, Decimal]]:
    """Poll until every partition's position has reached its end offset."""
    by_partition: dict[int, list] = {tp.partition: [] for tp in tps}
    deadline = time.monotonic() + timeout_s
    remaining = [tp for tp in tps if _position(consumer, tp, 5000) < end[tp]]
    while remaining:
        if time.monotonic() > deadline:
            behind = ", ".join(f"p{tp.partition} at {_position(consumer, tp, 1000)} of {end[tp]}" for tp in remaining)
            raise CourseError(
                f"reading {topic!r} did not reach the end within {timeout_s:.0f}s ({behind}). "
                "Check the broker with `python -m deliverylab stack status`, then try again with a larger timeout_s."
            )
        for tp, records in consumer.poll(timeout_ms=500).items():
            for record in records:
                if record.offset < end[tp]:  # later records arrived after the snapshot
                    where = f"{topic} p{tp.partition} offset {record.offset}"
                    pair = parse_order_json(record.value, where)
                    if pair is not None:
                        by_partition[tp.partition].append((record.offset, pair))
        done = [tp for tp in remaining if _position(consumer, tp, 1000) >= end[tp]]
        if done:
            consumer.pause(*done)
        remaining = [tp for tp in remaining if tp not in done]
    rows = []
    for partition in sorted(by_partition):
        rows.extend(pair for _, pair in sorted(by_partition[partition], key=lambda item: item[0]))
    return rows
