"""Kafka clients for the course's own bookkeeping: topics, offsets, groups, offset ranges.

Every admin client and every helper consumer of the package is built here, with the same
settings: no group unless one is asked for, no auto-commit, no topic auto-creation. (The
consumers and producers that lessons study are written out in the lessons' own code.)
"""
from __future__ import annotations

import contextlib
import time
from typing import Iterator

from ..config import CourseError

CLIENT_ID = "deliverylab"


@contextlib.contextmanager
def admin(bootstrap: str, timeout_s: float | None = None) -> Iterator:
    """A KafkaAdminClient, closed afterwards. Raises kafka's errors when the broker does not answer."""
    from kafka import KafkaAdminClient

    extra = {"request_timeout_ms": int(timeout_s * 1000)} if timeout_s else {}
    client = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=f"{CLIENT_ID}-admin", **extra)
    try:
        yield client
    finally:
        client.close()


@contextlib.contextmanager
def consumer(bootstrap: str, **settings) -> Iterator:
    """A KafkaConsumer with no group, no auto-commit and no topic auto-creation, closed afterwards."""
    from kafka import KafkaConsumer

    options = dict(group_id=None, client_id=f"{CLIENT_ID}-reader", enable_auto_commit=False,
                   allow_auto_create_topics=False, auto_offset_reset="earliest")
    options.update(settings)
    client = KafkaConsumer(bootstrap_servers=bootstrap, **options)
    try:
        yield client
    finally:
        client.close(autocommit=False)


def listening(bootstrap: str, timeout_s: float = 1.0) -> bool:
    """Does anything accept a TCP connection at one of the ``host:port`` addresses? (A quick first probe:
    kafka-python's clients take up to 30 s to give up on an address where nothing listens.)"""
    import socket

    for address in bootstrap.split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_s):
                return True
        except (OSError, ValueError):
            continue
    return False


def topics(bootstrap: str, prefix: str = "", timeout_s: float = 3.0) -> list[str] | None:
    """Topic names starting with ``prefix``, sorted; None when no broker answers at ``bootstrap``."""
    from kafka.errors import KafkaConfigurationError, KafkaError

    if not listening(bootstrap, min(timeout_s, 1.0)):
        return None
    try:
        with admin(bootstrap, timeout_s) as client:
            return sorted(t for t in client.list_topics() if t.startswith(prefix))
    except KafkaConfigurationError:
        raise
    except (KafkaError, OSError, ValueError):
        return None


def answers(bootstrap: str, timeout_s: float = 3.0) -> bool:
    """True when a broker answers a metadata request at ``bootstrap`` (the readiness probe)."""
    return topics(bootstrap, timeout_s=timeout_s) is not None


def admin_call(bootstrap: str, call, within_s: float = 30):
    """``call(client)`` on a fresh admin client, tried again for up to ``within_s`` while the node the client
    picked does not answer. kafka-python's admin client gives up on the first node that refuses, even when
    others would answer: on the three-broker cluster, a broker that was just killed stays in the cluster's
    metadata until the controller fences it (several seconds). A broker that is not there at all still fails
    at once (NoBrokersAvailable)."""
    from kafka.errors import KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError

    deadline = time.monotonic() + within_s
    while True:
        try:
            with admin(bootstrap) as client:
                return call(client)
        except (KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def ensure_topic(bootstrap: str, topic: str, partitions: int = 2, replication: int = -1,
                 config: dict[str, str] | None = None) -> bool:
    """Create ``topic`` if it does not exist (the course's broker does not auto-create topics).

    ``replication=-1`` takes the broker's ``default.replication.factor``: one copy on the
    course's single broker, three on the three-broker cluster (stack/brokers.py).

    Returns True if it was created now.
    """
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    def create(client) -> bool:
        if topic in client.list_topics():
            return False
        try:
            client.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=replication,
                                           topic_configs=config or {})])
        except TopicAlreadyExistsError:
            return False
        return True

    return admin_call(bootstrap, create)


def delete_topics(bootstrap: str, names: list[str], wait_s: float = 30) -> None:
    """Delete topics and wait (up to ``wait_s``) until the names are free again (deletion is asynchronous)."""
    if not names:
        return
    from kafka.errors import UnknownTopicOrPartitionError

    with admin(bootstrap) as client:
        try:
            client.delete_topics(names, timeout_ms=30000)
        except UnknownTopicOrPartitionError:
            pass
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        left = set(names) & set(topics(bootstrap) or [])
        if not left:
            return
        time.sleep(0.2)


def set_topic_config(bootstrap: str, topic: str, config: dict[str, str]) -> None:
    """Change settings of an existing topic (for example ``retention.ms``)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    with admin(bootstrap) as client:
        client.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=config)])


def _partitions(client, topic: str) -> list:
    from kafka import TopicPartition

    return [TopicPartition(topic, p) for p in sorted(client.partitions_for_topic(topic) or ())]


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """``{partition: offset of the next record}`` of ``topic`` now ({} if it does not exist)."""
    with consumer(bootstrap) as client:
        tps = _partitions(client, topic)
        return {tp.partition: off for tp, off in client.end_offsets(tps).items()} if tps else {}


def producer_ids(bootstrap: str, topic: str) -> set[int]:
    """Ids of the idempotent (or transactional) producers the broker holds for ``topic``'s partitions."""
    from kafka import TopicPartition

    partitions = [TopicPartition(topic, p) for p in sorted(end_offsets(bootstrap, topic))]
    if not partitions:
        raise CourseError(f"topic {topic!r} does not exist on {bootstrap}.")
    with admin(bootstrap) as client:
        states = client.describe_producers(partitions)
    return {p.producer_id for state in states.values() for p in state.active_producers}


def beginning_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """``{partition: offset of the first record still kept}`` ({} if the topic does not exist)."""
    with consumer(bootstrap) as client:
        tps = _partitions(client, topic)
        return {tp.partition: off for tp, off in client.beginning_offsets(tps).items()} if tps else {}


def count_records(bootstrap: str, topic: str) -> int:
    """How many offsets the topic holds now (records, plus transaction markers if any)."""
    begin, end = beginning_offsets(bootstrap, topic), end_offsets(bootstrap, topic)
    return sum(end[p] - begin.get(p, 0) for p in end)


def read_range(bootstrap: str, topic: str, ranges: dict[int, tuple[int, int]], timeout_s: float = 30,
               isolation_level: str = "read_uncommitted") -> list:
    """The records of ``topic`` in ``{partition: (start, end)}`` (end exclusive), in partition and offset order."""
    from kafka import TopicPartition

    wanted = {TopicPartition(topic, p): r for p, r in ranges.items() if r[1] > r[0]}
    if not wanted:
        return []
    records: dict = {tp: [] for tp in wanted}
    with consumer(bootstrap, isolation_level=isolation_level) as client:
        client.assign(list(wanted))
        for tp, (start, _) in wanted.items():
            client.seek(tp, start)
        remaining = dict(wanted)
        deadline = time.monotonic() + timeout_s
        while remaining and time.monotonic() < deadline:
            for tp, batch in client.poll(timeout_ms=500).items():
                records[tp].extend(r for r in batch if r.offset < wanted[tp][1])
            for tp in list(remaining):
                if client.position(tp) >= wanted[tp][1]:
                    del remaining[tp]
    return [r for tp in sorted(records, key=lambda t: t.partition) for r in sorted(records[tp], key=lambda r: r.offset)]


def consumer_groups(bootstrap: str) -> list[str]:
    """Every consumer group the broker knows, sorted."""
    with admin(bootstrap) as client:
        return sorted(g["group_id"] if isinstance(g, dict) else g[0] for g in client.list_groups())


def group_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """``{partition: committed offset}`` of ``group`` on ``topic`` ({} if it committed none)."""
    with admin(bootstrap) as client:
        offsets = client.list_group_offsets({group: None}).get(group, {})
    return {tp.partition: meta.offset for tp, meta in sorted(offsets.items()) if tp.topic == topic}


def delete_group(bootstrap: str, group: str, static_member: str | None = None) -> None:
    """Forget a consumer group (and first its static member, which outlives a killed consumer)."""
    from kafka.admin import MemberToRemove

    if group not in consumer_groups(bootstrap):
        return
    with admin(bootstrap) as client:
        if static_member:
            try:
                client.remove_group_members(group, [MemberToRemove(group_instance_id=static_member)])
            except Exception:  # noqa: BLE001 - not a member (any more): nothing to remove
                pass
        client.delete_groups([group])
