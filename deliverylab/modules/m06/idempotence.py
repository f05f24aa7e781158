"""Spark's Kafka sink and producer idempotence: which producer it builds, and what it does not de-duplicate.

Spark's Kafka sink passes every ``kafka.*`` option to a Java ``KafkaProducer`` and sets only the
key and value serializers itself (KafkaSourceProvider.kafkaParamsForProducer). The producer's
other settings are the Kafka client's defaults: with kafka-clients 3.9, the client Spark 4.2's
connector brings, ``enable.idempotence=true`` and ``acks=all``. That client switches
idempotence off when ``acks`` is not ``all`` or ``retries`` is 0 and ``enable.idempotence`` was
left at its default, with an INFO line in the executor's log (a WARN line for more than 5
requests in flight); when ``enable.idempotence=true`` was set explicitly, the same settings are
a ``ConfigException`` (ProducerConfig.postProcessAndValidateIdempotenceConfigs).

Each executor keeps one cached producer per set of producer settings and lends it to every
task that writes with those settings (InternalKafkaProducerPool.acquire). Two writes of the
same rows therefore go through one producer, with one producer id, and still land twice:
idempotence de-duplicates the producer's own retries of a batch it already sent, never a new
``send()``.

    >>> print(m06.idempotence.spark_sink(spark, lesson, "acks-1", {"kafka.acks": "1"}).line())
    >>> print(m06.idempotence.written_twice(spark, lesson).summary())

Each check writes to a topic of its own, one partition, from a one-partition DataFrame (one task).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...config import CourseError
from ...stack.kafka import producer_ids

#: The class name of a Kafka exception in the text of the error Spark raises for a failed write.
_KAFKA_ERROR = re.compile(r"org\.apache\.kafka\.[\w.]*?\.(\w+(?:Exception|Error))\b")


@dataclass(frozen=True)
class SinkCheck:
    """One write through Spark's Kafka sink: the Kafka error it failed with, if any, and its topic's producer ids."""
    label: str
    error: str | None          # e.g. "ConfigException"; None when the write succeeded
    producer_ids: int = 0      # idempotent producers the broker holds for the check's topic

    @property
    def idempotent(self) -> bool:
        return self.error is None and self.producer_ids > 0

    def line(self) -> str:
        if self.error is not None:
            return f"{self.label:<46} the write fails: {self.error}"
        return f"{self.label:<46} idempotent: {'yes' if self.idempotent else 'no'} | the write succeeds"


@dataclass(frozen=True)
class WrittenTwice:
    """The same rows written twice through Spark's Kafka sink, in one Spark application."""
    orders: int
    copies: dict[str, int]     # order id -> records in the topic
    producer_ids: int

    def summary(self) -> str:
        counts = sorted(set(self.copies.values()))
        each = str(counts[0]) if len(counts) == 1 else "/".join(map(str, counts))
        return (f"orders written, twice: {self.orders}\n"
                f"copies of each order in the topic: {each}\n"
                f"idempotent producers the broker holds for the topic: {self.producer_ids}")


def options_label(options: dict) -> str:
    """``{"kafka.acks": "1"}`` -> ``kafka.acks=1``; no options -> ``no producer options``."""
    if not isinstance(options, dict):
        raise CourseError(f"options are Spark writer options as a dict, e.g. {{'kafka.acks': '1'}}; got {options!r}.")
    return ", ".join(f"{key}={value}" for key, value in options.items()) or "no producer options"


def kafka_error(text: str) -> str | None:
    """The first Kafka exception class named in ``text`` (an error's message and Java stack trace), or None."""
    found = _KAFKA_ERROR.search(text or "")
    return found.group(1) if found else None


def _fresh_topic(lesson, name: str) -> str:
    from ...stack import kafka

    topic = lesson.topic(f"sink-idempotence-{name}")
    kafka.delete_topics(lesson.bootstrap, [topic])
    kafka.ensure_topic(lesson.bootstrap, topic, partitions=1)
    return topic


def _write(spark, lesson, topic: str, orders: list[dict], options: dict) -> None:
    from ...orders import encode
    from ...stack import kafka

    rows = [(order["order_id"], encode(order).decode()) for order in orders]
    (spark.createDataFrame(rows, "key string, value string").coalesce(1)
     .write.format("kafka")
     .option("kafka.bootstrap.servers", lesson.bootstrap)
     .options(**kafka.spark_security(lesson.bootstrap))  # a class broker's login ({} on your own broker)
     .option("topic", topic)
     .options(**options)
     .save())


def spark_sink(spark, lesson, name: str, options: dict) -> SinkCheck:
    """Write one order through Spark's Kafka sink with ``options``; did an idempotent producer write it?"""
    from ...orders import generate_orders

    text = options_label(options)
    topic = _fresh_topic(lesson, name)
    try:
        _write(spark, lesson, topic, generate_orders(1, seed=13), options)
    except Exception as error:  # noqa: BLE001 - the Kafka error inside Spark's is the point
        found = kafka_error(str(error))
        if found is None:
            raise
        return SinkCheck(text, found)
    return SinkCheck(text, None, len(producer_ids(lesson.bootstrap, topic)))


def written_twice(spark, lesson, n: int = 5) -> WrittenTwice:
    """Write the same ``n`` orders twice through Spark's Kafka sink, with the same (default) producer settings."""
    from ... import ledger
    from ...orders import generate_orders

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CourseError(f"n is a number of orders, a whole number of 1 or more, not {n!r}.")
    topic = _fresh_topic(lesson, "twice")
    orders = generate_orders(n, seed=17)
    for _ in range(2):
        _write(spark, lesson, topic, orders, {})
    found = ledger.reconcile(orders, ledger.read_kafka_topic(lesson.bootstrap, topic))
    return WrittenTwice(n, {order["order_id"]: found.copies[order["order_id"]] for order in orders},
                        len(producer_ids(lesson.bootstrap, topic)))
