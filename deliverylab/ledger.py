"""The delivery ledger: which produced orders reached a sink, how often, and what it did to revenue.

Every lab ends the same way: we know exactly which orders the producer sent (the
*produced* list) and we read back whatever the sink holds (the *delivered* rows). The
ledger lines the two up, id by id:

    >>> ledger = reconcile(produced, delivered, label="at-least-once")
    >>> print(ledger.verdict_line())
    verdict: at-least-once (produced=2000 lost=0 duplicated=37)

Rows on both sides are ``(order_id, amount)`` pairs or dicts with ``order_id`` and
``amount`` keys (Spark ``Row`` objects work too). Amounts are kept as
:class:`decimal.Decimal` rounded to cents, so revenue totals are exact: a difference
of 0.01 is a real difference, never floating-point noise.

The ``read_*`` helpers fetch delivered rows from the course's real sinks. They all
return a list of ``(order_id, Decimal amount)``.
"""
from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from .config import CourseError

CENT = Decimal("0.01")

EXACTLY_ONCE = "exactly-once"
AT_MOST_ONCE = "at-most-once"
AT_LEAST_ONCE = "at-least-once"
LOST_AND_DUPLICATED = "lost and duplicated"

#: Every verdict the ledger can reach, in the order the course introduces them.
VERDICTS = (AT_MOST_ONCE, AT_LEAST_ONCE, EXACTLY_ONCE, LOST_AND_DUPLICATED)

#: Labels of the copy buckets used by :meth:`Ledger.copy_buckets` and the charts.
COPY_BUCKETS = ("0", "1", "2", "3+")

ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


# --------------------------------------------------------------------------- values


def to_amount(value: Any, order_id: Any = None) -> Decimal:
    """Turn an amount from any sink (Decimal, int, float, str) into a Decimal rounded to cents.

    Floats go through their shortest text form, so ``19.99`` becomes ``Decimal('19.99')``
    and not the binary approximation ``19.989999...``.
    """
    if isinstance(value, bool) or value is None:
        raise CourseError(f"order {order_id!r} has amount {value!r}; every row needs a numeric amount.")
    try:
        if isinstance(value, Decimal):
            amount = value
        elif isinstance(value, int):
            amount = Decimal(value)
        elif isinstance(value, float):
            amount = Decimal(repr(value))
        elif isinstance(value, (str, bytes)):
            text = value.decode() if isinstance(value, bytes) else value
            amount = Decimal(text.strip())
        else:
            raise InvalidOperation
        if not amount.is_finite():
            raise InvalidOperation
    except (InvalidOperation, ValueError, UnicodeDecodeError):
        raise CourseError(
            f"order {order_id!r} has amount {value!r}, which is not a number. "
            "Amounts must be numbers like 19.99 (or strings such as '19.99')."
        ) from None
    return amount.quantize(CENT, rounding=ROUND_HALF_EVEN)


def _split_row(row: Any, side: str) -> tuple[Any, Any]:
    """One row as (order_id, raw amount): accepts pairs, dicts and Spark Rows."""
    if hasattr(row, "asDict"):  # pyspark.sql.Row
        row = row.asDict()
    if isinstance(row, Mapping):
        if "order_id" not in row or "amount" not in row:
            raise CourseError(
                f"a {side} row has keys {sorted(row)}; it needs 'order_id' and 'amount'."
            )
        return row["order_id"], row["amount"]
    if isinstance(row, (tuple, list)) and len(row) >= 2:
        return row[0], row[1]
    raise CourseError(
        f"a {side} row looks like {row!r}; give (order_id, amount) pairs or dicts "
        "with 'order_id' and 'amount'."
    )


def _check_id(order_id: Any, side: str) -> Any:
    if order_id is None or isinstance(order_id, bool):
        raise CourseError(f"a {side} row has order_id {order_id!r}; every row needs a real order id.")
    return order_id


def normalise_rows(rows: Iterable[Any], side: str = "delivered") -> list[tuple[Any, Decimal]]:
    """Rows of any accepted shape as a list of ``(order_id, Decimal amount)``."""
    pairs = []
    for row in rows:
        order_id, raw = _split_row(row, side)
        order_id = _check_id(order_id, side)
        pairs.append((order_id, to_amount(raw, order_id)))
    return pairs


def id_sort_key(order_id: Any) -> tuple:
    """Sort key that keeps numbers in numeric order and never compares a str with an int."""
    if isinstance(order_id, (int, float, Decimal)):
        return (0, order_id, "")
    if isinstance(order_id, str):
        return (1, 0, order_id)
    return (2, 0, repr(order_id))


def sorted_ids(ids: Iterable[Any]) -> tuple:
    return tuple(sorted(ids, key=id_sort_key))


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _money(value: Decimal) -> str:
    return f"{value:.2f}"


def _signed_money(value: Decimal) -> str:
    return f"{value:+.2f}" if value else "0.00"


# --------------------------------------------------------------------------- the ledger


@dataclass(frozen=True, repr=False)
class Ledger:
    """The outcome of one pipeline run, id by id. Build it with :func:`reconcile`.

    Counts of ids (not rows) unless the name says otherwise:

    * ``produced``        ids the producer sent
    * ``delivered_once``  produced ids found exactly once in the sink
    * ``duplicated``      produced ids found more than once
    * ``extra_copies``    rows beyond the first, summed over the duplicated ids
    * ``lost``            produced ids never found
    * ``unexpected``      ids in the sink that were never produced
    * ``delivered_rows``  every row the sink holds, duplicates and unexpected ones included

    ``copies`` maps every id found in the sink to its number of rows (a Counter, so a
    lost id reads as 0). ``lost_ids``, ``duplicated_ids`` and ``unexpected_ids`` are
    sorted tuples.
    """

    label: str | None
    copies: Counter
    produced: int
    delivered_rows: int
    delivered_once: int
    duplicated: int
    extra_copies: int
    lost: int
    unexpected: int
    revenue_expected: Decimal
    revenue_observed: Decimal
    lost_ids: tuple
    duplicated_ids: tuple
    unexpected_ids: tuple
    copies_of_produced: tuple  # copies per produced id, same order as the produced input
    verdict: str

    @property
    def revenue_difference(self) -> Decimal:
        """Observed minus expected revenue: positive when duplicates inflate it, negative on loss."""
        return self.revenue_observed - self.revenue_expected

    def copy_buckets(self) -> dict[str, int]:
        """How many produced ids have 0, 1, 2 and 3 or more copies in the sink."""
        buckets = dict.fromkeys(COPY_BUCKETS, 0)
        for count in self.copies_of_produced:
            buckets[str(count) if count < 3 else "3+"] += 1
        return buckets

    def verdict_line(self) -> str:
        """One stable line, e.g. ``verdict: exactly-once (produced=2000 lost=0 duplicated=0)``.

        In shared-broker mode the verdict also goes to the class board (workshop/events.py).
        """
        from .workshop import events

        events.verdict_seen(self.verdict, self.produced, self.lost, self.duplicated)
        return (
            f"verdict: {self.verdict} "
            f"(produced={self.produced} lost={self.lost} duplicated={self.duplicated})"
        )

    def summary(self) -> str:
        """A few aligned lines: counts, revenue expected against observed, and the verdict."""
        figures = [
            ("produced", str(self.produced), ""),
            ("delivered once", str(self.delivered_once), ""),
            ("duplicated", str(self.duplicated), f"({_plural(self.extra_copies, 'extra copy', 'extra copies')})"),
            ("lost", str(self.lost), ""),
        ]
        if self.unexpected:
            figures.append(("unexpected", str(self.unexpected), "(ids never produced)"))
        figures += [
            ("revenue expected", _money(self.revenue_expected), ""),
            ("revenue observed", _money(self.revenue_observed), f"({_signed_money(self.revenue_difference)})"),
        ]
        name_width = max(len(name) for name, _, _ in figures)
        value_width = max(len(value) for _, value, _ in figures)
        lines = [f"pipeline: {self.label}"] if self.label else []
        for name, value, note in figures:
            lines.append(f"{name:<{name_width}}  {value:>{value_width}}  {note}".rstrip())
        lines.append(self.verdict_line())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values; money as strings with two decimals so nothing is rounded."""
        return {
            "label": self.label,
            "verdict": self.verdict,
            "produced": self.produced,
            "delivered_rows": self.delivered_rows,
            "delivered_once": self.delivered_once,
            "duplicated": self.duplicated,
            "extra_copies": self.extra_copies,
            "lost": self.lost,
            "unexpected": self.unexpected,
            "revenue_expected": _money(self.revenue_expected),
            "revenue_observed": _money(self.revenue_observed),
            "revenue_difference": _signed_money(self.revenue_difference),
            "copy_buckets": self.copy_buckets(),
            "lost_ids": list(self.lost_ids),
            "duplicated_ids": list(self.duplicated_ids),
            "unexpected_ids": list(self.unexpected_ids),
        }

    def __repr__(self) -> str:
        name = f" {self.label!r}" if self.label else ""
        return f"<Ledger{name} {self.verdict_line()}>"

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython: show the summary, not the Counter
        printer.text(self.summary())


def verdict_for(lost: int, duplicated: int) -> str:
    """Name the delivery guarantee a run actually gave."""
    if lost and duplicated:
        return LOST_AND_DUPLICATED
    if lost:
        return AT_MOST_ONCE
    if duplicated:
        return AT_LEAST_ONCE
    return EXACTLY_ONCE


def _index_produced(pairs: list[tuple[Any, Decimal]]) -> dict[Any, Decimal]:
    """Produced ids must be unique: they are the truth the sink is measured against."""
    amounts: dict[Any, Decimal] = {}
    for order_id, amount in pairs:
        if order_id in amounts:
            raise CourseError(
                f"order id {order_id!r} appears twice in the produced list. Produced ids must be "
                "unique; pass the generator's list of orders, not rows read back from a topic."
            )
        amounts[order_id] = amount
    return amounts


def _check_id_types(produced: Iterable[Any], delivered: Iterable[Any]) -> None:
    """Catch the classic mismatch: ids are ints on one side and strings on the other."""
    produced_types = {type(i).__name__ for i in produced}
    delivered_types = {type(i).__name__ for i in delivered}
    if produced_types and delivered_types and produced_types.isdisjoint(delivered_types):
        raise CourseError(
            f"produced order ids are {'/'.join(sorted(produced_types))} but delivered ones are "
            f"{'/'.join(sorted(delivered_types))}, so nothing can match. Convert one side, "
            "e.g. cast the sink's order_id column to the producer's type."
        )


def reconcile(produced: Iterable[Any], delivered: Iterable[Any], label: str | None = None) -> Ledger:
    """Compare the orders a producer sent with the rows a sink holds and name the guarantee.

    ``produced``: the producer's orders, each id once. ``delivered``: every row read
    from the sink, duplicates included. Observed revenue sums *all* delivered rows
    (what a dashboard on that sink would report), unexpected ids included.
    """
    produced_amounts = _index_produced(normalise_rows(produced, "produced"))
    delivered_pairs = normalise_rows(delivered, "delivered")
    copies = Counter(order_id for order_id, _ in delivered_pairs)
    _check_id_types(produced_amounts, copies)

    copies_of_produced = tuple(copies[order_id] for order_id in produced_amounts)
    lost_ids = sorted_ids(i for i in produced_amounts if copies[i] == 0)
    duplicated_ids = sorted_ids(i for i in produced_amounts if copies[i] > 1)
    unexpected_ids = sorted_ids(i for i in copies if i not in produced_amounts)

    return Ledger(
        label=label,
        copies=copies,
        produced=len(produced_amounts),
        delivered_rows=len(delivered_pairs),
        delivered_once=sum(1 for n in copies_of_produced if n == 1),
        duplicated=len(duplicated_ids),
        extra_copies=sum(copies[i] - 1 for i in duplicated_ids),
        lost=len(lost_ids),
        unexpected=len(unexpected_ids),
        revenue_expected=sum(produced_amounts.values(), Decimal("0.00")),
        revenue_observed=sum((amount for _, amount in delivered_pairs), Decimal("0.00")),
        lost_ids=lost_ids,
        duplicated_ids=duplicated_ids,
        unexpected_ids=unexpected_ids,
        copies_of_produced=copies_of_produced,
        verdict=verdict_for(len(lost_ids), len(duplicated_ids)),
    )


# --------------------------------------------------------------------------- reading sinks


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
    order_id = _check_id(document["order_id"], where)
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
