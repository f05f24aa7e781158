"""Lab 08 with planted answers run for real (make test-labs): learners' pipelines through the lab's chaos plan (real
SIGKILLs) and, hidden, crashed once more right after their sink committed a batch in which orders share a customer
and an event time; audit functions on a real table's history and on a hidden one built in its schema; plan functions
on the named crash points and on a hidden pipeline's own; predictions against real runs of the variants drawn for
the process. Right answers written differently pass; each wrong one, of the four kinds (copied from a printout,
right only on the demo's data, a probe a sibling has, a verdict that depends on a race), ends in FAIL with a hint,
or in one line that says what to do."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from planted import assert_all_pass, assert_fails_with_a_hint, outcome

from deliverylab.checks import Checks
from deliverylab.config import CourseError
from deliverylab.crashlab import chaos, crashpoints
from deliverylab.modules.m08 import lab, matrix

pytestmark = [pytest.mark.stack, pytest.mark.labs]


def right_plan(points):
    return [*points, "now"]


# ---------------------------------------------------------------- exercise 1: the orders pipeline
# Each runs in a driver process of its own, as the learner's does.


def right_pipeline(orders, out):
    return orders.writeStream.format("delta").option("checkpointLocation", out.checkpoint).start(out.sink)


def right_written_differently(orders, out):  # a projection in SQL, the path as an option, a trigger of its own
    return (orders.selectExpr("order_id", "customer_id", "amount", "status", "event_time")
            .writeStream.outputMode("append").format("delta").queryName("my_capstone")
            .trigger(processingTime="500 milliseconds").option("path", out.sink)
            .option("checkpointLocation", out.checkpoint).start())


def plain_foreachbatch_append(orders, out):  # every replayed batch is appended again
    def write(batch, batch_id):
        batch.write.format("delta").mode("append").save(out.sink)

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def a_checkpoint_per_start(orders, out):  # a new query at every restart, which would read the topic again
    import uuid

    return (orders.writeStream.format("delta").option("checkpointLocation", f"{out.checkpoint}-{uuid.uuid4()}")
            .start(out.sink))


def runs_once_and_stops(orders, out):  # a batch job in disguise: the query ends when it has caught up
    return (orders.writeStream.format("delta").trigger(availableNow=True)
            .option("checkpointLocation", out.checkpoint).start(out.sink))


def no_checkpoint_location(orders, out):
    return orders.writeStream.format("delta").start(out.sink)


def deduplicated_on_customer_and_time(orders, out):  # kind 2: no two of the demo's orders share both
    return (orders.dropDuplicates(["customer_id", "event_time"]).writeStream.format("delta")
            .option("checkpointLocation", out.checkpoint).start(out.sink))


def marker_after_the_data(orders, out):  # kind 4: a batch is skipped once its id is in a marker table written
    def write(batch, batch_id):      # after the data; a kill between the two commits repeats the batch
        from delta.tables import DeltaTable

        spark = batch.sparkSession
        marker = out.sink.rstrip("/") + "-batches"
        if DeltaTable.isDeltaTable(spark, marker) and \
                spark.read.format("delta").load(marker).where(f"batch = {batch_id}").count():
            return
        batch.write.format("delta").mode("append").save(out.sink)
        spark.createDataFrame([(batch_id,)], "batch long").write.format("delta").mode("append").save(marker)

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def idempotent_foreachbatch(orders, out):  # exactly-once, but no streaming sink: the audit has no batch ids
    def write(batch, batch_id):
        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def run_chaos(lesson, pipeline, plan=None):
    return chaos.run_chaos(lesson, pipeline, plan=plan or right_plan(crashpoints.CRASH_POINTS), orders=100,
                           max_per_batch=20, sink="delta", name=pipeline.__name__.replace("_", "-"), keep_pipe=True)


def chaos_checks(result):
    checks = Checks("08-capstone-lab", record=False)
    lab.check_chaos(checks, lambda: result)
    return checks


@pytest.fixture(scope="module")
def right_run(lesson):
    from deliverylab.crashlab import redeploy

    result = run_chaos(lesson, right_pipeline)
    assert_all_pass(chaos_checks(result))  # the hidden crash included, on the pipeline the run kept
    redeploy.new_checkpoint(result["pipe"], orders=40, resume_where_it_stopped=True)  # the lab's next cell
    return result


def test_the_right_pipeline_survives_the_plan_and_the_hidden_crash(right_run):
    assert right_run["hidden_runs"] and all(led.verdict == "exactly-once" for led in right_run["hidden_runs"].values())


def test_a_right_pipeline_written_differently_passes_too(lesson):
    assert_all_pass(chaos_checks(run_chaos(lesson, right_written_differently)))


@pytest.mark.parametrize("pipeline, failed, where", [
    (plain_foreachbatch_append, "no order written twice", "the run above"),
    (a_checkpoint_per_start, lab.RAN, None),  # the course sees nothing in out.checkpoint and says so
    (runs_once_and_stops, lab.RAN, None),
    (no_checkpoint_location, lab.RAN, None),
    (deduplicated_on_customer_and_time, "no order lost", "a hidden run"),
    (marker_after_the_data, "no order written twice", None),  # on a hidden run, unless the random kill hit it too
])
def test_a_planted_pipeline_fails_with_a_hint(lesson, pipeline, failed, where):
    checks = chaos_checks(run_chaos(lesson, pipeline))
    statuses = assert_fails_with_a_hint(checks)
    assert statuses[failed] == "FAIL", statuses
    if where:
        text = "\n".join(line for r in checks.results if r.description == failed for line in r.lines)
        assert f"on:       {where}" in text, text


def test_an_exactly_once_foreachbatch_passes_the_chaos_but_not_the_audit(lesson):
    from deliverylab.stack.session import get_spark

    result = run_chaos(lesson, idempotent_foreachbatch)
    checks = chaos_checks(result)
    lab.check_audit(checks, lambda: RIGHT_AUDITS["ordered by version"], lambda: result["pipe"], get_spark())
    statuses = assert_fails_with_a_hint(checks)
    assert statuses["no order written twice"] == statuses["no order lost"] == "PASS"
    assert statuses["every version of your table is a streaming write"] == "FAIL"


# ---------------------------------------------------------------- exercise 2: the chaos plan

def plan_checks(plan):
    checks = Checks("08-capstone-lab", record=False)
    lab.check_plan(checks, lambda: plan)
    return checks


@pytest.mark.parametrize("plan", [right_plan, lambda points: ["now", *sorted(points), "now"]])
def test_right_plans_pass(plan):
    assert_all_pass(plan_checks(plan))


@pytest.mark.parametrize("plan", [
    lambda points: ["before_sink_write", "mid_sink_write", "after_sink_write", "after_commit", "now"],  # kind 1
    lambda points: [*crashpoints.CRASH_POINTS, "now"],      # kind 3: the named points, never the pipeline's own
    lambda points: list(points),                            # no random kill
    lambda points: [*points.values(), "now"],               # what each leaves behind, not its name
    lambda points: [*list(points)[1:], "now"],              # a point left out
    [*crashpoints.CRASH_POINTS, "now"],                     # a list, not a function
])
def test_a_planted_plan_fails_with_a_hint(plan):
    assert_fails_with_a_hint(plan_checks(plan))


def test_a_plan_with_a_misspelt_point_is_refused_in_one_line_before_any_crash(lesson):
    with pytest.raises(CourseError, match=r"Unknown crash point 'after_sink'.*Valid crash points"):
        run_chaos(lesson, right_pipeline, plan=["after_sink", "now"])


# ---------------------------------------------------------------- exercise 3: the audit trail

def ordered_by_version(history):
    return [int(row.operationParameters["epochId"]) for row in history.orderBy("version").collect()]


def in_sql(history):
    from deliverylab.stack.session import get_spark

    history.createOrReplaceTempView("audited_history")
    return [row.batch for row in get_spark().sql("SELECT CAST(operationParameters['epochId'] AS INT) AS batch "
                                                 "FROM audited_history ORDER BY version").collect()]


def reversed_rows(history):
    return [int(row["operationParameters"]["epochId"]) for row in reversed(history.collect())]


def per_query_from_zero(history):  # kind 2: right while every query's history begins at its batch 0
    from deliverylab.stack.session import get_spark

    history.createOrReplaceTempView("audited_history")
    return [row.batch for row in get_spark().sql(
        "SELECT ROW_NUMBER() OVER (PARTITION BY operationParameters['queryId'] ORDER BY version) - 1 AS batch "
        "FROM audited_history ORDER BY version").collect()]


def one_query_after_the_other(history):  # kind 2: right while two queries never write at the same time
    rows = history.orderBy("version").collect()
    queries = list(dict.fromkeys(r.operationParameters["queryId"] for r in rows))
    return [int(r.operationParameters["epochId"]) for q in queries for r in rows if r.operationParameters["queryId"] == q]


RIGHT_AUDITS = {"ordered by version": ordered_by_version, "in SQL": in_sql, "the rows reversed": reversed_rows}


def audit_checks(spark, result, batch_ids):
    checks = Checks("08-capstone-lab", record=False)
    lab.check_audit(checks, lambda: batch_ids, lambda: result["pipe"], spark)
    return checks


@pytest.mark.parametrize("name", RIGHT_AUDITS)
def test_right_audits_pass_on_the_real_history_and_a_hidden_one(right_run, name):
    from deliverylab.stack.session import get_spark

    assert_all_pass(audit_checks(get_spark(), right_run, RIGHT_AUDITS[name]))


def test_planted_audits_fail_with_a_hint(right_run):
    from delta.tables import DeltaTable

    from deliverylab.stack.session import get_spark

    spark = get_spark()
    sink = right_run["pipe"].sink
    shown = ordered_by_version(DeltaTable.forPath(spark, sink).history())
    assert len({r.operationParameters["queryId"] for r in DeltaTable.forPath(spark, sink).history().collect()}) == 2
    wrong = {  # name: (function, where it fails)
        "the list printed above (kind 1)": (lambda history: list(shown), "a hidden run"),
        "the lab's own table, whatever it is given (kind 1)": (
            lambda history: ordered_by_version(DeltaTable.forPath(spark, sink).history()), "a hidden run"),
        "each query counted from 0 (kind 2)": (per_query_from_zero, "a hidden run"),
        "one query after the other (kind 2)": (one_query_after_the_other, "a hidden run"),
        "newest first (history()'s own order)": (
            lambda history: [int(r.operationParameters["epochId"]) for r in history.collect()], "the run above"),
        "as strings": (lambda history: [r.operationParameters["epochId"] for r in history.orderBy("version").collect()],
                       "the run above"),
        "the versions, not the batch ids": (lambda history: [r.version for r in history.orderBy("version").collect()],
                                            "the run above"),
    }
    for name, (batch_ids, where) in wrong.items():
        checks = audit_checks(spark, right_run, batch_ids)
        statuses = assert_fails_with_a_hint(checks)
        assert statuses["the batch id of every version, oldest first"] == "FAIL", name
        lines = checks.result("the batch id of every version, oldest first").lines
        assert f"on:       {where}" in "\n".join(lines), (name, lines)


# ---------------------------------------------------------------- exercise 4: predictions

@pytest.fixture(scope="module")
def drawn_rows(lesson):
    return matrix.run(lesson, lab.variants_to_run(), orders=40)


def prediction_checks(picks, rows):
    checks = Checks("08-capstone-lab", record=False)
    lab.check_predictions(checks, lambda: picks, lambda: rows)
    return checks


def test_right_predictions_pass_against_the_real_runs(drawn_rows):
    right = {name: matrix.VARIANTS[name].guarantee for name in matrix.runnable()}
    assert_all_pass(prediction_checks(right, drawn_rows))
    widgets = {name: SimpleNamespace(picked=verdict) for name, verdict in right.items()}  # the lesson's widgets
    assert_all_pass(prediction_checks(widgets, drawn_rows))


def test_planted_predictions_fail_against_the_real_runs(drawn_rows):
    right = {name: matrix.VARIANTS[name].guarantee for name in matrix.runnable()}
    old_three = {"control_table_after": "at-least-once", "control_table_atomic": "exactly-once",
                 "kafka_sink_idempotent": "at-least-once"}
    first = drawn_rows[0].variant
    planted = {
        "the old three from a printout, at-least-once elsewhere (kind 1)": (
            {**{n: "at-least-once" for n in right}, **old_three}),
        "the old three, exactly-once elsewhere (kind 2)": {**{n: "exactly-once" for n in right}, **old_three},
        f"{first} guessed wrong": {**right, first: next(v for v in matrix.OUTCOMES if v != right[first])},
        "a variant left out": {k: v for k, v in right.items() if k != "delta_merge"},
        "a verdict misspelt": {**right, "delta_sink": "exactly once"},
    }
    for name, picks in planted.items():
        assert_fails_with_a_hint(prediction_checks(picks, drawn_rows)), name
    # rows of variants of one's own choosing (here: one of the three) instead of the three drawn
    statuses = outcome(prediction_checks(right, drawn_rows[:1]))
    assert statuses["your predictions match the variants the lab ran"] == "FAIL"
