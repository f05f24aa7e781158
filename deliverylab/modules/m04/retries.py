"""Duplicates that enter at the source: a producer retry after a lost reply, and copies sent on purpose.

A real retry: orders go to the pipeline's topic through the flaky-network proxy
(stack/flaky.py). For the chosen orders the proxy lets the produce request reach the
broker, which writes it, and then drops the reply. The producer (idempotence off, so
the broker cannot recognise the second attempt) times out and sends the same record
again: one order, two offsets.

    sent = produce_with_retries(pipe, 300, lose_every=50)   # orders 25, 75, ... written twice
    sent.retried                                             # ['o-000025', 'o-000075', ...]

Copies with chosen event times (the watermark pitfall) are written with a plain producer
by :func:`send_copies`. Neither function adds a second entry to ``pipe.produced``: that
list stays the truth, one entry per order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...config import CourseError

#: Producer settings of the retry: the broker cannot tell a retried record from a new one
#: unless enable_idempotence is True.
RETRYING_PRODUCER = dict(acks="all", retries=5, max_in_flight_requests_per_connection=1, request_timeout_ms=5000)


@dataclass
class RetryReport:
    """What :func:`produce_with_retries` sent: the orders, which of them lost their reply, what the proxy saw."""
    orders: list[dict]
    retried: list[str] = field(default_factory=list)
    lost_replies: int = 0
    produce_requests: int = 0
    idempotent: bool = False

    def line(self) -> str:
        mode = "an idempotent producer" if self.idempotent else "a producer without idempotence"
        return (f"{_plural(len(self.orders), 'order')} sent by {mode}; {_plural(self.lost_replies, 'reply', 'replies')}"
                f" lost, so {_plural(len(self.retried), 'order')} sent a second time")


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def lost_reply_positions(n: int, lose_every: int | None) -> list[int]:
    """Which of ``n`` sends lose their reply: the middle of every block of ``lose_every`` (none if None)."""
    if lose_every is None:
        return []
    if isinstance(lose_every, bool) or not isinstance(lose_every, int) or lose_every < 2:
        raise CourseError(f"lose_every must be a whole number of 2 or more (or None), not {lose_every!r}.")
    return list(range(lose_every // 2, n, lose_every))


def send_through_flaky_network(topic: str, orders: list[dict], lose_at: list[int], idempotent: bool = False) -> RetryReport:
    """Send ``orders`` one at a time through the proxy, losing the reply to the sends at ``lose_at``."""
    from kafka import KafkaProducer

    from ...orders import encode
    from ...stack import flaky, kafka

    report = RetryReport(orders=list(orders), idempotent=idempotent)
    lose = set(lose_at)
    with flaky.FlakyNetwork() as net:
        producer = kafka.client(KafkaProducer, net.bootstrap, enable_idempotence=idempotent, **RETRYING_PRODUCER)
        try:
            for i, order in enumerate(orders):
                if i in lose:
                    net.lose_produce_replies(1)
                    report.retried.append(order["order_id"])
                producer.send(topic, key=order["order_id"].encode(), value=encode(order)).get(timeout=30)
        finally:
            producer.close()
        report.lost_replies, report.produce_requests = net.lost_replies, net.produce_requests
    return report


def produce_with_retries(pipe, n: int, lose_every: int | None = 50, idempotent: bool = False) -> RetryReport:
    """Send the pipeline's next ``n`` seeded orders through the flaky network, losing every ``lose_every``-th reply.

    The orders join ``pipe.produced`` once each (the truth the ledger reconciles against);
    a retried one sits at two offsets of the topic.
    """
    from ...orders import generate_orders
    from ...stack import kafka

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CourseError(f"n is the number of orders to send, a whole number of 1 or more, not {n!r}.")
    orders = generate_orders(n, seed=pipe.seed, start=len(pipe.produced))
    kafka.ensure_topic(pipe.lesson.bootstrap, pipe.topic)
    report = send_through_flaky_network(pipe.topic, orders, lost_reply_positions(n, lose_every), idempotent)
    pipe.produced.extend(orders)
    return report


def copy_of(order: dict, event_time: str | None = None) -> dict:
    """A copy of ``order``; with ``event_time``, re-stamped (as a client that rebuilds the event on retry does)."""
    copy = dict(order)
    if event_time is not None:
        copy["event_time"] = event_time
    return copy


def send_copies(pipe, copies: list[dict]) -> list[dict]:
    """Write ``copies`` of orders the pipeline has already produced to its topic, as they are.

    They are not added to ``pipe.produced``: a copy is not a new order.
    """
    from ...orders import produce

    known = {o["order_id"] for o in pipe.produced}
    strangers = sorted({c["order_id"] for c in copies} - known)
    if strangers:
        raise CourseError(f"send_copies sends copies of orders already produced; these ids are new: {strangers[:5]}. "
                          "Send new orders with pipe.send(...) instead.")
    produce(pipe.lesson.bootstrap, pipe.topic, copies, progress=False)
    return copies


def records_after_lost_reply(lesson, idempotent: bool, topic: str | None = None) -> int:
    """Send one order through the flaky network with its reply lost; how many records does the topic get?"""
    from ...ledger import read_kafka_topic
    from ...orders import generate_orders
    from ...stack import kafka

    topic = lesson.topic(topic or f"lost-reply-{'idempotent' if idempotent else 'plain'}")
    kafka.delete_topics(lesson.bootstrap, [topic])
    kafka.ensure_topic(lesson.bootstrap, topic)
    order = generate_orders(1, seed=5)[0]
    send_through_flaky_network(topic, [order], [0], idempotent=idempotent)
    return sum(1 for order_id, _ in read_kafka_topic(lesson.bootstrap, topic) if order_id == order["order_id"])
