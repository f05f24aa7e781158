"""Lesson 07 section 3: a topic added to ``subscribe``, or replaced, on a restart from the same checkpoint.

Spark's Kafka source (Spark 4.2.0, ``KafkaMicroBatchStream``) reads a partition the checkpoint does not
know from its earliest offset, whatever ``startingOffsets`` says (that option is only for a query's
first start); a new partition whose earliest offset is not 0 is reported as data loss
(``ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO``), and so are the checkpoint's partitions missing
from the subscription (``PARTITIONS_DELETED``). Both reports come from the driver as it plans a batch:
with ``failOnDataLoss=true`` the query stops, with ``false`` it logs a warning and goes on.

:func:`run` makes each case happen once, on one checkpoint, with ``trigger(availableNow=True)`` runs
(kernel.py), and returns the lines the lesson prints.
"""
from __future__ import annotations

import re
from pathlib import Path

from ... import ledger
from ...sparkerrors import with_causes
from .kernel import drop_unread, error_class, orders_from, run_to_end

#: The two reasons the driver gives (Spark 4.2.0's kafka-error-conditions.json, KAFKA_DATA_LOSS.*).
REASONS = re.compile(r"Added partition \S+ starts from \d+ instead of 0\.|Partitions \S.*? have been deleted\.")


def reason(error, prefix: str = "") -> str:
    """Which data loss the driver reported (the topic names without ``prefix``), else the error's name."""
    found = REASONS.search(with_causes(error))
    if not found:
        return error_class(error)
    text = found.group(0).replace(prefix, "")
    # a Scala Set's order is not the subscription's: list its partitions sorted, for a stable line
    text = re.sub(r"Set\(([^)]*)\)", lambda m: "Set(" + ", ".join(sorted(m.group(1).split(", "))) + ")", text)
    return "data loss: " + text


def run(spark, lesson) -> list[str]:
    """The four cases, each printed as what the restarted query did (its rows so far, or the reason it stopped)."""
    from ...stack import kafka

    first, added, other, trimmed = (lesson.topic(name) for name in ("tc-first", "tc-added", "tc-other", "tc-trimmed"))
    table = lesson.table("topic-changes")
    next_id = 0

    def produce(name: str, n: int) -> None:
        nonlocal next_id
        lesson.produce_orders(n, topic=name, start=next_id, progress=False)
        next_id += n

    def rows() -> int:
        return len(ledger.read_delta(spark, table)) if (Path(table) / "_delta_log").is_dir() else 0

    def restart(checkpoint: str, topics: str, fail: bool = True) -> str:
        stream = orders_from(spark, lesson.bootstrap, topics, fail_on_data_loss=fail, starting_offsets="latest")
        stopped = run_to_end(stream, lesson.checkpoint(checkpoint), table,
                             errors=lambda error: reason(error, lesson.topic_prefix))
        return stopped or f"finished, {rows()} rows in the table"

    produce("tc-first", 30)
    lines = [f"first start (tc-first, latest):         {restart('a', first)}"]
    produce("tc-first", 20)
    produce("tc-added", 40)
    lines.append(f"tc-added added (latest):                {restart('a', first + ',' + added)}")
    produce("tc-other", 15)
    lines.append(f"tc-first and tc-added replaced:         {restart('a', other)}")
    lines.append(f"the same with failOnDataLoss=false:     {restart('a', other, fail=False)}")
    kafka.ensure_topic(lesson.bootstrap, trimmed, partitions=1)
    produce("tc-trimmed", 10)
    drop_unread(lesson.bootstrap, trimmed)  # as retention would: its earliest offset is 10 now
    restart("b", first)  # another query, started on tc-first only
    lines.append(f"tc-trimmed (earliest offset 10) added:  {restart('b', first + ',' + trimmed)}")
    return lines
