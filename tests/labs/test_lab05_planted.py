"""Lab 05 with planted answers, run for real (make test-labs): right answers written differently pass; each
wrong one ends in FAIL with a hint.

Every answer is handed to the lab's own calls (the cells' scenarios and checks), so it meets the real broker, a
real Spark driver and a real SIGKILL, as a learner's code does, on the run shown and on the check's hidden run
(the writers on a hidden topic, their first batch run again after their write in the notebook's Spark; the
MERGE once on a table that already holds orders, with several orders per customer). Wrong answers of four
kinds: a value copied from the demo (kind 1), a rule right only on the demo's data (kind 2), an answer exercise
3's crash had no probe for that exercise 1's has (kind 3), an answer whose verdict on the run shown depended on
a race (kind 4)."""
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


def insert_only_merge(orders, out):  # right, another shape: a MERGE that inserts only order ids not in the table
    def write(batch, batch_id):
        from delta.tables import DeltaTable

        spark = batch.sparkSession
        if not DeltaTable.isDeltaTable(spark, out.sink):
            batch.limit(0).write.format("delta").save(out.sink)
        (DeltaTable.forPath(spark, out.sink).alias("t").merge(batch.alias("s"), "t.order_id = s.order_id")
         .whenNotMatchedInsertAll().execute())

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def skip_at_400_rows(orders, out):  # kinds 1 and 4: produced=400 from the printout; right only if the crashed
    def write(batch, batch_id):     # batch happened to hold all 200 orders the crash sent
        from delta.tables import DeltaTable

        spark = batch.sparkSession
        if DeltaTable.isDeltaTable(spark, out.sink) and spark.read.format("delta").load(out.sink).count() >= 400:
            return
        batch.write.format("delta").mode("append").save(out.sink)

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def first_write_creates_the_table(orders, out):  # kind 2: the first write goes without the txn options
    def write(batch, batch_id):
        from delta.tables import DeltaTable

        if batch.isEmpty():
            return
        if not DeltaTable.isDeltaTable(batch.sparkSession, out.sink):
            batch.write.format("delta").save(out.sink)
        else:
            (batch.write.format("delta").mode("append")
             .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def run_exercise_1(lesson, writer):
    pipe, crash = scenarios.crash_and_replay(lesson, writer, "after_sink_write")  # as the lab's cell: 400 orders
    checks = Checks("05-exactly-once-sinks-lab", record=False)
    lab.check_idempotent_writer(checks, lambda: pipe, lambda: crash)
    return checks


@pytest.mark.parametrize("writer", [right_writer, insert_only_merge])
def test_exercise_1_passes_right_writers(lesson, writer):
    assert set(outcome(run_exercise_1(lesson, writer)).values()) == {"PASS"}


@pytest.mark.parametrize("writer", [plain_append, new_app_id_per_call, version_from_the_clock, options_on_the_stream,
                                    one_version_for_all, no_checkpoint, skip_at_400_rows,
                                    first_write_creates_the_table])
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


def sql_merge(spark, table, batch):  # right, another shape: SQL, the latest event by max_by
    batch.createOrReplaceTempView("incoming")
    spark.sql("""CREATE OR REPLACE TEMP VIEW latest AS
                 SELECT order_id, max_by(struct(customer_id, amount, status, event_time), event_time) AS e
                 FROM incoming GROUP BY order_id""")
    spark.sql(f"""MERGE INTO delta.`{table}` t
                  USING (SELECT order_id, e.customer_id, e.amount, e.status, e.event_time FROM latest) s
                  ON t.order_id = s.order_id
                  WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")


def newer_only_merge(spark, table, batch):  # right, another shape: update only when the event is newer
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    newest = batch.groupBy("order_id").agg(F.max("event_time").alias("event_time"))
    latest = batch.join(newest, ["order_id", "event_time"]).dropDuplicates(["order_id"])
    (DeltaTable.forPath(spark, table).alias("t").merge(latest.alias("s"), "t.order_id = s.order_id")
     .whenMatchedUpdateAll(condition="s.event_time > t.event_time").whenNotMatchedInsertAll().execute())


def merge_on_customer(spark, table, batch):  # kind 2: the wrong key, right with one order per customer
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = Window.partitionBy("order_id").orderBy(F.col("event_time").desc())
    latest = batch.withColumn("rank", F.row_number().over(newest_first)).filter("rank = 1").drop("rank")
    (DeltaTable.forPath(spark, table).alias("t").merge(latest.alias("s"), "t.customer_id = s.customer_id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())


def latest_per_customer(spark, table, batch):  # kind 2: one row per customer, right with one order per customer
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = Window.partitionBy("customer_id").orderBy(F.col("event_time").desc())
    latest = batch.withColumn("rank", F.row_number().over(newest_first)).filter("rank = 1").drop("rank")
    (DeltaTable.forPath(spark, table).alias("t").merge(latest.alias("s"), "t.order_id = s.order_id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())


def insert_only(spark, table, batch):  # kind 2: right on an empty table; an order already there never moves on
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = Window.partitionBy("order_id").orderBy(F.col("event_time").desc())
    latest = batch.withColumn("rank", F.row_number().over(newest_first)).filter("rank = 1").drop("rank")
    (DeltaTable.forPath(spark, table).alias("t").merge(latest.alias("s"), "t.order_id = s.order_id")
     .whenNotMatchedInsertAll().execute())


def overwrite_with_latest(spark, table, batch):  # kind 2: right on an empty table; the orders already there go
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = Window.partitionBy("order_id").orderBy(F.col("event_time").desc())
    latest = batch.withColumn("rank", F.row_number().over(newest_first)).filter("rank = 1").drop("rank")
    latest.write.format("delta").mode("overwrite").save(table)


def drops_the_row_seen_above(spark, table, batch):  # kind 1: the demo's stale event, typed in
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    latest = batch.filter(~((F.col("order_id") == "o-1") & (F.col("status") == "placed")))
    (DeltaTable.forPath(spark, table).alias("t").merge(latest.alias("s"), "t.order_id = s.order_id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())


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


@pytest.mark.parametrize("my_merge", [right_merge, sql_merge, newer_only_merge])
def test_exercise_2_passes_right_merges(lesson, my_merge):
    assert set(outcome(run_exercise_2(lesson, my_merge)).values()) == {"PASS"}


@pytest.mark.parametrize("my_merge", [merge_on_customer, latest_per_customer, insert_only, overwrite_with_latest,
                                      drops_the_row_seen_above])
def test_exercise_2_a_merge_right_only_on_the_demo_passes_it_and_fails_the_hidden_case(lesson, my_merge):
    checks = run_exercise_2(lesson, my_merge)
    assert_fails_with_a_hint(checks)
    assert any("a hidden run (seed" in line for r in checks.results for line in r.lines)


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


def upsert_a_commit_per_row(orders, out):  # right, another shape: no transaction, but every row keyed
    def write(batch, batch_id):
        import sqlite3

        db = sqlite3.connect(out.sink, isolation_level=None)
        for r in batch.toLocalIterator():
            db.execute("INSERT OR REPLACE INTO orders VALUES (?, ?, ?, ?, ?)",
                       (r.order_id, r.customer_id, str(r.amount), r.status, str(r.event_time)))
        db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def one_transaction_plain_insert(orders, out):  # kind 3: survives the crash shown, not one after its COMMIT
    def write(batch, batch_id):
        import sqlite3

        rows = [(r.order_id, r.customer_id, str(r.amount), r.status, str(r.event_time)) for r in batch.collect()]
        db = sqlite3.connect(out.sink)
        try:
            with db:
                db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", rows)
        finally:
            db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def run_exercise_3(lesson, writer):
    pipe, crash = scenarios.crash_and_replay(lesson, writer, "mid_sink_write", sink="sqlite")  # as the lab's cell
    checks = Checks("05-exactly-once-sinks-lab", record=False)
    lab.check_atomic_upsert(checks, lambda: pipe, lambda: crash)
    return checks


@pytest.mark.parametrize("writer", [right_upsert, upsert_a_commit_per_row])
def test_exercise_3_passes_right_upserts(lesson, writer):
    assert set(outcome(run_exercise_3(lesson, writer)).values()) == {"PASS"}


def test_exercise_3_one_transaction_without_a_key_passes_the_crash_shown_and_fails_the_hidden_one(lesson):
    checks = run_exercise_3(lesson, one_transaction_plain_insert)
    assert [r.status for r in checks.results] == ["PASS", "PASS", "PASS", "PASS", "FAIL"]
    assert "IntegrityError" in "\n".join(checks.results[-1].lines)
    assert_fails_with_a_hint(checks)


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

    pipe, crash = scenarios.crash_and_replay(lesson, app_id_per_batch, "after_sink_write")
    checks = Checks("05-exactly-once-sinks-lab", record=False)
    lab.check_idempotent_writer(checks, lambda: pipe, lambda: crash)
    assert set(outcome(checks).values()) == {"PASS"}
    assert len(deltalog.txn_versions(pipe.sink)) > 1  # a txn entry (a writer id) per batch, not one for the writer
