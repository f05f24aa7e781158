"""Lab 06 on real transactional topics, a really killed relay and a Kafka sink really crashed (make test-labs):
every reader is called on the topic shown and on the lab's hidden topics (real ones, written by the lab's own
probes). Right readers written differently pass; wrong ones of the four kinds (a value copied from the printout,
a rule right only on the demo's topic, a probe missing, a verdict left to a race) end in FAIL with a hint."""
from __future__ import annotations

import json

import pytest
from planted import assert_all_pass, assert_fails_with_a_hint

from deliverylab import crashlab, ledger
from deliverylab.checks import Checks
from deliverylab.modules import m06
from deliverylab.modules.m06 import lab
from deliverylab.orders import ORDER_SCHEMA, encode, generate_orders

pytestmark = [pytest.mark.stack, pytest.mark.labs]

ORDERS = generate_orders(60)


def fresh() -> Checks:
    return Checks("06-kafka-end-to-end-lab", record=False)


def on_the_hidden_run(checks: Checks, description: str) -> bool:
    """Did ``description`` fail on a hidden run (its FAIL names the seed), after passing the run shown?"""
    lines = "\n".join(line for r in checks.results if r.description == description for line in r.lines)
    return "seed" in lines and "right on the run above, wrong on this one" in lines


# --------------------------------------------------------------------------- exercise 1: the two views


@pytest.fixture(scope="module")
def refunds(lesson):
    """Exercise 1's topic as the lab's own answer writes it: 40 orders committed, then 20 sent and aborted."""
    from kafka import KafkaProducer

    from deliverylab.stack import kafka

    topic = lesson.topic("refunds")
    kafka.delete_topics(lesson.bootstrap, [topic])
    kafka.ensure_topic(lesson.bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=lesson.bootstrap, transactional_id=f"{lesson.topic_prefix}refunds",
                             **lesson.login)
    producer.init_transactions()
    for chunk, commit in ((ORDERS[:40], True), (ORDERS[40:], False)):
        producer.begin_transaction()
        for order in chunk:
            producer.send(topic, key=order["order_id"].encode(), value=encode(order))
        producer.flush()
        producer.commit_transaction() if commit else producer.abort_transaction()
    producer.close()
    return topic


def course_reader(lesson, level=None):
    return lambda topic: ledger.read_kafka_topic(lesson.bootstrap, topic, **({"isolation_level": level} if level else {}))


def consumer_reader(lesson, **settings):
    """A learner's own reader: a KafkaConsumer that reads every partition to the end offsets it saw first."""
    def read(topic):
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=lesson.bootstrap, **settings)
        try:
            tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            end, rows = consumer.end_offsets(tps), []
            while any(consumer.position(tp) < end[tp] for tp in tps):
                for records in consumer.poll(timeout_ms=1000).values():
                    rows += [(r.key.decode(), json.loads(r.value)["amount"]) for r in records]
            return rows
        finally:
            consumer.close()
    return read


def one_poll(lesson):
    """Kind 4: one poll() of a consumer at read_committed; on a small topic it may happen to get everything."""
    def read(topic):
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(topic, bootstrap_servers=lesson.bootstrap, auto_offset_reset="earliest",
                                 isolation_level="read_committed")
        try:
            polled = consumer.poll(timeout_ms=5000)
            return [(r.key.decode(), json.loads(r.value)["amount"]) for records in polled.values() for r in records]
        finally:
            consumer.close()
    return read


def views(lesson, refunds, committed_view, default_view):
    checks = fresh()
    lab.check_transaction_views(checks, lambda: committed_view, lambda: default_view, ORDERS[:40], ORDERS[40:],
                                refunds, lesson)
    return checks


def test_exercise_1_right_views_pass(lesson, refunds):
    rights = {
        "the course's reader": (course_reader(lesson, "read_committed"), course_reader(lesson, "read_uncommitted")),
        "a KafkaConsumer of one's own": (consumer_reader(lesson, isolation_level="read_committed"),
                                         consumer_reader(lesson)),
    }
    for name, (committed, default) in rights.items():
        assert_all_pass(views(lesson, refunds, committed, default)), name


def test_exercise_1_wrong_views_fail_with_a_hint(lesson, refunds):
    committed, uncommitted = course_reader(lesson, "read_committed"), course_reader(lesson, "read_uncommitted")
    planted = {
        "the course reader's own default kept": (committed, course_reader(lesson), "default_view shows the aborted "
                                                 "orders too"),
        "the two views swapped": (uncommitted, committed, "committed_view has none of the aborted orders"),
        # kind 1: the orders the notebook committed, copied into the reader: right for refunds only
        "the committed ids copied": (lambda t: [r for r in uncommitted(t) if r[0] in {o["order_id"] for o in ORDERS[:40]}],
                                     uncommitted, "committed_view has every committed order, once"),
        # kind 3: repeats dropped from the default view: the refunds topic had none, a relay's output has
        "repeats dropped": (committed, lambda t: list(dict(uncommitted(t)).items()), "default_view shows the aborted "
                            "orders too"),
    }
    for name, (committed_view, default_view, failed) in planted.items():
        checks = views(lesson, refunds, committed_view, default_view)
        assert assert_fails_with_a_hint(checks)[failed] == "FAIL", name
        if name in ("the committed ids copied", "repeats dropped"):
            assert on_the_hidden_run(checks, failed), name


# --------------------------------------------------------------------------- exercise 2: the relay and its reader


@pytest.fixture(scope="module")
def report(lesson):
    return m06.crash_and_restart(lesson, crash_transaction=2, crash="after_send")


def test_exercise_2_a_relay_killed_after_its_commit_fails(lesson, report):
    checks = fresh()
    lab.check_relay_crash(checks, lambda: m06.crash_and_restart(lesson, crash_transaction=2, crash="after_commit"))
    assert assert_fails_with_a_hint(checks)["the relay was killed by SIGKILL in the middle of a transaction"] == "FAIL"


def accounting(lesson, report, reader) -> Checks:
    checks = fresh()
    lab.check_relay_crash(checks, lambda: report)
    lab.check_accounting_reader(checks, lambda: reader, lambda: report, m06.names(lesson)["sink"], lesson)
    return checks


def test_exercise_2_right_readers_pass(lesson, report):
    for reader in (course_reader(lesson, "read_committed"), consumer_reader(lesson, isolation_level="read_committed")):
        assert_all_pass(accounting(lesson, report, reader))


def test_exercise_2_wrong_readers_fail_with_a_hint(lesson, report):
    uncommitted = course_reader(lesson, "read_uncommitted")
    planted = {
        "read_uncommitted": (uncommitted, "read_for_accounting sees every order exactly once"),
        "a KafkaConsumer with its defaults": (consumer_reader(lesson), "read_for_accounting sees every order "
                                              "exactly once"),
        # kind 1: the relay's orders as the report printed them, whatever the topic
        "the report's orders": (lambda topic: list(report.produced), "read_for_accounting sees every order exactly "
                                "once"),
        # kind 3: repeats dropped, right where every aborted attempt was sent again
        "uncommitted, repeats dropped": (lambda t: list(dict(uncommitted(t)).items()),
                                         "read_for_accounting skips an aborted transaction nobody sent again"),
        # kind 4: one poll; its verdict on the relay's output depends on what the first fetches brought
        "one poll": (one_poll(lesson), "read_for_accounting sees every order exactly once"),
    }
    for name, (reader, failed) in planted.items():
        checks = accounting(lesson, report, reader)
        assert assert_fails_with_a_hint(checks)[failed] == "FAIL", name
        if name in ("the report's orders", "uncommitted, repeats dropped"):
            assert on_the_hidden_run(checks, failed), name


# --------------------------------------------------------------------------- exercise 3: Spark's reader


def parsed(raw):
    from pyspark.sql import functions as F

    return raw.select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o")).select("o.*")


def spark_reader(spark, lesson, **options):
    def read(topic):
        reader = spark.read.format("kafka").option("kafka.bootstrap.servers", lesson.bootstrap).options(
            **lesson.spark_login).option("subscribe", topic)
        return reader.options(**options).load()
    return read


def spark_read(lesson, report, spark, read_df) -> Checks:
    checks = fresh()
    lab.check_spark_committed_read(checks, lambda: read_df, lambda: report, m06.names(lesson)["sink"], lesson)
    return checks


def test_exercise_3_right_spark_reads_pass(lesson, report, spark):
    committed = spark_reader(spark, lesson, **{"kafka.isolation.level": "read_committed"})
    rights = {
        "the DataFrame API": lambda topic: parsed(committed(topic)),
        "a SQL expression, startingOffsets spelt out": lambda topic: (
            spark_reader(spark, lesson, **{"kafka.isolation.level": "read_committed", "startingOffsets": "earliest"})(
                topic).selectExpr(f"from_json(CAST(value AS STRING), '{ORDER_SCHEMA}') AS o").selectExpr("o.*")),
    }
    for name, read_df in rights.items():
        assert_all_pass(spark_read(lesson, report, spark, read_df)), name


def test_exercise_3_wrong_spark_reads_fail_with_a_hint(lesson, report, spark):
    uncommitted = spark_reader(spark, lesson)
    planted = {
        "no isolation setting": (lambda t: parsed(uncommitted(t)), "read_committed_df has every order exactly once"),
        "the setting without its kafka. prefix": (
            lambda t: parsed(spark_reader(spark, lesson, **{"isolation.level": "read_committed"})(t)),
            "read_committed_df has every order exactly once"),
        # kind 3, the gap issue 35 named: repeats dropped, right on the relay's output only
        "uncommitted, repeats dropped": (lambda t: parsed(uncommitted(t)).dropDuplicates(["order_id"]),
                                         "read_committed_df skips an aborted transaction nobody sent again"),
        # kind 1: the relay's orders from the report, whatever the topic
        "the report's orders": (lambda t: spark.createDataFrame(report.produced, "order_id STRING, amount DECIMAL(10,2)"),
                                "read_committed_df has every order exactly once"),
    }
    for name, (read_df, failed) in planted.items():
        checks = spark_read(lesson, report, spark, read_df)
        assert assert_fails_with_a_hint(checks)[failed] == "FAIL", name
        if name in ("the report's orders", "uncommitted, repeats dropped"):
            assert on_the_hidden_run(checks, failed), name


# --------------------------------------------------------------------------- exercise 4: after Spark's Kafka sink


@pytest.fixture(scope="module")
def sink(lesson, spark):
    """The lab's cell: the kafka_sink pipeline killed at after_sink_write and restarted, its topic as Spark reads it."""
    pipe = crashlab.Pipeline(lesson, "kafka_sink", max_per_batch=200).start()
    pipe.crash("after_sink_write", orders=200)
    pipe.restart()
    pipe.drain()
    pipe.stop()
    raw = spark_reader(spark, lesson)(pipe.sink)
    return pipe, raw


def dedups(lesson, spark, sink, dedup) -> Checks:
    pipe, raw = sink
    checks = fresh()
    lab.check_downstream_dedup(checks, lambda: dedup, lambda: raw, lambda: pipe.produced, lambda: pipe.ledger(),
                               lesson, spark)
    return checks


def by_sql(raw):
    from pyspark.sql import SparkSession

    raw.createOrReplaceTempView("lab06_raw")
    return SparkSession.getActiveSession().sql(
        f"SELECT o.* FROM (SELECT from_json(CAST(value AS STRING), '{ORDER_SCHEMA}') AS o, "
        "ROW_NUMBER() OVER (PARTITION BY key ORDER BY offset) AS n FROM lab06_raw) WHERE n = 1")


def test_exercise_4_right_dedups_pass(lesson, spark, sink):
    rights = {
        "by order id": lambda raw: parsed(raw).dropDuplicates(["order_id"]),
        "by Kafka key, in SQL": by_sql,
        "by value, parsed after": lambda raw: parsed(raw.dropDuplicates(["value"])),
    }
    for name, dedup in rights.items():
        assert_all_pass(dedups(lesson, spark, sink, dedup)), name


def first_half_of_each_partition(raw):
    """Kind 2: every order has exactly two copies, the second after all the first ones: keep each partition's first
    half. True of the run shown (one batch written twice), of no topic where only some orders were replayed."""
    from pyspark.sql import functions as F

    ends = raw.groupBy("partition").agg(F.max("offset").alias("last"))
    return parsed(raw.join(ends, "partition").filter(F.col("offset") * 2 <= F.col("last")))


def before_the_restart(raw):
    """Kind 1: the records written before a moment read off the printout (between the crash and the restart)."""
    from pyspark.sql import functions as F

    times = sorted(r[0] for r in raw.select("timestamp").collect())
    gap = max(range(1, len(times)), key=lambda i: times[i] - times[i - 1])
    cut = times[gap - 1] + (times[gap] - times[gap - 1]) / 2  # "typed in" once, from the run shown
    return lambda frame: parsed(frame.filter(F.col("timestamp") < F.lit(cut)))


def test_exercise_4_wrong_dedups_fail_with_a_hint(lesson, spark, sink):
    planted = {
        "none": lambda raw: parsed(raw),
        "by offset": lambda raw: parsed(raw.dropDuplicates(["offset"])),
        "distinct raw records": lambda raw: parsed(raw.distinct()),
        "by customer": lambda raw: parsed(raw).dropDuplicates(["customer_id"]),
        "the first half of each partition": first_half_of_each_partition,
        "before a time copied from the printout": before_the_restart(sink[1]),
    }
    for name, dedup in planted.items():
        checks = dedups(lesson, spark, sink, dedup)
        got = assert_fails_with_a_hint(checks)
        assert got["dedup(raw) has every order exactly once"] == "FAIL", (name, got)
        if name in ("the first half of each partition", "before a time copied from the printout"):
            assert on_the_hidden_run(checks, "dedup(raw) has every order exactly once"), name

