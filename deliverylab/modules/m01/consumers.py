"""Module 01, the code learners read: one plain Kafka consumer in four variants.

Every variant reads the lesson's orders topic in batches and writes each order as a row in
a SQLite database file. Handling a batch takes two steps, and the *order* of the two steps
(and what ties them together) is the whole difference between the guarantees:

    commit_then_write   at-most-once    commit offsets to Kafka, then write the rows
    write_then_commit   at-least-once   write the rows, then commit offsets to Kafka
    offsets_with_data   exactly-once    rows and offsets in ONE SQLite transaction
    upsert_by_id        exactly-once    write then commit, but the write is an upsert on order_id
                        (effect)        (the primary key): a replayed row replaces the row it wrote
                                        before. Exactly-once only because each order_id is one
                                        event here (see the lesson).

:data:`VARIANTS` is the one table of them. The machinery that runs a variant in a process
of its own and crashes it is in ``harness.py``.
"""
from __future__ import annotations

import inspect
import json
import os
import signal
import sqlite3
from dataclasses import dataclass
from typing import Callable

from ...config import CourseError
from ...course import did_you_mean

#: The moments at which a consumer can be killed, for the batch number given as crash_batch.
CRASH_MOMENTS = {
    "after_poll": "batch N is polled; neither step has run",
    "between_steps": "step 1 of batch N is done; step 2 is not",
    "after_batch": "both steps of batch N are done",
}


# --------------------------------------------------------------------------- the crash hook


@dataclass
class CrashPoint:
    """Kills this process with SIGKILL when ``moment`` is reached in batch number ``batch``."""

    moment: str | None = None
    batch: int | None = None
    current_batch: int = 0
    log: Callable[[dict], None] = lambda event: None

    def maybe_crash(self, moment: str) -> None:
        if moment == self.moment and self.current_batch == self.batch:
            self.log({"event": "crash", "moment": moment, "batch": self.current_batch})
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no finally blocks: a real process death


# --------------------------------------------------------------------------- the two steps


def insert_rows(db: sqlite3.Connection, batch: list) -> None:
    """A plain INSERT per record: the table has no key, so a second copy is a second row."""
    db.executemany(
        "INSERT INTO orders (order_id, customer_id, amount, status, event_time, kafka_partition, kafka_offset)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [_row(record) for record in batch],
    )


def upsert_rows(db: sqlite3.Connection, batch: list) -> None:
    """An upsert on order_id (the primary key): a row whose id is already there replaces it."""
    db.executemany(
        "INSERT INTO orders (order_id, customer_id, amount, status, event_time, kafka_partition, kafka_offset)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (order_id) DO UPDATE SET"
        " customer_id = excluded.customer_id, amount = excluded.amount, status = excluded.status,"
        " event_time = excluded.event_time, kafka_partition = excluded.kafka_partition,"
        " kafka_offset = excluded.kafka_offset",
        [_row(record) for record in batch],
    )


def commit_to_kafka(consumer, batch: list) -> None:
    """Store in Kafka, for this consumer group, the offset of the next record to read (last + 1)."""
    from kafka.structs import OffsetAndMetadata

    consumer.commit({tp: OffsetAndMetadata(offset, "", -1) for tp, offset in next_offsets(batch).items()})


def save_offsets(db: sqlite3.Connection, batch: list) -> None:
    """Store in the database the offset after the batch's last record, per partition."""
    db.executemany(
        "INSERT INTO offsets (topic, partition, next_offset) VALUES (?, ?, ?)"
        " ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset",
        [(tp.topic, tp.partition, offset) for tp, offset in next_offsets(batch).items()],
    )


def next_offsets(batch: list) -> dict:
    """{TopicPartition: offset of the batch's last record in it + 1}: where to resume."""
    from kafka import TopicPartition

    ends = {}
    for record in batch:
        tp = TopicPartition(record.topic, record.partition)
        ends[tp] = max(ends.get(tp, 0), record.offset + 1)
    return ends


def order_of(record) -> dict:
    """A record's value: the order as JSON."""
    return json.loads(record.value)


def _row(record) -> tuple:
    order = order_of(record)
    return (order["order_id"], order["customer_id"], str(order["amount"]), order["status"],
            order["event_time"], record.partition, record.offset)


# --------------------------------------------------------------------------- the variants


def commit_then_write(consumer, db, batch, crash_point):
    """At-most-once: tell Kafka the batch is done, then write it."""
    commit_to_kafka(consumer, batch)           # step 1: the group's offsets move past the batch
    crash_point.maybe_crash("between_steps")
    with db:                                   # step 2: the rows are committed in SQLite
        insert_rows(db, batch)


def write_then_commit(consumer, db, batch, crash_point):
    """At-least-once: write the batch, then tell Kafka it is done."""
    with db:                                   # step 1: the rows are committed in SQLite
        insert_rows(db, batch)
    crash_point.maybe_crash("between_steps")
    commit_to_kafka(consumer, batch)           # step 2: the group's offsets move past the batch


def offsets_with_data(consumer, db, batch, crash_point):
    """Exactly-once: the rows and the offsets commit together, in one SQLite transaction."""
    with db:                                   # one transaction: both steps or neither
        insert_rows(db, batch)                 # step 1: the rows
        crash_point.maybe_crash("between_steps")
        save_offsets(db, batch)                # step 2: where to resume, next to the rows


def upsert_by_id(consumer, db, batch, crash_point):
    """Exactly-once effect: at-least-once delivery into a write that a repeat cannot double."""
    with db:                                   # step 1: one row per order_id, a repeat replaces it
        upsert_rows(db, batch)
    crash_point.maybe_crash("between_steps")
    commit_to_kafka(consumer, batch)           # step 2: the group's offsets move past the batch


# --------------------------------------------------------------------------- where to start


def start_from_group(consumer, db, topic):
    """commit_then_write, write_then_commit, upsert_by_id: Kafka's group offsets say where to resume."""
    consumer.subscribe([topic])


def start_from_database(consumer, db, topic):
    """offsets_with_data: the group is not used; the offsets stored with the rows say where to resume."""
    from kafka import TopicPartition

    partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
    consumer.assign(partitions)
    stored = dict(db.execute("SELECT partition, next_offset FROM offsets WHERE topic = ?", (topic,)))
    for tp in partitions:
        if tp.partition in stored:
            consumer.seek(tp, stored[tp.partition])
        else:
            consumer.seek_to_beginning(tp)


_ORDERS_TABLE = """CREATE TABLE IF NOT EXISTS orders (
    order_id TEXT{key}, customer_id TEXT, amount TEXT, status TEXT, event_time TEXT,
    kafka_partition INTEGER, kafka_offset INTEGER)"""
_OFFSETS_TABLE = """CREATE TABLE IF NOT EXISTS offsets (
    topic TEXT, partition INTEGER, next_offset INTEGER, PRIMARY KEY (topic, partition))"""




@dataclass(frozen=True)
class Variant:
    name: str
    handle: Callable      # one batch: the two steps, in this variant's order
    start: Callable       # where to resume: the group's offsets, or the database's
    uses_group: bool      # does it commit offsets to a Kafka consumer group?
    tables: tuple         # the SQLite tables it writes
    guarantee: str        # what a crash between the two steps gives (the ledger's verdict)
    summary: str


VARIANTS = {v.name: v for v in (
    Variant("commit_then_write", commit_then_write, start_from_group, True, (_ORDERS_TABLE.format(key=""),),
            "at-most-once", "commit offsets to Kafka, then write rows; a crash in between loses the batch"),
    Variant("write_then_commit", write_then_commit, start_from_group, True, (_ORDERS_TABLE.format(key=""),),
            "at-least-once", "write rows, then commit offsets to Kafka; a crash in between writes the batch twice"),
    Variant("offsets_with_data", offsets_with_data, start_from_database, False,
            (_ORDERS_TABLE.format(key=""), _OFFSETS_TABLE),
            "exactly-once", "rows and offsets in one SQLite transaction; a crash in between leaves neither"),
    Variant("upsert_by_id", upsert_by_id, start_from_group, True, (_ORDERS_TABLE.format(key=" PRIMARY KEY"),),
            "exactly-once", "write then commit, but an upsert on order_id: a replayed row replaces its first copy"),
)}


def check_variant(variant: str) -> str:
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise CourseError(f"Unknown consumer variant {variant!r}.{did_you_mean(variant, VARIANTS)} "
                          f"Valid variants: {', '.join(VARIANTS)}.")
    return variant


def check_moment(moment: str) -> str:
    if not isinstance(moment, str) or moment not in CRASH_MOMENTS:
        raise CourseError(f"Unknown crash moment {moment!r}.{did_you_mean(moment, CRASH_MOMENTS)} "
                          f"Valid crash moments: {', '.join(CRASH_MOMENTS)}.")
    return moment


def expected_outcome(variant: str, crash: str = "between_steps") -> str:
    """The ledger verdict a crash at ``crash`` should give: only between the steps do the variants differ."""
    check_variant(variant)
    return VARIANTS[variant].guarantee if check_moment(crash) == "between_steps" else "exactly-once"


def source(variant: str, start: bool = False) -> str:
    """The code of a variant's batch handler (or, with ``start=True``, of how it starts)."""
    v = VARIANTS[check_variant(variant)]
    return inspect.getsource(v.start if start else v.handle)
