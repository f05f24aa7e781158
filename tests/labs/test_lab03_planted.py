"""Lab 03 with planted answers run for real (make test-labs): learners' lose_orders functions on the real at-most-once
pipeline, killed with SIGKILL, called by the lab's cell (lab.forced_race) with the race forced both ways on the real
driver (SIGSTOP / SIGCONT); what_was_lost on the real sink and on a hidden one; learners' start_query functions stopped and
restarted by the check with hidden numbers of orders. Right answers written differently pass; each wrong one, of the
four kinds (copied from a printout, right only on the demo's data, a probe missing, a race), ends in FAIL with a
hint that names the cause."""
from __future__ import annotations

from decimal import Decimal

import pytest
from planted import assert_all_pass, assert_fails_with_a_hint
from lab03_answers import (by_loop, by_sets, no_drain, orders_in_flight, produced_after_a_restart_not_waited_for,
                           produced_before_the_crash, right, right_in_steps)

from deliverylab import ledger
from deliverylab.checks import Checks
from deliverylab.modules.m03 import lab

pytestmark = [pytest.mark.stack, pytest.mark.labs]


def fresh_checks():
    return Checks("03-at-most-once-lab", record=False)


# --------------------------------------------------------------------------- exercises 1 and 2, for real


def typed_in():
    """kind 1: the orders of a first run, as a list typed in from its printout would give them every time after."""
    shown: list = []

    def lose_orders(pipe):
        down = right(pipe)
        shown.extend([] if shown else down)
        return shown
    return lose_orders


def shown_and_checked(pipe, lose_orders):
    """The lab's cell for one function (lab.forced_race; its own ledger: the orders it produced), then the check."""
    start = len(pipe.produced)
    while_down = lab.forced_race(lose_orders, pipe)
    kept = list(pipe.produced), pipe.delivered()  # what the lab's cell keeps for exercise 2
    amo = ledger.reconcile(kept[0][start:], kept[1])
    checks = fresh_checks()
    lab.check_loss_while_down(checks, lambda: lose_orders, lambda: pipe, lambda: while_down, lambda: amo)
    return checks, kept


RACES = {  # kind 4, and what the FAIL must name as the cause
    produced_before_the_crash: "of the returned orders were produced while a driver ran",
    orders_in_flight: "had been produced while a driver ran and not written when it died",
    no_drain: "reached the sink only after lose_orders returned",
    produced_after_a_restart_not_waited_for: "of the returned orders were produced while a driver ran",
}


def by_sql(spark):  # Spark SQL: an anti join on two temporary views
    def what_was_lost(produced, rows):
        spark.createDataFrame([(o["order_id"], o["amount"]) for o in produced], "order_id string, amount string") \
            .createOrReplaceTempView("lab03_produced")
        spark.createDataFrame([(i, str(a)) for i, a in rows], "order_id string, amount string") \
            .createOrReplaceTempView("lab03_sink")
        found = spark.sql("SELECT p.order_id, CAST(p.amount AS DECIMAL(10,2)) AS amount FROM lab03_produced p "
                          "LEFT ANTI JOIN lab03_sink s ON p.order_id = s.order_id").collect()
        return {r.order_id for r in found}, sum((r.amount for r in found), Decimal("0.00"))
    return what_was_lost


def test_exercises_1_and_2_right_and_planted(lesson, spark):
    from deliverylab import crashlab

    pipe = crashlab.Pipeline(lesson, "at_most_once", max_per_batch=200).start()
    pipe.produce(200)
    pipe.drain()
    start = len(pipe.produced)
    checks, (produced, rows) = shown_and_checked(pipe, right)  # the lab's run: exercise 2 works on what it kept
    assert_all_pass(checks)
    assert set(ledger.reconcile(produced[start:], rows).lost_ids) == {o["order_id"] for o in produced[start:start + 150]}
    assert_all_pass(shown_and_checked(pipe, right_in_steps)[0])
    lose = "exactly the orders produced while it was down are lost"
    typed = typed_in()
    shown_and_checked(pipe, typed)  # the first run, whose printout the list is typed from
    checks = shown_and_checked(pipe, typed)[0]
    assert assert_fails_with_a_hint(checks)[lose] == "FAIL"
    assert "were not produced by this call" in "\n".join(line for r in checks.results for line in r.lines)
    for lose_orders, cause in RACES.items():  # the race forced both ways: a FAIL whichever way it went before
        checks = shown_and_checked(pipe, lose_orders)[0]
        assert assert_fails_with_a_hint(checks)[lose] == "FAIL", lose_orders.__name__
        text = "\n".join(line for r in checks.results for line in r.lines)
        assert "on:       the run above (seed" in text and cause in text, (lose_orders.__name__, text)
    pipe.drain()
    checks = fresh_checks()  # a number, not a function
    lab.check_loss_while_down(checks, lambda: 150, lambda: pipe, lambda: [], lambda: pipe.ledger())
    assert assert_fails_with_a_hint(checks)["lose_orders is a function of the pipeline"] == "FAIL"

    shown = by_sets(produced, rows)
    assert shown[0] == {o["order_id"] for o in produced[200:350]}
    for what_was_lost in (by_sets, by_loop, by_sql(spark)):
        checks = fresh_checks()
        lab.check_missing_revenue(checks, lambda: what_was_lost, lambda: produced, lambda: rows)
        assert_all_pass(checks)
    down = {o["order_id"] for o in produced[200:350]}
    planted = {
        "both typed in from the printout (kind 1)": lambda p, r: shown,
        "exercise 1's while_down for the lost ids: right only when nothing was in flight (kind 2)":
            lambda p, r: (down, by_sets(p, r)[1]),
        "the revenue difference: right only without a duplicate, the probe exercises 1 and 3 have (kind 3)":
            lambda p, r: (by_sets(p, r)[0], -ledger.reconcile(p, r).revenue_difference),
        "subtracted the other way": lambda p, r: ({i for i, _ in r} - {o["order_id"] for o in p}, by_sets(p, r)[1]),
        "the loss as a negative amount": lambda p, r: (by_sets(p, r)[0], -by_sets(p, r)[1]),
        "the revenue of every order": lambda p, r: (by_sets(p, r)[0], sum(Decimal(o["amount"]) for o in p)),
        "the amounts added as text": lambda p, r: (by_sets(p, r)[0], "".join(
            o["amount"] for o in p if o["order_id"] in by_sets(p, r)[0])),
    }
    for name, what_was_lost in planted.items():
        checks = fresh_checks()
        lab.check_missing_revenue(checks, lambda: what_was_lost, lambda: produced, lambda: rows)
        assert_fails_with_a_hint(checks), name


# --------------------------------------------------------------------------- exercise 3, for real


def starters(spark, bootstrap, typed_offsets):
    """Right start_query functions written differently, and wrong ones, as a learner might write them.
    ``typed_offsets``: where the lab's old run (60 orders before the stop) had got to, as its printout showed it."""
    import json
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

    def in_a_sub_folder_on_a_timer(topic, checkpoint_dir, keep):
        return (orders(topic, "latest").writeStream.foreachBatch(keep).trigger(processingTime="200 milliseconds")
                .start(checkpointLocation=f"{checkpoint_dir}/orders-query"))

    def no_checkpoint(topic, checkpoint_dir, keep):
        return orders(topic, "latest").writeStream.foreachBatch(keep).start()

    def new_checkpoint_each_start(topic, checkpoint_dir, keep):
        return (orders(topic, "latest").writeStream.foreachBatch(keep)
                .option("checkpointLocation", f"{checkpoint_dir}-{uuid.uuid4().hex}").start())

    def earliest_without_checkpoint(topic, checkpoint_dir, keep):
        return orders(topic, "earliest").writeStream.foreachBatch(keep).start()

    def available_now(topic, checkpoint_dir, keep):  # ends by itself: the check must say so first
        return (orders(topic, "latest").writeStream.foreachBatch(keep).trigger(availableNow=True)
                .option("checkpointLocation", checkpoint_dir).start())

    def raises_in_its_batch(topic, checkpoint_dir, keep):  # the learner's own exception, in one line
        def handle(batch, batch_id):
            keep(batch.withColumn("total", F.col("amount") * quantity), batch_id)  # noqa: F821
        return orders(topic, "latest").writeStream.foreachBatch(handle).option("checkpointLocation", checkpoint_dir).start()

    starts: dict = {}

    def restarted_from_typed_offsets(topic, checkpoint_dir, keep):  # kind 1: the offsets of the run once shown
        starts[topic] = starts.get(topic, 0) + 1
        starting = "latest" if starts[topic] == 1 else json.dumps({topic: typed_offsets})
        return (orders(topic, starting).writeStream.foreachBatch(keep)
                .option("checkpointLocation", f"{checkpoint_dir}/start-{starts[topic]}").start())

    seen: set = set()

    def remembers_in_python(topic, checkpoint_dir, keep):  # kind 3: passed before the restart's folder was probed
        def only_new(batch, batch_id):
            fresh = [r.order_id for r in batch.select("order_id").collect() if r.order_id not in seen]
            seen.update(fresh)
            keep(batch.where(F.col("order_id").isin(fresh)), batch_id)
        return (orders(topic, "earliest").writeStream.foreachBatch(only_new)
                .option("checkpointLocation", f"{checkpoint_dir}/{uuid.uuid4().hex[:8]}").start())

    return [right, in_a_sub_folder_on_a_timer], [no_checkpoint, new_checkpoint_each_start, earliest_without_checkpoint,
                                                 available_now, raises_in_its_batch, restarted_from_typed_offsets,
                                                 remembers_in_python]


def offsets_of_the_run_once_shown(lesson) -> dict:
    """What the lab's old fixed run printed as its query's end offsets after the 60 orders before the stop."""
    from deliverylab.orders import produce_orders
    from deliverylab.stack import kafka

    topic = lesson.topic("keeper-as-shown")
    kafka.ensure_topic(lesson.bootstrap, topic)
    produce_orders(lesson.bootstrap, topic, lab.SHOWN_SIZES["before"], start=0, progress=False)
    return {str(p): off for p, off in kafka.end_offsets(lesson.bootstrap, topic).items()}


def test_exercise_3_on_real_queries(lesson, spark):
    from deliverylab.modules.m03 import checkpoint_folder

    rights, wrongs = starters(spark, lesson.bootstrap, offsets_of_the_run_once_shown(lesson))
    for start_query in rights:
        checks = fresh_checks()
        lab.check_keeps_place(checks, lambda: start_query, lesson)
        assert_all_pass(checks)
    got = {}
    for start_query in wrongs:
        checks = fresh_checks()
        lab.check_keeps_place(checks, lambda: start_query, lesson)
        got[start_query.__name__] = assert_fails_with_a_hint(checks)
        lines = "\n".join(line for r in checks.results for line in r.lines)
        if start_query.__name__ == "available_now":
            assert "ended by itself" in lines, lines
        if start_query.__name__ == "raises_in_its_batch":
            assert "name 'quantity' is not defined" in lines, lines
    running = "its query reads until it is stopped and hands each batch to keep"
    assert got["available_now"][running] == "FAIL" and got["raises_in_its_batch"][running] == "FAIL"
    for name in ("no_checkpoint", "new_checkpoint_each_start", "earliest_without_checkpoint", "remembers_in_python"):
        assert got[name]["its query keeps its progress in checkpoint_dir"] == "FAIL", name
    # restarted_from_typed_offsets: the hidden run has other sizes, so its offsets re-read orders (more before the
    # stop) or point past the end of a partition (fewer); which check fails depends on the seed
    assert got["no_checkpoint"]["no order produced while it was stopped is lost"] == "FAIL"
    assert got["new_checkpoint_each_start"]["no order produced while it was stopped is lost"] == "FAIL"
    assert got["earliest_without_checkpoint"]["no order is delivered twice"] == "FAIL"

    # what Spark does without checkpointLocation: a temporary folder, deleted at stop
    query = rights[0](lesson.topic("keeper-folder"), lesson.checkpoint("keeper-folder"), lambda batch, batch_id: None)
    assert checkpoint_folder(query).endswith("checkpoints/keeper-folder")
    query.stop()
    query = wrongs[0](lesson.topic("keeper-folder"), None, lambda batch, batch_id: None)
    folder = checkpoint_folder(query)
    query.stop()
    assert "temporary-" in folder
