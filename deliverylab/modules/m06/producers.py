"""Module 06's producer experiments: a produce reply lost on a real (flaky) network.

    >>> result = m06.send_with_lost_reply(lesson, "idempotent", dict(enable_idempotence=True, acks="all"))
    >>> print(result.line())

Two orders go to a topic of their own through the flaky-network proxy (stack/flaky.py).
The first one connects the producer. The reply to the second one is lost: the broker has
written it, but the producer never hears so. What happens next is up to the producer's
settings, and, when the producer gives up, up to the application (``resend_if_failed``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...config import CourseError
from ...orders import encode, generate_orders
from ...stack import flaky, kafka

#: Longest wait for one send; a producer that retries gets through well within it.
SEND_TIMEOUT_S = 30


@dataclass
class LostReply:
    """What one lost-reply experiment did, and the ledger of its topic."""

    name: str
    outcome: str          # what the application heard: "acknowledged" or "failed: <error>"
    resent: bool          # did the application send the order again with a new producer?
    lost_replies: int     # replies the proxy dropped (1)
    order_id: str         # the order whose reply was lost
    ledger: object = field(repr=False)

    @property
    def copies(self) -> int:
        """Copies of the order whose reply was lost, in the topic."""
        return self.ledger.copies[self.order_id]

    def line(self) -> str:
        resent = ", re-sent by a new producer" if self.resent else ""
        return f"{self.name:<18} send {self.outcome}{resent} | {self.ledger.verdict_line()}"

    def __str__(self) -> str:
        return self.line()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.line())


def send_with_lost_reply(lesson, name: str, settings: dict, resend_if_failed: bool = False) -> LostReply:
    """Send two orders through the flaky proxy, losing the broker's reply to the second one.

    ``settings`` are KafkaProducer keyword arguments. With ``resend_if_failed``, an
    application whose send failed does what applications do: it sends the order again,
    here with a brand-new producer (as a restarted process would).
    """
    from kafka import KafkaProducer

    from ... import ledger

    if not isinstance(settings, dict):
        raise CourseError(f"settings are KafkaProducer options as a dict, e.g. dict(acks='all'); got {settings!r}.")
    topic = lesson.topic(f"lost-reply-{name}")
    kafka.delete_topics(lesson.bootstrap, [topic])
    kafka.ensure_topic(lesson.bootstrap, topic, partitions=1)
    first, second = generate_orders(2)
    with flaky.FlakyNetwork() as net:
        producer = kafka.client(KafkaProducer, net.bootstrap, **settings)
        try:
            producer.send(topic, key=first["order_id"].encode(), value=encode(first)).get(SEND_TIMEOUT_S)
            net.lose_produce_replies(1)
            try:
                producer.send(topic, key=second["order_id"].encode(), value=encode(second)).get(SEND_TIMEOUT_S)
                outcome = "acknowledged"
            except Exception as error:  # noqa: BLE001 - what the application is told is the point
                outcome = f"failed: {type(error).__name__}"
        finally:
            producer.close(timeout=2)
        lost = net.lost_replies
    resent = resend_if_failed and outcome != "acknowledged"
    if resent:
        again = kafka.client(KafkaProducer, lesson.bootstrap, **settings)
        try:
            again.send(topic, key=second["order_id"].encode(), value=encode(second)).get(SEND_TIMEOUT_S)
        finally:
            again.close(timeout=2)
    rows = ledger.read_kafka_topic(lesson.bootstrap, topic)
    return LostReply(name, outcome, resent, lost, second["order_id"], ledger.reconcile([first, second], rows, label=name))
