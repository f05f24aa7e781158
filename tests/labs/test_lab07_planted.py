"""Lab 07 with planted answers run for real (make test-labs): notifiers crashed after their write, replayed,
redeployed on a new checkpoint and crashed again in the new query's batch 0, which holds as many orders as the
old query's batch 0 (exercise 1: the crash cell's sizes come from the exercise's seed); classifiers over the real
poison-pill stream and, in the check, over hidden poison pills in several micro-batches (exercise 2). Right
answers written differently pass; each wrong one, of the four kinds (copied from a printout, right only on the
demo's data, a probe missing, a verdict left to how records fall into batches), ends in FAIL with a hint (and no
stack trace on stderr)."""
from __future__ import annotations

import random

import pytest

from planted import assert_all_pass, assert_fails_with_a_hint

from deliverylab.checks import Checks
from deliverylab.modules.m07 import lab, notifications, quarantine

pytestmark = [pytest.mark.stack, pytest.mark.labs]

# ---------------------------------------------------------------- exercise 1: a notifier a replay does not repeat
# Each runs in a driver process of its own (the lab's crash_and_replay), so it imports what it needs.

def right_notifier(orders, out):
    def write(batch, batch_id):
        import sqlite3

        from deliverylab.checkpoint import query_id

        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))
        with sqlite3.connect(out.options["notifications"]) as db:
            db.execute("CREATE TABLE IF NOT EXISTS notifications (query_id TEXT, batch_id INTEGER, orders INTEGER, "
                       "PRIMARY KEY (query_id, batch_id))")
            db.execute("INSERT OR IGNORE INTO notifications VALUES (?, ?, ?)",
                       (query_id(out.checkpoint), batch_id, batch.count()))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def keyed_by_the_query_as_app_id(orders, out):  # right too: Delta's own sink uses the query id as its app id
    def write(batch, batch_id):
        import sqlite3

        from deliverylab.checkpoint import query_id

        query = query_id(out.checkpoint)
        (batch.write.format("delta").mode("append")
         .option("txnAppId", query).option("txnVersion", batch_id).save(out.sink))
        with sqlite3.connect(out.options["notifications"]) as db:
            db.execute("CREATE TABLE IF NOT EXISTS notifications (query_id TEXT, batch_id INTEGER, orders INTEGER, "
                       "UNIQUE (query_id, batch_id))")
            db.execute("INSERT OR IGNORE INTO notifications VALUES (?, ?, ?)", (query, batch_id, batch.count()))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def keyed_by_batch_id_alone(orders, out):  # the redeployed query's batch 0 is taken for the old one's
    def write(batch, batch_id):
        import sqlite3

        from deliverylab.checkpoint import query_id

        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))
        with sqlite3.connect(out.options["notifications"]) as db:
            db.execute("CREATE TABLE IF NOT EXISTS notifications (query_id TEXT, batch_id INTEGER PRIMARY KEY, "
                       "orders INTEGER)")
            db.execute("INSERT OR IGNORE INTO notifications VALUES (?, ?, ?)",
                       (query_id(out.checkpoint), batch_id, batch.count()))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def notifies_without_a_key(orders, out):  # a replay notifies again
    def write(batch, batch_id):
        import sqlite3

        from deliverylab.checkpoint import query_id

        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))
        with sqlite3.connect(out.options["notifications"]) as db:
            db.execute("CREATE TABLE IF NOT EXISTS notifications (query_id TEXT, batch_id INTEGER, orders INTEGER)")
            db.execute("INSERT INTO notifications VALUES (?, ?, ?)",
                       (query_id(out.checkpoint), batch_id, batch.count()))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def a_fixed_app_id(orders, out):  # a name typed in: the redeployed query's batches 0.. look done to Delta
    def write(batch, batch_id):
        import sqlite3

        from deliverylab.checkpoint import query_id

        (batch.write.format("delta").mode("append")
         .option("txnAppId", "orders-notifier").option("txnVersion", batch_id).save(out.sink))
        with sqlite3.connect(out.options["notifications"]) as db:
            db.execute("CREATE TABLE IF NOT EXISTS notifications (query_id TEXT, batch_id INTEGER, orders INTEGER, "
                       "PRIMARY KEY (query_id, batch_id))")
            db.execute("INSERT OR IGNORE INTO notifications VALUES (?, ?, ?)",
                       (query_id(out.checkpoint), batch_id, batch.count()))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def keyed_by_app_id_and_batch(orders, out):  # right too: out.app_id is new with every new checkpoint
    def write(batch, batch_id):
        import sqlite3

        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))
        db = sqlite3.connect(out.options["notifications"])
        try:
            db.execute("CREATE TABLE IF NOT EXISTS notifications (query_id TEXT, batch_id INTEGER, orders INTEGER)")
            db.execute("CREATE TABLE IF NOT EXISTS sent (app_id TEXT, batch_id INTEGER, "
                       "PRIMARY KEY (app_id, batch_id))")
            with db:
                if db.execute("INSERT OR IGNORE INTO sent VALUES (?, ?)", (out.app_id, batch_id)).rowcount:
                    db.execute("INSERT INTO notifications VALUES (?, ?, ?)", (out.app_id, batch_id, batch.count()))
        finally:
            db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def keyed_by_batch_and_count(orders, out):  # kind 2: right while no two batches with one id hold as many orders
    def write(batch, batch_id):
        import sqlite3

        from deliverylab.checkpoint import query_id

        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))
        with sqlite3.connect(out.options["notifications"]) as db:
            db.execute("CREATE TABLE IF NOT EXISTS notifications (query_id TEXT, batch_id INTEGER, orders INTEGER, "
                       "PRIMARY KEY (batch_id, orders))")
            db.execute("INSERT OR IGNORE INTO notifications VALUES (?, ?, ?)",
                       (query_id(out.checkpoint), batch_id, batch.count()))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def guards_the_batch_seen_crashing(orders, out):  # kind 1: batch 1, the batch the lesson's demo crashed
    def write(batch, batch_id):
        import sqlite3

        from deliverylab.checkpoint import query_id

        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))
        query = query_id(out.checkpoint)
        with sqlite3.connect(out.options["notifications"]) as db:
            db.execute("CREATE TABLE IF NOT EXISTS notifications (query_id TEXT, batch_id INTEGER, orders INTEGER)")
            if batch_id == 1 and db.execute("SELECT 1 FROM notifications WHERE query_id = ? AND batch_id = 1",
                                            (query,)).fetchone():
                return
            db.execute("INSERT INTO notifications VALUES (?, ?, ?)", (query, batch_id, batch.count()))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def forgets_an_import(orders, out):  # runs in a driver process of its own: the notebook's imports are not there
    def write(batch, batch_id):
        batch.write.format("delta").mode("append").save(out.sink)
        sqlite3.connect(out.options["notifications"])  # noqa: F821 - the mistake planted

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def no_checkpoint_location(orders, out):
    def write(batch, batch_id):
        batch.write.format("delta").mode("append").save(out.sink)

    return orders.writeStream.foreachBatch(write).start()


def run_notifier(lesson, notifier):
    pipe, crash = notifications.crash_and_replay(lesson, notifier, name=notifier.__name__.replace("_", "-"), total=250)
    checks = Checks("07-what-breaks-lab", record=False)
    lab.check_notifier(checks, lambda: pipe, lambda: crash, lambda: notifications.of(pipe))
    return checks, pipe


@pytest.mark.parametrize("notifier", [right_notifier, keyed_by_the_query_as_app_id, keyed_by_app_id_and_batch])
def test_a_right_notifier_passes(lesson, notifier):
    checks, pipe = run_notifier(lesson, notifier)
    assert_all_pass(checks)
    # the hazard was there: each query's batch 0 notified once, with as many orders as the seed's plan says
    sent = notifications.rows(pipe.options["notifications"])
    first = notifications.plan(random.Random(pipe.seed_drawn), 250).first
    assert [orders for _, batch, orders in sent if batch == 0] == [first, first], sent
    assert len(pipe.crashes) == 2 and pipe.crashes[1].batch == 0, pipe.crashes


def on_the_hidden_run(checks, description: str) -> bool:
    """Did ``description`` fail on the hidden run (its FAIL names the seed), after passing the run shown?"""
    lines = "\n".join(line for r in checks.results if r.description == description for line in r.lines)
    return "seed" in lines and "right on the run above, wrong on this one" in lines


def names_the_seed(checks, description: str) -> bool:
    lines = "\n".join(line for r in checks.results if r.description == description for line in r.lines)
    return "seed" in lines and "DELIVERYLAB_HIDDEN_SEED" in lines


@pytest.mark.parametrize("notifier, failed", [
    (keyed_by_batch_and_count, "the notifications count every order once"),
    (guards_the_batch_seen_crashing, "no batch notified twice"),
])
def test_a_notifier_right_only_on_the_demo_s_batches_fails_and_names_the_seed(lesson, notifier, failed):
    checks, _ = run_notifier(lesson, notifier)
    assert assert_fails_with_a_hint(checks)[failed] == "FAIL"
    assert names_the_seed(checks, failed)


@pytest.mark.parametrize("notifier, failed", [
    (keyed_by_batch_id_alone, "the notifications count every order once"),
    (notifies_without_a_key, "no batch notified twice"),
    (a_fixed_app_id, "the orders table: every order exactly once"),
    (forgets_an_import, "your pipeline ran through the crash and the redeploy"),
    (no_checkpoint_location, "your pipeline ran through the crash and the redeploy"),
])
def test_a_planted_notifier_fails_with_a_hint(lesson, notifier, failed, capfd):
    statuses = assert_fails_with_a_hint(run_notifier(lesson, notifier)[0])
    assert statuses[failed] == "FAIL", statuses
    assert len(capfd.readouterr().err) < 2000


# ---------------------------------------------------------------- exercise 2: a classifier for poison pills

SCHEMA = "order_id STRING, customer_id STRING, amount STRING, status STRING, event_time STRING, _corrupt_record STRING"


def parsed(records):
    from pyspark.sql import functions as F

    raw = F.col("value").cast("string")
    return (records.select(raw.alias("raw"), "partition", "offset",
                           F.from_json(raw, SCHEMA, {"columnNameOfCorruptRecord": "_corrupt_record"}).alias("o"))
            .select("raw", "partition", "offset", "o.*"))


def reasons(*checks):
    from pyspark.sql import functions as F

    reason = F.when(F.coalesce(F.length("raw"), F.lit(0)) == 0, "empty")
    for condition, text in checks:
        reason = reason.when(condition, text)
    return reason


def right(records):
    from pyspark.sql import functions as F

    return parsed(records).withColumn("reason", reasons(
        (F.col("_corrupt_record").isNotNull(), "not JSON"), (F.col("order_id").isNull(), "no order_id"),
        (F.expr("try_cast(amount AS DECIMAL(10,2))").isNull(), "bad amount"),
        (F.expr("try_cast(event_time AS TIMESTAMP)").isNull(), "bad event_time")))


def lets_bad_amounts_through(records):  # the amount is never checked: the orders table cannot take 'forty'
    from pyspark.sql import functions as F

    return parsed(records).withColumn("reason", reasons(
        (F.col("_corrupt_record").isNotNull(), "not JSON"), (F.col("order_id").isNull(), "no order_id")))


def filters_instead_of_classifying(records):  # bad records dropped, not quarantined
    from pyspark.sql import functions as F

    return (right(records).filter("reason IS NULL")
            .withColumn("reason", F.lit(None).cast("string")))


def casts_in_the_classifier(records):  # a cast that raises on the bad amount (ANSI mode)
    from pyspark.sql import functions as F

    return (parsed(records).withColumn("amount", F.col("amount").cast("decimal(10,2)"))
            .withColumn("reason", reasons((F.col("order_id").isNull(), "no order_id"))))


def right_in_sql(records):  # right too: the same classification as one SQL expression
    return (records.selectExpr(
        "CAST(value AS STRING) AS raw", "partition", "offset",
        f"from_json(CAST(value AS STRING), '{SCHEMA}', map('columnNameOfCorruptRecord', '_corrupt_record')) AS o")
        .selectExpr("raw", "partition", "offset", "o.order_id", "o.customer_id", "o.amount", "o.status",
                    "o.event_time", "CASE WHEN raw IS NULL OR raw = '' THEN 'empty' "
                    "WHEN o._corrupt_record IS NOT NULL THEN 'not JSON' WHEN o.order_id IS NULL THEN 'no id' "
                    "WHEN try_cast(o.amount AS DECIMAL(10,2)) IS NULL THEN 'amount' "
                    "WHEN try_cast(o.event_time AS TIMESTAMP) IS NULL THEN 'event time' END AS reason"))


def copies_the_good_ids(records):  # kind 1: the twenty good ids of the printout
    from pyspark.sql import functions as F

    good = [f"o-{100000 + n}" for n in range(20)]
    return parsed(records).withColumn("reason", F.when(F.col("order_id").isin(good), F.lit(None).cast("string"))
                                      .otherwise("not one of ours"))


def good_when_amount_comes_first(records):  # kind 2: the demo's good orders all start with the same key
    from pyspark.sql import functions as F

    return parsed(records).withColumn("reason", F.when(F.col("raw").startswith('{"amount"'), F.lit(None).cast("string"))
                                      .otherwise("not an order"))


def event_time_by_its_shape(records):  # kind 3: the amount is cast, the event time only matched by its shape
    from pyspark.sql import functions as F

    shaped = F.coalesce(F.col("event_time").rlike(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"), F.lit(False))
    return parsed(records).withColumn("reason", reasons(
        (F.col("_corrupt_record").isNotNull(), "not JSON"), (F.col("order_id").isNull(), "no order_id"),
        (F.expr("try_cast(amount AS DECIMAL(10,2))").isNull(), "bad amount"), (~shaped, "bad event_time")))


def schema_from_the_batch_s_first_record(records):  # kind 4: its columns depend on what comes first in the batch
    from pyspark.sql import functions as F

    if records.isStreaming:  # the stream's columns, checked once before it starts: no batch to look at yet
        return right(records)
    raw = F.col("value").cast("string")
    first = records.select(raw).first()[0]
    return (records.select(raw.alias("raw"), "partition", "offset",
                           F.from_json(raw, F.schema_of_json(F.lit(first))).alias("o"))
            .select("raw", "partition", "offset", "o.*")
            .withColumn("reason", reasons((F.col("order_id").isNull(), "no order_id or not JSON"),
                                          (F.expr("try_cast(amount AS DECIMAL(10,2))").isNull(), "bad amount"),
                                          (F.expr("try_cast(event_time AS TIMESTAMP)").isNull(), "bad event_time"))))


def run(lesson, classify):
    from deliverylab.stack.session import get_spark

    spark = get_spark()
    routed = quarantine.run(spark, lesson, f"planted-{classify.__name__}".replace("_", "-"), classify)
    checks = Checks("07-what-breaks-lab", record=False)
    lab.check_quarantine(checks, lambda: routed, lambda: classify, spark)
    return {r.description: r.status for r in checks.results}, checks


@pytest.mark.parametrize("classify", [right, right_in_sql])
def test_a_right_classifier_passes(lesson, classify):
    assert_all_pass(run(lesson, classify)[1])


@pytest.mark.parametrize("classify", [lets_bad_amounts_through, filters_instead_of_classifying,
                                      casts_in_the_classifier, schema_from_the_batch_s_first_record])
def test_a_planted_classifier_fails_with_a_hint_and_no_trace(lesson, classify, capfd):
    assert_fails_with_a_hint(run(lesson, classify)[1])
    assert len(capfd.readouterr().err) < 2000  # no KBs of JVM stack on the learner's screen


@pytest.mark.parametrize("classify, failed", [
    (copies_the_good_ids, "the good orders, and only them"),
    # the hidden run's bad amount comes first in its record: let through as good, it stops the write
    (good_when_amount_comes_first, "the stream ran to the end"),
    (event_time_by_its_shape, "the stream ran to the end"),  # a date that is no date reaches the orders table's cast
])
def test_a_classifier_right_only_on_the_demo_fails_on_the_hidden_pills(lesson, classify, failed, capfd):
    statuses, checks = run(lesson, classify)
    assert assert_fails_with_a_hint(checks)[failed] == "FAIL", statuses
    assert on_the_hidden_run(checks, failed)
    assert len(capfd.readouterr().err) < 2000
