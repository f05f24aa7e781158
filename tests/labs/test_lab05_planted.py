"""Lab 05 with planted wrong answers, run for real (make test-labs): each ends in FAIL with a hint.

Every wrong answer is handed to the lab's own calls (the cells' scenarios and checks), so it meets
the real broker, a real Spark driver and a real SIGKILL, as a learner's code does.
"""
import pytest
from planted import assert_fails_with_a_hint, outcome

from deliverylab.checks import Checks
from deliverylab.modules.m05 import lab, merges, scenarios

pytestmark = [pytest.mark.stack, pytest.mark.labs]


# ---------------------------------------------------------------- exercise 1: an idempotent Delta writer

def right_writer(orders, out):
    def write(batch, batch_id):
        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def plain_append(orders, out):
    def write(batch, batch_id):
        batch.write.format("delta").mode("append").save(out.sink)

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def new_app_id_per_call(orders, out):  # a key that changes: a replay is a stranger to Delta
    def write(batch, batch_id):
        import uuid

        (batch.write.format("delta").mode("append")
         .option("txnAppId", str(uuid.uuid4())).option("txnVersion", batch_id).save(out.sink))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def version_from_the_clock(orders, out):  # txnVersion that is not the batch id
    def write(batch, batch_id):
        import time

        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", int(time.time() * 1000)).save(out.sink))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def options_on_the_stream(orders, out):  # the txn options given to writeStream, where the batch write never sees them
    def write(batch, batch_id):
        batch.write.format("delta").mode("append").save(out.sink)

    return (orders.writeStream.foreachBatch(write).option("txnAppId", out.app_id)
            .option("checkpointLocation", out.checkpoint).start())


def one_version_for_all(orders, out):  # txnVersion fixed: Delta skips every batch after the first
    def write(batch, batch_id):
        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", 0).save(out.sink))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def no_checkpoint(orders, out):  # the checkpointLocation left out: Spark keeps a temporary one
    def write(batch, batch_id):
        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))

    return orders.writeStream.foreachBatch(write).start()


def run_exercise_1(lesson, writer):
    pipe, crash = scenarios.crash_and_replay(lesson, writer, "after_sink_write", orders=100)
    checks = Checks("05-exactly-once-sinks-lab", record=False)
    lab.check_idempotent_writer(checks, lambda: pipe, lambda: crash)
    return checks


def test_exercise_1_passes_the_right_writer(lesson):
    assert set(outcome(run_exercise_1(lesson, right_writer)).values()) == {"PASS"}


@pytest.mark.parametrize("writer", [plain_append, new_app_id_per_call, version_from_the_clock, options_on_the_stream,
                                    one_version_for_all, no_checkpoint])
def test_exercise_1_fails_a_planted_mistake(lesson, writer):
    assert_fails_with_a_hint(run_exercise_1(lesson, writer))


# ---------------------------------------------------------------- exercise 2: a MERGE that survives replays

def right_merge(spark, table, batch):
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = Window.partitionBy("order_id").orderBy(F.col("event_time").desc(), F.col("status").desc())
    latest = batch.withColumn("rank", F.row_number().over(newest_first)).filter("rank = 1").drop("rank")
    (DeltaTable.forPath(spark, table).alias("t").merge(latest.alias("s"), "t.order_id = s.order_id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())


def merge_without_dedup(spark, table, batch):  # two events of o-1: both inserted, then the replay is refused
    from delta.tables import DeltaTable

    (DeltaTable.forPath(spark, table).alias("t").merge(batch.alias("s"), "t.order_id = s.order_id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())


def keeps_the_earliest(spark, table, batch):
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    oldest_first = Window.partitionBy("order_id").orderBy(F.col("event_time").asc())
    first = batch.withColumn("rank", F.row_number().over(oldest_first)).filter("rank = 1").drop("rank")
    (DeltaTable.forPath(spark, table).alias("t").merge(first.alias("s"), "t.order_id = s.order_id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())


def stamps_the_clock(spark, table, batch):  # a processed_at column: the replay changes every row it matches
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = Window.partitionBy("order_id").orderBy(F.col("event_time").desc())
    latest = (batch.withColumn("rank", F.row_number().over(newest_first)).filter("rank = 1").drop("rank")
              .withColumn("event_time", F.current_timestamp()))
    (DeltaTable.forPath(spark, table).alias("t").merge(latest.alias("s"), "t.order_id = s.order_id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())


def plain_append_merge(spark, table, batch):  # no MERGE at all
    batch.write.format("delta").mode("append").save(table)


def run_exercise_2(lesson, my_merge):
    from deliverylab.stack.session import get_spark

    spark = get_spark()
    batch = merges.events(spark, [("o-1", "c-1", "10.00", "placed", "2026-01-01T00:00:00"),
                                  ("o-1", "c-1", "10.00", "paid", "2026-01-01T00:00:05"),
                                  ("o-2", "c-2", "20.00", "placed", "2026-01-01T00:00:01")])
    trial = merges.merge_twice(spark, my_merge, batch, lesson.table(f"planted_{my_merge.__name__}"))
    checks = Checks("05-exactly-once-sinks-lab", record=False)
    lab.check_safe_merge(checks, lambda: trial)
    return checks


def test_exercise_2_passes_the_right_merge(lesson):
    assert set(outcome(run_exercise_2(lesson, right_merge)).values()) == {"PASS"}


@pytest.mark.parametrize("my_merge", [merge_without_dedup, keeps_the_earliest, stamps_the_clock, plain_append_merge])
def test_exercise_2_fails_a_planted_mistake(lesson, my_merge):
    assert_fails_with_a_hint(run_exercise_2(lesson, my_merge))


# ---------------------------------------------------------------- exercise 3: a SQLite upsert crashed mid-batch

UPSERT = ("INSERT INTO orders VALUES (?, ?, ?, ?, ?) ON CONFLICT (order_id) DO UPDATE SET "
          "customer_id = excluded.customer_id, amount = excluded.amount, "
          "status = excluded.status, event_time = excluded.event_time")


def right_upsert(orders, out):
    def write(batch, batch_id):
        import sqlite3

        rows = [(r.order_id, r.customer_id, str(r.amount), r.status, str(r.event_time)) for r in batch.collect()]
        db = sqlite3.connect(out.sink)
        try:
            with db:
                db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?) ON CONFLICT (order_id) DO UPDATE SET "
                               "status = excluded.status", rows)
        finally:
            db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def collect_then_commit_each_row(orders, out):  # plain INSERT, a commit per row
    def write(batch, batch_id):
        import sqlite3

        db = sqlite3.connect(out.sink)
        for r in batch.collect():
            db.execute("INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
                       (r.order_id, r.customer_id, str(r.amount), r.status, str(r.event_time)))
            db.commit()
        db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def stream_rows_in_autocommit(orders, out):  # toLocalIterator, autocommit, plain INSERT
    def write(batch, batch_id):
        import sqlite3

        db = sqlite3.connect(out.sink, isolation_level=None)
        for r in batch.toLocalIterator():
            db.execute("INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
                       (r.order_id, r.customer_id, str(r.amount), r.status, str(r.event_time)))
        db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def executemany_in_autocommit(orders, out):  # one call, but every row its own transaction
    def write(batch, batch_id):
        import sqlite3

        rows = [(r.order_id, r.customer_id, str(r.amount), r.status, str(r.event_time)) for r in batch.collect()]
        db = sqlite3.connect(out.sink, isolation_level=None)
        db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", rows)
        db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def forgets_to_commit(orders, out):  # the implicit transaction is never committed: nothing lands
    def write(batch, batch_id):
        import sqlite3

        db = sqlite3.connect(out.sink)
        db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?) ON CONFLICT (order_id) DO NOTHING",
                       [(r.order_id, r.customer_id, str(r.amount), r.status, str(r.event_time))
                        for r in batch.collect()])
        db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def run_exercise_3(lesson, writer):
    pipe, crash = scenarios.crash_and_replay(lesson, writer, "mid_sink_write", orders=100, sink="sqlite")
    checks = Checks("05-exactly-once-sinks-lab", record=False)
    lab.check_atomic_upsert(checks, lambda: pipe, lambda: crash)
    return checks


def test_exercise_3_passes_the_right_upsert(lesson):
    assert set(outcome(run_exercise_3(lesson, right_upsert)).values()) == {"PASS"}


@pytest.mark.parametrize("writer", [collect_then_commit_each_row, stream_rows_in_autocommit,
                                    executemany_in_autocommit, forgets_to_commit])
def test_exercise_3_fails_a_planted_mistake(lesson, writer):
    assert_fails_with_a_hint(run_exercise_3(lesson, writer))


def app_id_per_batch(orders, out):  # a key that changes, but the same for a batch and its replay: safe
    def write(batch, batch_id):
        (batch.write.format("delta").mode("append")
         .option("txnAppId", f"{out.app_id}-{batch_id}").option("txnVersion", batch_id).save(out.sink))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def test_exercise_1_passes_an_app_id_per_batch_and_the_lab_says_what_it_costs(lesson):
    """The lab's note after exercise 1: it passes, with one txn entry per batch in the table's log."""
    from deliverylab import deltalog

    pipe, crash = scenarios.crash_and_replay(lesson, app_id_per_batch, "after_sink_write", orders=100)
    checks = Checks("05-exactly-once-sinks-lab", record=False)
    lab.check_idempotent_writer(checks, lambda: pipe, lambda: crash)
    assert set(outcome(checks).values()) == {"PASS"}
    assert len(deltalog.txn_versions(pipe.sink)) > 1  # a txn entry (a writer id) per batch, not one for the writer
