"""Where a query's progress is: Kafka consumer groups (a plain consumer's) against the checkpoint (Spark's).

    groups_reading(bootstrap, topic)      every consumer group holding committed offsets on ``topic``
    spark_named_groups(bootstrap)         groups named with Spark's default prefix, spark-kafka-source
    read_and_commit(bootstrap, topic, g)  a plain consumer in group ``g`` reads the topic and commits
    group_lag(bootstrap, topic)           what a consumer-group lag tool reports: {group: records behind}
    checkpoint_lag(ckpt, topic, bootstrap) records behind, measured from the query's checkpoint

A lag tool (``kafka-consumer-groups --describe``, a monitoring dashboard) computes, per group,
the topic's end offsets minus the group's committed offsets. That only works for consumers
that commit: Spark's Kafka source never does, so for a Spark query the same subtraction must
use the end of its last committed batch, which only its checkpoint knows.
"""
from __future__ import annotations

import time

from ... import checkpoint
from ...stack import kafka

#: The prefix Spark gives the group ids it generates for its Kafka source (option groupIdPrefix).
SPARK_GROUP_PREFIX = "spark-kafka-source"


def groups_reading(bootstrap: str, topic: str) -> dict[str, dict[int, int]]:
    """``{group: {partition: committed offset}}`` for every group with offsets committed on ``topic``."""
    found = {}
    for group in kafka.consumer_groups(bootstrap):
        offsets = kafka.group_offsets(bootstrap, group, topic)
        if offsets:
            found[group] = offsets
    return found


def spark_named_groups(bootstrap: str) -> list[str]:
    """Groups whose id starts with Spark's default prefix (none, if Spark never registered one)."""
    return [g for g in kafka.consumer_groups(bootstrap) if g.startswith(SPARK_GROUP_PREFIX)]


def read_and_commit(bootstrap: str, topic: str, group: str, timeout_s: float = 30) -> dict[int, int]:
    """A plain kafka-python consumer in ``group``: read ``topic`` to its current end, commit, close.

    Returns the committed offsets (the next offset to read, per partition), as the broker now holds them.
    """
    from kafka import TopicPartition

    target = kafka.end_offsets(bootstrap, topic)
    with kafka.consumer(bootstrap, group_id=group) as client:
        parts = [TopicPartition(topic, p) for p in sorted(target)]
        client.assign(parts)
        client.seek_to_beginning(*parts)
        deadline = time.monotonic() + timeout_s
        while any(client.position(tp) < target[tp.partition] for tp in parts) and time.monotonic() < deadline:
            client.poll(timeout_ms=200)
        client.commit()  # commits each partition's position: the next offset to read
    return kafka.group_offsets(bootstrap, group, topic)


def lag(end: dict[int, int], done: dict[int, int]) -> dict[int, int]:
    """Records behind per partition: ``end - done`` (a partition with nothing done counts from 0)."""
    return {p: max(0, off - done.get(p, 0)) for p, off in sorted(end.items())}


def group_lag(bootstrap: str, topic: str) -> dict[str, int]:
    """``{group: records behind}`` for every group with offsets on ``topic``: a lag tool's view."""
    end = kafka.end_offsets(bootstrap, topic)
    return {group: sum(lag(end, done).values()) for group, done in groups_reading(bootstrap, topic).items()}


def checkpoint_lag(ckpt: str, topic: str, bootstrap: str) -> int:
    """Records of ``topic`` beyond the end of the query's last committed batch (its checkpoint's view)."""
    return sum(lag(kafka.end_offsets(bootstrap, topic), checkpoint.done_offsets(ckpt, topic)).values())
