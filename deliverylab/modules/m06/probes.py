"""Lab 06's hidden topics: what the reader checks read besides the topics the learner watched.

Two kinds, each planned from a ``random.Random`` (the exercise's seed) and then written to a topic of
the lesson, so a run is the same for one seed:

* :func:`plan_aborts`: a topic written by one transactional producer, holding both hazards a reader of
  transactions meets, whatever the seed: an aborted transaction that nobody sent again (dropping
  repeated ids does not remove it: it has no second copy) and an aborted transaction whose orders a
  later transaction committed (so the uncommitted view holds repeats, as after a relay's restart);
  the first transaction is sometimes an aborted one, the topic has one to three partitions, and it
  holds more committed records than one ``poll()`` of a Kafka consumer returns (500), so a reader
  that happened to get everything in one poll on a small topic does not here.
* :func:`plan_replays`: a topic as Spark's Kafka sink leaves it after crashes it did not see: batches
  written once, one batch written again whole, part of another written again (a crash in the middle
  of a write), a few orders three times; never every order twice, never as many orders as the run shown.

``TopicTruth`` is what a check compares a reader with: the orders committed (each once) and every
record written (aborted ones and repeats included).
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from ...orders import encode, generate_orders

#: A Kafka consumer's max_poll_records by default: one poll() never returns more.
ONE_POLL = 500


@dataclass
class TopicTruth:
    """A topic and what is in it: ``committed`` (each committed order once, as (order_id, amount)) and
    ``sent`` (every record written, aborted transactions and repeats included)."""

    topic: str
    committed: list = field(repr=False)
    sent: list = field(repr=False)
    label: str = ""

    @property
    def aborted_only(self) -> set:
        """Ids written only inside aborted transactions: a reader of committed data must never show them."""
        committed = {order_id for order_id, _ in self.committed}
        return {order_id for order_id, _ in self.sent if order_id not in committed}

    @property
    def repeated(self) -> int:
        """Ids written more than once (an aborted attempt sent again, a replayed batch)."""
        return sum(1 for n in Counter(order_id for order_id, _ in self.sent).values() if n > 1)


@dataclass
class AbortPlan:
    """Transactions in the order they are written: ``(orders, commit?)``; and the topic's partitions."""

    partitions: int
    transactions: list = field(repr=False)

    def truth(self, topic: str) -> TopicTruth:
        sent = [_pair(o) for orders, _ in self.transactions for o in orders]
        committed = [_pair(o) for orders, commit in self.transactions if commit for o in orders]
        return TopicTruth(topic, committed, sent, label="a topic with aborted transactions")


def _pair(order: dict) -> tuple:
    return order["order_id"], order["amount"]


def _sizes(rng: random.Random, total: int, parts: int, smallest: int = 5) -> list[int]:
    """``parts`` sizes of at least ``smallest`` that add up to ``total``."""
    spare = total - smallest * parts
    cuts = sorted(rng.randint(0, spare) for _ in range(parts - 1))
    return [smallest + b - a for a, b in zip([0, *cuts], [*cuts, spare])]


def _orders(rng: random.Random, n: int) -> list[dict]:
    """``n`` orders numbered from a range of the seed's own (never the ids of the runs shown)."""
    return generate_orders(n, seed=rng.randint(1, 10**6), start=rng.randrange(200_000, 900_000, 1000))


def plan_aborts(rng: random.Random) -> AbortPlan:
    """Committed transactions (more than one poll's worth of orders in all), one aborted transaction never
    sent again and one aborted transaction sent again later, committed; see the module's docstring."""
    committed_n = rng.randint(ONE_POLL + 20, ONE_POLL + 140)
    lost_n = rng.randint(8, 40)
    orders = _orders(rng, committed_n + lost_n)
    committed, never_again = orders[:committed_n], orders[committed_n:]
    chunks, start = [], 0
    for size in _sizes(rng, committed_n, rng.randint(3, 6)):
        chunks.append(committed[start:start + size])
        start += size
    transactions = [(chunk, True) for chunk in chunks]
    # an aborted attempt of one committed chunk (or of part of it), written before the commit that repeats it
    again = rng.randrange(len(chunks))
    attempt = chunks[again][: rng.randint(max(1, len(chunks[again]) // 2), len(chunks[again]))]
    transactions.insert(again, (attempt, False))
    # the aborted transaction nobody sends again: first in the topic, or anywhere after it
    transactions.insert(0 if rng.random() < 0.4 else rng.randint(1, len(transactions)), (never_again, False))
    return AbortPlan(partitions=rng.randint(1, 3), transactions=transactions)


@dataclass
class ReplayPlan:
    """Records in the order a Kafka sink wrote them (repeats included), the orders, and the partitions."""

    partitions: int
    orders: list = field(repr=False)
    records: list = field(repr=False)

    def truth(self, topic: str) -> TopicTruth:
        return TopicTruth(topic, [_pair(o) for o in self.orders], [_pair(o) for o in self.records],
                          label="a topic a Kafka sink left after other crashes")


def plan_replays(rng: random.Random, shown_orders: int = 200) -> ReplayPlan:
    """Batches of orders, one written again whole, part of another written again, a few orders three times."""
    n = rng.randint(120, 280)
    while n == shown_orders:
        n = rng.randint(120, 280)
    orders = _orders(rng, n)
    batches, start = [], 0
    for size in _sizes(rng, n, rng.randint(3, 5), smallest=10):
        batches.append(orders[start:start + size])
        start += size
    whole, part = rng.sample(range(len(batches)), 2)
    records = []
    for i, batch in enumerate(batches):
        if i == part:   # a crash in the middle of the write: part of the batch, then all of it again
            records += batch[: rng.randint(2, len(batch) - 1)]
        records += batch
        if i == whole:  # a crash after the sink's write, before the commit: the whole batch again
            records += batch
    records += rng.sample(batches[whole], 3)  # a few of them a third time (a second replay)
    if len(records) // 2 == n:  # half the records is never the right number of orders
        records.append(batches[whole][0])
    return ReplayPlan(partitions=rng.randint(1, 3), orders=orders, records=records)


# --------------------------------------------------------------------------- writing them (a broker)

_written: dict[str, TopicTruth] = {}


def topic_with_aborts(lesson, rng: random.Random) -> TopicTruth:
    """The hidden topic of :func:`plan_aborts`, written once per kernel (a fresh topic the first time)."""
    name = lesson.topic(f"hidden-aborts-{rng.randrange(10**6):06d}")
    if name not in _written:
        plan = plan_aborts(rng)
        _write_transactions(lesson, name, plan)
        _written[name] = plan.truth(name)
    return _written[name]


def topic_with_replays(lesson, rng: random.Random) -> TopicTruth:
    """The hidden topic of :func:`plan_replays`, written once per kernel (a fresh topic the first time)."""
    name = lesson.topic(f"hidden-replays-{rng.randrange(10**6):06d}")
    if name not in _written:
        plan = plan_replays(rng)
        _fresh(lesson, name, plan.partitions)
        from kafka import KafkaProducer

        from ...stack import kafka

        producer = kafka.client(KafkaProducer, lesson.bootstrap, acks="all", linger_ms=20)
        try:
            for order in plan.records:
                producer.send(name, key=order["order_id"].encode(), value=encode(order))
            producer.flush()
        finally:
            producer.close()
        _written[name] = plan.truth(name)
    return _written[name]


def _fresh(lesson, name: str, partitions: int) -> None:
    from ...stack import kafka

    kafka.delete_topics(lesson.bootstrap, [name])  # the same seed in a new kernel: start again, not append
    kafka.ensure_topic(lesson.bootstrap, name, partitions=partitions)


def _write_transactions(lesson, name: str, plan: AbortPlan) -> None:
    from kafka import KafkaProducer

    from ...stack import kafka

    _fresh(lesson, name, plan.partitions)
    producer = kafka.client(KafkaProducer, lesson.bootstrap, transactional_id=f"{lesson.topic_prefix}hidden-writer")
    try:
        producer.init_transactions()
        for orders, commit in plan.transactions:
            producer.begin_transaction()
            for order in orders:
                producer.send(name, key=order["order_id"].encode(), value=encode(order))
            producer.flush()  # every record of the transaction in the topic, aborted ones too
            producer.commit_transaction() if commit else producer.abort_transaction()
    finally:
        producer.close()
