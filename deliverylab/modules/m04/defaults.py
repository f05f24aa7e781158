"""Is a kafka-python producer idempotent? Its defaults, and the settings that switch idempotence off.

kafka-python 3.x, like Kafka's Java client from 3.2 on (and 3.0.1, 3.1.1), makes
``enable_idempotence=True`` and ``acks='all'`` the defaults. Idempotence needs ``acks='all'``,
``retries > 0`` and at most 5 requests in flight. When the application sets one of those to
something else and leaves ``enable_idempotence`` at its default, kafka-python 3.0.12 turns
idempotence off and only logs a warning (kafka/producer/kafka.py, ``KafkaProducer.__init__``);
when the application asked for ``enable_idempotence=True`` itself, the same settings raise
``KafkaConfigurationError``. (That warning can be missing: in 3.0.12 a producer's ``__del__``
replaces the producer module's logger with one that drops everything, for the rest of the process.)

:func:`check` builds a producer with the given settings, sends one order to a topic of its own,
and asks the broker whether an idempotent producer wrote it: an idempotent producer has a
producer id, which the broker keeps per partition (Kafka's DescribeProducers request) until that
producer has written nothing there for ``producer.id.expiration.ms`` (a day by default, Kafka 4.3's
``ProducerStateManager``); a plain producer writes with no producer id, so the broker keeps nothing.

    >>> print(m04.defaults.check(lesson, "acks-1", dict(acks=1)).line())
    acks=1 ... idempotent: no | error: none
"""
from __future__ import annotations

from dataclasses import dataclass

from ...config import CourseError
from ...stack.kafka import producer_ids


@dataclass(frozen=True)
class IdempotenceCheck:
    """What one producer configuration did: the error it raised, if any, and the producer ids the broker holds."""
    label: str
    error: str | None          # the exception's class name, None when the producer was built and sent
    producer_ids: int = 0      # idempotent producers the broker holds for the check's topic

    @property
    def idempotent(self) -> bool:
        return self.error is None and self.producer_ids > 0

    def line(self) -> str:
        if self.error is not None:
            return f"{self.label:<34} no producer: {self.error}"
        return f"{self.label:<34} idempotent: {'yes' if self.idempotent else 'no'} | error: none"


def label(settings: dict) -> str:
    """``dict(acks=1)`` -> ``acks=1``; no settings -> ``defaults``."""
    if not isinstance(settings, dict):
        raise CourseError(f"settings are KafkaProducer options as a dict, e.g. dict(acks=1); got {settings!r}.")
    return ", ".join(f"{key}={value!r}" if isinstance(value, str) else f"{key}={value}"
                     for key, value in settings.items()) or "defaults"


def check(lesson, name: str, settings: dict) -> IdempotenceCheck:
    """Build a kafka-python producer with ``settings``, send one order, and ask the broker for its producer id."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    from ...orders import encode, generate_orders
    from ...stack import kafka

    text = label(settings)
    topic = lesson.topic(f"idempotence-{name}")
    kafka.delete_topics(lesson.bootstrap, [topic])
    kafka.ensure_topic(lesson.bootstrap, topic, partitions=1)
    try:
        producer = kafka.client(KafkaProducer, lesson.bootstrap, **settings)
    except KafkaError as error:
        return IdempotenceCheck(text, type(error).__name__)
    try:
        order = generate_orders(1, seed=11)[0]
        producer.send(topic, key=order["order_id"].encode(), value=encode(order)).get(timeout=30)
    finally:
        producer.close(timeout=2)
    return IdempotenceCheck(text, None, len(producer_ids(lesson.bootstrap, topic)))
