"""The whole stack, for real: kafka-python round trip, then Spark streaming into Delta."""
import pytest

import deliverylab
from deliverylab import ledger
from deliverylab.stack import kafka
from deliverylab.orders import ORDER_SCHEMA
from deliverylab.streams import wait_until_drained

pytestmark = pytest.mark.stack


def test_kafka_python_round_trip(broker_up):
    lesson = deliverylab.setup("test-roundtrip", quiet=True)
    sent = lesson.produce_orders(40, progress=False)
    received = ledger.read_kafka_topic(lesson.bootstrap, lesson.topic("orders"))
    assert sorted(r[0] for r in received) == [o["order_id"] for o in sent]


def test_spark_streams_kafka_into_a_delta_table(spark):
    from pyspark.sql import functions as F

    lesson = deliverylab.setup("test-stream-delta", quiet=True)
    sent = lesson.produce_orders(60, progress=False)
    stream = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", lesson.bootstrap)
              .option("subscribe", lesson.topic("orders"))
              .option("startingOffsets", "earliest").load()
              .select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o")).select("o.*"))
    query = stream.writeStream.format("delta").option("checkpointLocation", lesson.checkpoint("c")).start(lesson.table("t"))
    try:
        wait_until_drained(query)
    finally:
        query.stop()
    rows = spark.read.format("delta").load(lesson.table("t")).orderBy("order_id").collect()
    assert [r.order_id for r in rows] == [o["order_id"] for o in sent]
    assert [str(r.amount) for r in rows] == [o["amount"] for o in sent]
    assert ledger.reconcile(sent, ledger.read_delta(spark, lesson.table("t"))).verdict_line() == \
        "verdict: exactly-once (produced=60 lost=0 duplicated=0)"


def test_the_running_session_waits_between_polls_of_an_idle_source(spark):
    from deliverylab.stack import session

    # Spark's own default is 10 ms: a broker request a hundred times a second per idle query
    assert spark.conf.get("spark.sql.streaming.pollingDelay") == session.POLLING_DELAY


def test_setup_twice_is_safe_and_resets_the_lesson(broker_up):
    lesson = deliverylab.setup("test-twice", quiet=True)
    lesson.produce_orders(5, progress=False)
    assert kafka.topics(lesson.bootstrap, prefix=lesson.topic_prefix) == [lesson.topic("orders")]
    again = deliverylab.setup("test-twice", quiet=True)
    assert kafka.topics(again.bootstrap, prefix=again.topic_prefix) == []
    assert list((again.folder / "checkpoints").iterdir()) == []
