"""Which transaction protocol this course's clients speak (lesson 06 section 3).

Kafka 4 brokers know two versions of the transaction protocol, and a cluster formatted by Kafka 4.3
with no feature flags finalizes the newest, ``transaction.version=2`` (KIP-890; ``TransactionVersion``
in kafka-server-common: ``LATEST_PRODUCTION = TV_2``). The broker picks the version per request, from
the request's own version (``TransactionVersion.transactionVersionForEndTxn``: EndTxn above v4 is
version 2), so old clients keep working. Under version 2 a producer gets a new epoch at every commit or
abort; under version 1 only ``init_transactions()`` (or recovery from some errors) changes it.

kafka-python 3.0.12 caps its transaction requests below the version-2 ones (``EndTxnRequest`` and
``AddPartitionsToTxnRequest`` at v3, ``ProduceRequest`` at v9; its ``transaction_manager.py`` says "v4
is KIP-890"), so it speaks version 1 on any broker. :func:`protocol` shows both facts: the feature
the broker finalized (an ApiVersions answer, which needs no login rights), and the epoch the broker
holds for one transactional producer after each of several commits (DescribeProducers).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TxProtocol:
    transaction_version: int | None   # finalized on the broker (None: not reported)
    commits: int
    producer_ids: int                 # distinct producer ids the broker held after the commits
    epochs: tuple[int, ...]           # the producer's epoch as the broker held it after each commit

    def lines(self) -> list[str]:
        return [f"transaction.version finalized on this broker: {self.transaction_version}",
                f"one kafka-python transactional producer, {self.commits} commits: producer ids {self.producer_ids}, "
                f"distinct epochs {len(set(self.epochs))}"]


def finalized_version(client, feature: str = "transaction.version") -> int | None:
    """The finalized (max) level of ``feature`` in a kafka-python ``describe_features()`` answer."""
    found = client.describe_features().get(feature, {}).get("finalized")
    return found[1] if found else None


def protocol(lesson, commits: int = 3) -> TxProtocol:
    """Ask the broker for its transaction version, then commit ``commits`` one-record transactions with
    one kafka-python producer and read the producer's epoch after each."""
    from kafka import KafkaProducer, TopicPartition

    from ...stack import kafka

    topic = lesson.topic("tx-epochs")
    kafka.delete_topics(lesson.bootstrap, [topic])
    kafka.ensure_topic(lesson.bootstrap, topic, partitions=1)
    with kafka.admin(lesson.bootstrap) as client:
        version = finalized_version(client)
    producer = kafka.client(KafkaProducer, lesson.bootstrap, transactional_id=f"{lesson.topic_prefix}epoch-writer")
    ids, epochs = set(), []
    try:
        producer.init_transactions()
        for n in range(commits):
            producer.begin_transaction()
            producer.send(topic, key=f"k-{n}".encode(), value=b"{}")
            producer.commit_transaction()
            with kafka.admin(lesson.bootstrap) as client:
                state = client.describe_producers([TopicPartition(topic, 0)])[TopicPartition(topic, 0)]
            ids |= {p.producer_id for p in state.active_producers}
            epochs += [p.producer_epoch for p in state.active_producers]
    finally:
        producer.close(timeout=5)
    return TxProtocol(version, commits, len(ids), tuple(epochs))
