"""Two ways the lesson's consumers stop meaning what their code says, each shown on the real broker in the kernel.

    auto_commit_in_poll(lesson)   a consumer left at kafka-python's default ``enable_auto_commit=True``: its
                                  next ``poll()`` commits the offsets of the batch it returned last, before the
                                  code has written a row of it (what the course's consumers turn off)
    two_copies_assigned(lesson)   two copies of ``offsets_with_data`` run side by side, each assigning itself
                                  every partition as the lesson's code does: both write every order

kafka-python 3.0.12 (the pinned version) commits automatically from ``ConsumerCoordinator.poll``, which every
``KafkaConsumer.poll()`` calls first: once ``auto_commit_interval_ms`` (5000 by default) has passed, it sends
the positions of everything ``poll()`` has returned so far (``SubscriptionState.all_consumed_offsets``), and
``close()`` does the same unless told ``autocommit=False``. The Java client (kafka-clients 4.3, its default
``group.protocol=classic``) does the same inside ``poll()`` (``ConsumerCoordinator.maybeAutoCommitOffsetsAsync``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ...stack import kafka

#: The interval of the demo's automatic commits: shorter than the default 5000 ms, so the cell waits less.
DEMO_INTERVAL_MS = 1000
WAIT_LIMIT_S = 120


@dataclass
class AutoCommit:
    default_on: bool           # kafka-python's own default for enable_auto_commit
    default_interval_ms: int   # ... and for auto_commit_interval_ms
    polled: int                # records the first poll() returned (the batch the code has not written)
    committed: int             # what the group's committed offsets cover, summed over partitions, after poll()
    resumed_at: int            # where a consumer of the group starts after this one died, summed likewise

    def lines(self) -> list[str]:
        return [f"kafka-python's defaults: enable_auto_commit={self.default_on}, "
                f"auto_commit_interval_ms={self.default_interval_ms}",
                f"offsets the next poll() committed, before a row of the batch was written, cover the batch: "
                f"{self.committed == self.polled}",
                f"a consumer of the group started after a crash here resumes past that batch: {self.resumed_at == self.polled}"]


def _committed(consumer, partitions) -> int:
    return sum((consumer.committed(tp) or 0) for tp in partitions)


def auto_commit_in_poll(lesson, topic: str = "orders", interval_ms: int = DEMO_INTERVAL_MS) -> AutoCommit:
    """A group consumer with automatic commits on polls one batch and writes nothing. After the interval it
    calls ``poll()`` again with its partitions paused (so that poll fetches nothing more): that call commits the
    first batch's offsets. Then the consumer is dropped without a clean close, as a crash would, and a new member
    of the group shows where it would resume."""
    from kafka import KafkaConsumer, TopicPartition

    name, group = lesson.topic(topic), f"{lesson.topic_prefix}auto-commit-demo"
    kafka.delete_group(lesson.bootstrap, group)
    settings = dict(group_id=group, auto_offset_reset="earliest", auto_commit_interval_ms=interval_ms,
                    max_poll_records=100, client_id="deliverylab-auto-commit-demo")
    first = kafka.client(KafkaConsumer, lesson.bootstrap, **settings)  # enable_auto_commit left at its default
    try:
        # the topic's partitions first, as the lesson's consumers do: a consumer that joins its group before it
        # knows them can be assigned nothing until its next metadata refresh
        partitions = [TopicPartition(name, p) for p in sorted(first.partitions_for_topic(name) or ())]
        first.subscribe([name])
        deadline = time.monotonic() + WAIT_LIMIT_S
        batch = {}
        while not batch and time.monotonic() < deadline:
            batch = first.poll(timeout_ms=200)          # joins the group, then returns a batch
        polled = sum(len(records) for records in batch.values())
        first.pause(*first.assignment())                # the next polls fetch nothing: positions stay put
        first.poll(timeout_ms=interval_ms + 200)        # the loop's next poll(), once the interval has passed
        while _committed(first, partitions) < polled and time.monotonic() < deadline:
            first.poll(timeout_ms=200)                  # the commit's answer arrives in a later poll
        committed = _committed(first, partitions)
    finally:
        first.close(autocommit=False)                   # no clean close: a crash commits nothing more
    second = kafka.client(KafkaConsumer, lesson.bootstrap, **{**settings, "enable_auto_commit": False})
    try:
        second.assign(partitions)                       # its position: the group's committed offset, per partition
        resumed_at = sum(second.position(tp) for tp in partitions)
    finally:
        second.close(autocommit=False)
    kafka.delete_group(lesson.bootstrap, group)
    return AutoCommit(KafkaConsumer.DEFAULT_CONFIG["enable_auto_commit"],
                      KafkaConsumer.DEFAULT_CONFIG["auto_commit_interval_ms"], polled, committed, resumed_at)


def two_copies_assigned(lesson, topic: str = "orders"):
    """Two copies of the lesson's ``offsets_with_data`` (its code, unchanged: ``start_from_database`` and its
    batch handler) share one SQLite database, as two instances of one application would, and take turns batch by
    batch in this process until each has read the topic to its end. Returns the ledger of the database."""
    from kafka import KafkaConsumer, TopicPartition

    from ... import ledger
    from .consumers import CrashPoint, offsets_with_data, start_from_database
    from .process import _caught_up, open_db

    name = lesson.topic(topic)
    path = lesson.path("two-copies.db")
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(path + suffix).unlink(missing_ok=True)
    db = open_db(path, "offsets_with_data")
    copies = []
    try:
        for n in (1, 2):
            consumer = kafka.client(KafkaConsumer, lesson.bootstrap, group_id=None, enable_auto_commit=False,
                                    max_poll_records=100, client_id=f"deliverylab-copy-{n}")
            copies.append(consumer)
        ends = {}
        for consumer in copies:                         # each starts as the lesson's code does
            start_from_database(consumer, db, name)
            ends[consumer] = consumer.end_offsets([TopicPartition(name, p)
                                                   for p in sorted(consumer.partitions_for_topic(name))])
        deadline = time.monotonic() + WAIT_LIMIT_S
        while not all(_caught_up(c, ends[c]) for c in copies) and time.monotonic() < deadline:
            for consumer in copies:
                polled = consumer.poll(timeout_ms=200)
                batch = [record for tp in sorted(polled) for record in polled[tp]]
                if batch:
                    offsets_with_data(consumer, db, batch, CrashPoint())
    finally:
        for consumer in copies:
            consumer.close(autocommit=False)
        db.close()
    return ledger.reconcile(ledger.read_kafka_topic(lesson.bootstrap, name), ledger.read_sqlite(path, "orders"),
                            label="two copies, each assigning every partition")
