"""Lab 03 with planted wrong answers run for real (make test-labs): the at-most-once pipeline crashed and
reconciled (exercises 1 and 2), and learners' start_query functions stopped and restarted (exercise 3: no
checkpoint, a new checkpoint each start, earliest without a checkpoint). Each ends in FAIL with a hint."""
from __future__ import annotations

import pytest
from planted import assert_all_pass, assert_fails_with_a_hint

from deliverylab.checks import Checks
from deliverylab.modules.m03 import lab

pytestmark = [pytest.mark.stack, pytest.mark.labs]


def statuses(checks):
    return {r.description: r.status for r in checks.results}


# --------------------------------------------------------------------------- exercise 3, for real


def starters(spark, bootstrap):
    """The right start_query and three wrong ones, as a learner might write them."""
    import uuid

    from pyspark.sql import functions as F

    from deliverylab.orders import ORDER_SCHEMA

    def orders(topic, starting):
        return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).option("startingOffsets", starting).load()
                .select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"))
                .select("o.order_id", "o.amount"))

    def right(topic, checkpoint_dir, keep):
        return orders(topic, "latest").writeStream.foreachBatch(keep).option("checkpointLocation", checkpoint_dir).start()

    def no_checkpoint(topic, checkpoint_dir, keep):
        return orders(topic, "latest").writeStream.foreachBatch(keep).start()

    def new_checkpoint_each_start(topic, checkpoint_dir, keep):
        return (orders(topic, "latest").writeStream.foreachBatch(keep)
                .option("checkpointLocation", f"{checkpoint_dir}-{uuid.uuid4().hex}").start())

    def earliest_without_checkpoint(topic, checkpoint_dir, keep):
        return orders(topic, "earliest").writeStream.foreachBatch(keep).start()

    return right, [no_checkpoint, new_checkpoint_each_start, earliest_without_checkpoint]


def test_exercise_3_on_real_queries(spark):
    import deliverylab
    from deliverylab.modules.m03 import checkpoint_folder

    lesson = deliverylab.setup("test-m03-lab", quiet=True)
    try:
        right, wrong = starters(spark, lesson.bootstrap)
        checks = Checks("03-at-most-once-lab", record=False)
        lab.check_keeps_place(checks, lambda: right, lambda f: lab.stop_and_restart(f, lesson))
        assert set(statuses(checks).values()) == {"PASS"}
        outcomes = {}
        for start_query in wrong:
            checks = Checks("03-at-most-once-lab", record=False)
            lab.check_keeps_place(checks, lambda: start_query, lambda f: lab.stop_and_restart(f, lesson))
            outcomes[start_query.__name__] = statuses(checks)
        for name, got in outcomes.items():
            assert got["its query keeps its progress in checkpoint_dir"] == "FAIL", name
        assert outcomes["no_checkpoint"]["no order produced while it was stopped is lost"] == "FAIL"
        assert outcomes["new_checkpoint_each_start"]["no order produced while it was stopped is lost"] == "FAIL"
        assert outcomes["earliest_without_checkpoint"]["no order is delivered twice"] == "FAIL"

        # what Spark does without checkpointLocation: a temporary folder, deleted at stop
        query = right(lesson.topic("keeper-1"), lesson.checkpoint("keeper-folder"), lambda batch, batch_id: None)
        assert checkpoint_folder(query).endswith("checkpoints/keeper-folder")
        query.stop()
        query = wrong[0](lesson.topic("keeper-1"), None, lambda batch, batch_id: None)
        folder = checkpoint_folder(query)
        query.stop()
        assert "temporary-" in folder
    finally:
        lesson.cleanup()


# --------------------------------------------------------------------------- exercises 1 and 2, for real

def test_exercises_1_and_2_right_and_planted():
    from decimal import Decimal

    import deliverylab
    from deliverylab import crashlab

    lesson = deliverylab.setup("test-lab03-planted", quiet=True)
    try:
        pipe = crashlab.Pipeline(lesson, "at_most_once", max_per_batch=200).start()
        pipe.produce(200)
        pipe.drain()
        pipe.crash("now")
        while_down = pipe.produce(150)
        checks = Checks("03-at-most-once-lab", record=False)  # planted: reconciled before the restart
        lab.check_loss_while_down(checks, lambda: pipe, lambda: while_down, lambda: pipe.ledger())
        assert statuses(checks)["the pipeline was crashed, then restarted"] == "FAIL"
        pipe.restart()
        pipe.produce(100)
        pipe.drain()
        amo = pipe.ledger()
        checks = Checks("03-at-most-once-lab", record=False)
        lab.check_loss_while_down(checks, lambda: pipe, lambda: while_down, lambda: amo)
        assert_all_pass(checks)
        for given in (pipe, amo.summary()):  # the pipeline, or the ledger's text, for the ledger
            checks = Checks("03-at-most-once-lab", record=False)
            lab.check_loss_while_down(checks, lambda: pipe, lambda: while_down, lambda: given)
            assert_fails_with_a_hint(checks)
        checks = Checks("03-at-most-once-lab", record=False)  # planted: orders produced after the restart, not while down
        after_restart = pipe.produce(50)
        pipe.drain()
        lab.check_loss_while_down(checks, lambda: pipe, lambda: after_restart, lambda: pipe.ledger())
        assert assert_fails_with_a_hint(checks)["exactly the orders produced while it was down are lost"] == "FAIL"

        rows, produced = pipe.delivered(), pipe.produced
        in_sink = {order_id for order_id, _ in rows}
        lost = {o["order_id"] for o in produced} - in_sink
        worth = sum(Decimal(o["amount"]) for o in produced if o["order_id"] in lost)
        for lost_ids, missing in ((lost, worth), (lost, float(worth))):
            checks = Checks("03-at-most-once-lab", record=False)
            lab.check_missing_revenue(checks, lambda: lost_ids, lambda: missing, lambda: produced, lambda: rows)
            assert_all_pass(checks)
        planted = {
            "subtracted the other way": (in_sink - {o["order_id"] for o in produced}, worth),
            "the loss as a negative amount": (lost, -worth),
            "the revenue of every order": (lost, sum(Decimal(o["amount"]) for o in produced)),
            "the amounts added as text": (lost, "".join(o["amount"] for o in produced if o["order_id"] in lost)),
        }
        for name, (lost_ids, missing) in planted.items():
            checks = Checks("03-at-most-once-lab", record=False)
            lab.check_missing_revenue(checks, lambda: lost_ids, lambda: missing, lambda: produced, lambda: rows)
            assert_fails_with_a_hint(checks), name
    finally:
        lesson.cleanup()
