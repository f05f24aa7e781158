"""Lab 03, exercise 3, with real queries (make test-labs): the right start_query passes, three wrong ones
that learners write (no checkpoint, a new checkpoint each start, earliest without a checkpoint) FAIL."""
from __future__ import annotations

import pytest

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
