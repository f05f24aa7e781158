"""Lab 06 on real transactional topics and a really killed relay (make test-labs): views and readers that skip
aborted records pass; a default kept, views swapped, a relay killed after its commit, readers that drop
repeats instead of aborted records, Spark options without their kafka. prefix and dedups on the wrong key FAIL."""
from __future__ import annotations

import pytest

from deliverylab import ledger
from deliverylab.checks import FAIL, PASS, Checks
from deliverylab.modules.m06 import lab
from deliverylab.orders import generate_orders

pytestmark = [pytest.mark.stack, pytest.mark.labs]

ORDERS = generate_orders(60)


def pairs(orders):
    return [(o["order_id"], o["amount"]) for o in orders]


def statuses(checks: Checks) -> dict[str, str]:
    return {r.description: r.status for r in checks.results}


def fresh() -> Checks:
    return Checks("06-kafka-end-to-end-lab", record=False)


# --------------------------------------------------------------------------- exercises 3 and 4 on real Spark


def transactional_topic_of(name: str, chunks) -> tuple[str, str]:
    """A lesson topic written by one transactional producer: ``chunks`` of (orders, commit?) in order."""
    from kafka import KafkaProducer

    import deliverylab
    from deliverylab.orders import encode
    from deliverylab.stack import kafka

    lesson = deliverylab.setup(f"test-lab06-{name}", quiet=True)
    topic = lesson.topic(name)
    kafka.ensure_topic(lesson.bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=lesson.bootstrap, transactional_id=f"{lesson.topic_prefix}{name}")
    producer.init_transactions()
    for chunk, commit in chunks:
        producer.begin_transaction()
        for order in chunk:
            producer.send(topic, key=order["order_id"].encode(), value=encode(order))
        producer.flush()
        producer.commit_transaction() if commit else producer.abort_transaction()
    producer.close()
    return lesson.bootstrap, topic


@pytest.fixture(scope="module")
def transactional_topic(broker_up):
    """40 committed orders, 20 aborted ones, then the same 20 committed (as a relay restart leaves its topic)."""
    return transactional_topic_of("transactional", ((ORDERS[:40], True), (ORDERS[40:], False), (ORDERS[40:], True)))


def read(spark, bootstrap, topic, **options):
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def parsed(raw):
    from pyspark.sql import functions as F

    from deliverylab.orders import ORDER_SCHEMA

    return raw.select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o")).select("o.*")


@pytest.mark.parametrize("options, status", [
    ({"kafka.isolation.level": "read_committed"}, PASS),
    ({}, FAIL),                                                  # kafka-python's default: read_uncommitted
    ({"isolation.level": "read_committed"}, FAIL),               # no kafka. prefix: never reaches the consumer
    ({"kafka.isolation.level": "read_uncommitted"}, FAIL),
])
def test_spark_read_on_a_real_transactional_topic(spark, transactional_topic, options, status):
    bootstrap, topic = transactional_topic
    checks = fresh()
    df = parsed(read(spark, bootstrap, topic, **options))
    lab.check_spark_committed_read(checks, lambda: df, lambda: pairs(ORDERS))
    assert statuses(checks)["committed_df has every order exactly once"] == status


@pytest.mark.parametrize("dedup, status", [
    (lambda raw: parsed(raw).dropDuplicates(["order_id"]), PASS),
    (lambda raw: parsed(raw), FAIL),                                       # no dedup
    (lambda raw: parsed(raw.dropDuplicates(["offset"])), FAIL),            # each copy has its own offset
    (lambda raw: parsed(raw.distinct()), FAIL),                            # offset and timestamp differ
    (lambda raw: parsed(raw).dropDuplicates(["customer_id"]), FAIL),       # drops real orders: lost
], ids=["by_order_id", "none", "by_offset", "distinct_raw", "by_customer"])
def test_downstream_dedup_on_real_duplicates(spark, transactional_topic, dedup, status):
    bootstrap, topic = transactional_topic
    raw = read(spark, bootstrap, topic)  # read_uncommitted: orders 40-59 twice
    produced = ORDERS
    checks = fresh()
    lab.check_downstream_dedup(checks, lambda: dedup(raw), lambda: produced,
                               lambda: ledger.reconcile(produced, parsed(raw).collect()))
    assert statuses(checks)["deduped has every order exactly once"] == status



@pytest.fixture(scope="module")
def refunds(broker_up):
    """Exercise 1's topic, as the right answer leaves it: 40 orders committed, then 20 sent and aborted."""
    return transactional_topic_of("refunds", ((ORDERS[:40], True), (ORDERS[40:], False)))


@pytest.mark.parametrize("committed, default, status", [
    ("read_committed", "read_uncommitted", PASS),
    ("read_committed", None, FAIL),                  # the course reader's own default kept: read_committed twice
    ("read_uncommitted", "read_committed", FAIL),    # the two views swapped
    ("read_uncommitted", "read_uncommitted", FAIL),  # the aborted orders counted as refunds
])
def test_exercise_1_views_of_a_real_transactional_topic(refunds, committed, default, status):
    bootstrap, topic = refunds

    def view(level):
        return ledger.read_kafka_topic(bootstrap, topic, **({"isolation_level": level} if level else {}))

    committed_view, default_view = view(committed), view(default)
    checks = fresh()
    lab.check_transaction_views(checks, lambda: committed_view, lambda: default_view, ORDERS[:40], ORDERS[40:])
    got = statuses(checks)
    assert (FAIL in got.values()) == (status == FAIL), got
    if default is None:
        assert any("the same as committed_view" in line for r in checks.results for line in r.lines)


# --------------------------------------------------------------------------- exercise 2: the relay killed for real

def consumer_with_defaults(bootstrap):
    """A learner's reader: a KafkaConsumer given no isolation_level (kafka-python reads uncommitted then)."""
    def read(topic):
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                 consumer_timeout_ms=3000)
        try:
            return [(r.key.decode(), __import__("json").loads(r.value)["amount"]) for r in consumer]
        finally:
            consumer.close()
    return read


def test_exercise_2_relay_crashes_and_readers(refunds):
    import deliverylab
    from deliverylab.modules import m06

    bootstrap, refunds_topic = refunds
    lesson = deliverylab.setup("test-lab06-relay", quiet=True)
    try:
        for moment in ("after_commit",):  # planted: the transaction was closed when the relay died
            checks = fresh()
            lab.check_relay_crash(checks, lambda: m06.crash_and_restart(lesson, crash_transaction=2, crash=moment))
            assert statuses(checks)["the relay was killed by SIGKILL in the middle of a transaction"] == FAIL
        report = m06.crash_and_restart(lesson, crash_transaction=2, crash="after_send")
        sink = m06.names(lesson)["sink"]
        readers = {
            "read_committed": (lambda topic: ledger.read_kafka_topic(bootstrap, topic, isolation_level="read_committed"),
                               PASS),
            "read_uncommitted": (lambda topic: ledger.read_kafka_topic(bootstrap, topic,
                                                                       isolation_level="read_uncommitted"), FAIL),
            "a KafkaConsumer with its defaults": (consumer_with_defaults(bootstrap), FAIL),
            "uncommitted, repeats dropped by order id": (lambda topic: list(dict(ledger.read_kafka_topic(
                bootstrap, topic, isolation_level="read_uncommitted")).items()), FAIL),
        }
        for name, (reader, status) in readers.items():
            checks = fresh()
            lab.check_transaction_views(checks, lambda: ledger.read_kafka_topic(bootstrap, refunds_topic),
                                        lambda: ledger.read_kafka_topic(bootstrap, refunds_topic,
                                                                        isolation_level="read_uncommitted"),
                                        ORDERS[:40], ORDERS[40:])
            lab.check_relay_crash(checks, lambda: report)
            lab.check_accounting_reader(checks, lambda: reader, lambda: report, sink,
                                        refunds=(refunds_topic, ORDERS[:40]))
            got = statuses(checks)
            assert (FAIL in got.values()) == (status == FAIL), (name, got)
            if status == FAIL:
                for r in checks.results:
                    assert r.status != FAIL or any(line.strip().startswith("hint:") for line in r.lines)
    finally:
        lesson.cleanup()
