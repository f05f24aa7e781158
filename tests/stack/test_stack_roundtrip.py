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


def test_the_running_session_compiles_no_code_for_a_query(spark):
    """Spark's default compiles about twenty generated classes for this query (Janino, in the JVM)."""
    from pyspark import SparkContext

    compilations = SparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    before = compilations.getCount()
    rows = spark.range(100).selectExpr("id % 7 AS k", "CAST(id AS DECIMAL(10,2)) AS amount")
    assert len(rows.groupBy("k").agg({"amount": "sum"}).collect()) == 7
    assert len(rows.dropDuplicates(["k"]).collect()) == 7
    assert compilations.getCount() - before <= 2  # the Spark default: 20 (measured with the setting unset)


def test_the_running_session_keeps_room_for_compiled_code(spark):
    """With the quick JIT tier alone a JVM reserves 48 MB for compiled code; a long-lived session filled it and died."""
    from pyspark import SparkContext

    pools = SparkContext._jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
    code = [pool for pool in pools if "Code" in pool.getName()]
    assert code, [pool.getName() for pool in pools]
    reserved_mb = sum(pool.getUsage().getMax() for pool in code) / 2**20
    assert reserved_mb >= 200, f"{reserved_mb:.0f} MB for compiled code"


def test_vacuum_of_a_small_table_lists_its_files_with_a_few_tasks_not_ten_thousand(spark, tmp_path):
    from deliverylab.stack import session

    table = str(tmp_path / "small")
    for _ in range(3):
        spark.range(5).write.format("delta").mode("append").save(table)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    context = spark.sparkContext
    context.setJobGroup("vacuum-of-a-small-table", "the course's VACUUM")
    try:
        spark.sql(f"VACUUM delta.`{table}` RETAIN 0 HOURS").collect()
    finally:
        context.setJobGroup("", "")
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    tracker = context.statusTracker()
    stages = [tracker.getStageInfo(stage) for job in tracker.getJobIdsForGroup("vacuum-of-a-small-table")
              for stage in tracker.getJobInfo(job).stageIds]
    tasks = [stage.numTasks for stage in stages if stage]
    assert tasks, "VACUUM ran no Spark job in its job group: the test no longer sees its listing"
    # Spark's default listing parallelism is 10000 tasks: 33 s of empty tasks on two cores
    assert max(tasks) <= 2 * int(session.LISTING_PARALLELISM), tasks


def test_setup_twice_is_safe_and_resets_the_lesson(broker_up):
    lesson = deliverylab.setup("test-twice", quiet=True)
    lesson.produce_orders(5, progress=False)
    assert kafka.topics(lesson.bootstrap, prefix=lesson.topic_prefix) == [lesson.topic("orders")]
    again = deliverylab.setup("test-twice", quiet=True)
    assert kafka.topics(again.bootstrap, prefix=again.topic_prefix) == []
    assert list((again.folder / "checkpoints").iterdir()) == []
