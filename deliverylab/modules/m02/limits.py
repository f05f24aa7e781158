"""How the Kafka source sizes a batch, and a topic whose partitions are filled by hand.

    share_out(limit, waiting)                  the records per partition one batch takes when
                                               ``maxOffsetsPerTrigger=limit`` and ``waiting``
                                               records wait in each partition (Spark 4.2's rule)
    fill_partitions(bootstrap, topic, counts)  create ``topic`` with as many partitions as
                                               ``counts`` names and write ``counts[p]`` records to p
    add_partition(bootstrap, topic)            give a running topic one more partition; returns its number
    write_to_partition(bootstrap, topic, p, n) write ``n`` records to partition ``p``
    rows_per_batch(query)                      the rows each batch of a query's run read, in order

``maxOffsetsPerTrigger`` is a target, not a hard cap. The source gives each partition a share
of the limit in proportion to what it has waiting, rounds the share down to a whole record, or
up to one record when the share is below one (so that a small partition is never starved),
and never goes past what the partition holds. Rounding down can leave a batch a few records
short of the limit; rounding up can take it a few over (Spark 4.2's
``KafkaMicroBatchStream.rateLimit``, read; lesson 02 runs it).
"""
from __future__ import annotations

import math
import time

from ...config import CourseError
from ...stack import kafka


def share_out(limit: int, waiting: dict[int, int]) -> dict[int, int]:
    """``{partition: records this batch takes}`` for ``maxOffsetsPerTrigger=limit``.

    Partitions with nothing waiting take nothing. When nothing waits at all, the batch is empty.
    """
    if limit < 1:
        raise ValueError(f"maxOffsetsPerTrigger must be a positive number of offsets, not {limit}")
    sizes = {p: n for p, n in waiting.items() if n > 0}
    total = sum(sizes.values())
    taken = {p: 0 for p in waiting}
    for partition, size in sizes.items():
        share = limit * (size / total)
        whole = math.ceil(share) if share < 1 else math.floor(share)
        taken[partition] = min(size, whole)
    return taken


def _write(bootstrap: str, topic: str, partition: int, n: int, first: int = 0) -> None:
    from kafka import KafkaProducer

    producer = kafka.client(KafkaProducer, bootstrap, acks="all", linger_ms=20)
    try:
        for i in range(first, first + n):
            producer.send(topic, key=f"{partition}-{i}".encode(), value=f"record {i} of partition {partition}".encode(),
                          partition=partition)
        producer.flush()
    finally:
        producer.close()


def fill_partitions(bootstrap: str, topic: str, counts: dict[int, int]) -> dict[int, int]:
    """Create ``topic`` with partitions 0..max(counts) and write ``counts[p]`` records to each. Returns its end offsets."""
    kafka.ensure_topic(bootstrap, topic, partitions=max(counts) + 1)
    for partition, n in sorted(counts.items()):
        _write(bootstrap, topic, partition, n)
    return kafka.end_offsets(bootstrap, topic)


def add_partition(bootstrap: str, topic: str, timeout_s: float = 30) -> int:
    """Raise ``topic``'s partition count by one. Returns the new partition's number."""
    from kafka.admin import NewPartitions

    count = len(kafka.end_offsets(bootstrap, topic))
    kafka.admin_call(bootstrap, lambda client: client.create_partitions({topic: NewPartitions(total_count=count + 1)}))
    deadline = time.monotonic() + timeout_s
    while len(kafka.end_offsets(bootstrap, topic)) <= count:      # until a client's metadata shows it
        if time.monotonic() > deadline:
            raise CourseError(f"{topic} still has {count} partitions {timeout_s:.0f} s after adding one.")
        time.sleep(0.2)
    return count


def write_to_partition(bootstrap: str, topic: str, partition: int, n: int) -> None:
    """Write ``n`` records to one partition of ``topic``."""
    _write(bootstrap, topic, partition, n)


def rows_per_batch(query) -> list[int]:
    """The rows each batch of ``query``'s run read (its progress reports, oldest first), batches with rows only."""
    return [int(p["numInputRows"]) for p in query.recentProgress if int(p["numInputRows"]) > 0]

