"""Lab 07 with planted wrong answers run for real (make test-labs): notifiers crashed after their write,
replayed and redeployed on a new checkpoint (exercise 1), and classifiers over the real poison-pill stream
(exercise 2). Each wrong one ends in FAIL with a hint (and no stack trace on stderr); the solution passes."""
from __future__ import annotations

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
            db.execute("INSERT INTO notifications VALUES (?, ?, ?)", (query_id(out.checkpoint), batch_id, batch.count()))

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
    pipe, crash = notifications.crash_and_replay(lesson, notifier, name=notifier.__name__.replace("_", "-"),
                                                 orders=100, redeploy_orders=50)
    checks = Checks("07-what-breaks-lab", record=False)
    lab.check_notifier(checks, lambda: pipe, lambda: crash, lambda: notifications.of(pipe))
    return checks


@pytest.mark.parametrize("notifier", [right_notifier, keyed_by_the_query_as_app_id])
def test_a_right_notifier_passes(lesson, notifier):
    assert_all_pass(run_notifier(lesson, notifier))


@pytest.mark.parametrize("notifier, failed", [
    (keyed_by_batch_id_alone, "the notifications count every order once"),
    (notifies_without_a_key, "no batch notified twice"),
    (a_fixed_app_id, "the orders table: every order exactly once"),
    (forgets_an_import, "your pipeline ran through the crash and the redeploy"),
    (no_checkpoint_location, "your pipeline ran through the crash and the redeploy"),
])
def test_a_planted_notifier_fails_with_a_hint(lesson, notifier, failed, capfd):
    statuses = assert_fails_with_a_hint(run_notifier(lesson, notifier))
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


def run(lesson, classify):
    from deliverylab.stack.session import get_spark

    routed = quarantine.run(get_spark(), lesson, f"planted-{classify.__name__}".replace("_", "-"), classify)
    checks = Checks("07-what-breaks-lab", record=False)
    lab.check_quarantine(checks, lambda: routed)
    return {r.description: r.status for r in checks.results}, checks


def test_the_right_classifier_passes(lesson):
    assert_all_pass(run(lesson, right)[1])


@pytest.mark.parametrize("classify", [lets_bad_amounts_through, filters_instead_of_classifying,
                                      casts_in_the_classifier])
def test_a_planted_classifier_fails_with_a_hint_and_no_trace(lesson, classify, capfd):
    assert_fails_with_a_hint(run(lesson, classify)[1])
    assert len(capfd.readouterr().err) < 2000  # no KBs of JVM stack on the learner's screen
