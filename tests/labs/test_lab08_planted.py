"""Lab 08 with planted wrong answers run for real (make test-labs): learners' pipelines through the lab's
chaos plan (real SIGKILLs), audits of a real table's history, plans and predictions against real runs.
Each wrong answer ends in FAIL with a hint, or in one line that says what to do; the solution passes."""
from __future__ import annotations

import pytest
from planted import assert_all_pass, assert_fails_with_a_hint, outcome

from deliverylab.checks import Checks
from deliverylab.config import CourseError
from deliverylab.crashlab import chaos, crashpoints
from deliverylab.modules.m08 import audit, lab, matrix

pytestmark = [pytest.mark.stack, pytest.mark.labs]

PLAN = [*crashpoints.CRASH_POINTS, "now"]

# ---------------------------------------------------------------- exercise 1: the orders pipeline
# Each runs in a driver process of its own, as the learner's does.


def right_pipeline(orders, out):
    return orders.writeStream.format("delta").option("checkpointLocation", out.checkpoint).start(out.sink)


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


def idempotent_foreachbatch(orders, out):  # exactly-once, but no streaming sink: the audit has no batch ids
    def write(batch, batch_id):
        (batch.write.format("delta").mode("append")
         .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def run_chaos(lesson, pipeline, plan=PLAN):
    return chaos.run_chaos(lesson, pipeline, plan=plan, orders=100, max_per_batch=20, sink="delta",
                           name=pipeline.__name__.replace("_", "-"), keep_pipe=True)


def chaos_checks(result):
    checks = Checks("08-capstone-lab", record=False)
    lab.check_chaos(checks, lambda: result)
    return checks


@pytest.fixture(scope="module")
def right_run(lesson):
    from deliverylab.crashlab import redeploy

    result = run_chaos(lesson, right_pipeline)
    redeploy.new_checkpoint(result["pipe"], orders=40, resume_where_it_stopped=True)  # the lab's next cell
    return result


def audit_checks(spark, result, batch_ids):
    checks = Checks("08-capstone-lab", record=False)
    lab.check_chaos(checks, lambda: result)
    lab.check_audit(checks, lambda: batch_ids, lambda: audit.history(spark, result["pipe"].sink),
                    lambda: audit.batches_with_data(result["pipe"]))
    return checks


def test_the_right_pipeline_survives_the_plan_and_its_audit_passes(right_run):
    from delta.tables import DeltaTable

    from deliverylab.stack.session import get_spark

    spark = get_spark()
    history = DeltaTable.forPath(spark, right_run["pipe"].sink).history().orderBy("version").collect()
    assert_all_pass(audit_checks(spark, right_run, [int(r.operationParameters["epochId"]) for r in history]))


@pytest.mark.parametrize("pipeline, failed", [
    (plain_foreachbatch_append, "no order written twice"),
    (a_checkpoint_per_start, lab.RAN),  # the course sees nothing in out.checkpoint and says so
    (runs_once_and_stops, lab.RAN),
    (no_checkpoint_location, lab.RAN),
])
def test_a_planted_pipeline_fails_with_a_hint(lesson, pipeline, failed):
    statuses = assert_fails_with_a_hint(chaos_checks(run_chaos(lesson, pipeline)))
    assert statuses[failed] == "FAIL", statuses


def test_an_exactly_once_foreachbatch_passes_the_chaos_but_not_the_audit(lesson):
    from deliverylab.stack.session import get_spark

    result = run_chaos(lesson, idempotent_foreachbatch)
    statuses = assert_fails_with_a_hint(audit_checks(get_spark(), result, []))
    assert statuses["no order written twice"] == statuses["no order lost"] == "PASS"
    assert statuses["every version of your table is a streaming write"] == "FAIL"


# ---------------------------------------------------------------- exercise 2: the chaos plan

@pytest.mark.parametrize("plan", [
    ["now", "now", "now"],                                  # random kills only
    list(crashpoints.CRASH_POINTS),                         # no random kill
    crashpoints.CRASH_POINTS,                               # the dict itself: its keys, but no "now"
    [*list(crashpoints.CRASH_POINTS)[1:], "now"],           # a named point left out
])
def test_a_planted_plan_fails_with_a_hint(plan):
    checks = Checks("08-capstone-lab", record=False)
    lab.check_plan(checks, lambda: plan)
    assert_fails_with_a_hint(checks)


def test_a_plan_with_a_misspelt_point_is_refused_in_one_line_before_any_crash(lesson):
    with pytest.raises(CourseError, match=r"Unknown crash point 'after_sink'.*Valid crash points"):
        run_chaos(lesson, right_pipeline, plan=["after_sink", "now"])


# ---------------------------------------------------------------- exercise 3: the audit trail

def test_planted_audits_of_the_real_history_fail_with_a_hint(right_run):
    from delta.tables import DeltaTable

    from deliverylab.stack.session import get_spark

    spark = get_spark()
    newest_first = DeltaTable.forPath(spark, right_run["pipe"].sink).history().collect()
    wrong = {
        "newest first (history()'s own order)": [int(r.operationParameters["epochId"]) for r in newest_first],
        "as strings": [r.operationParameters["epochId"] for r in reversed(newest_first)],
        "the versions, not the batch ids": [r.version for r in reversed(newest_first)],
    }
    assert len({r.operationParameters["queryId"] for r in newest_first}) == 2
    for name, answer in wrong.items():
        statuses = assert_fails_with_a_hint(audit_checks(spark, right_run, answer))
        assert statuses["the batch id of every version, oldest first"] == "FAIL", name


# ---------------------------------------------------------------- exercise 4: predictions

def test_planted_predictions_fail_against_the_real_runs(lesson):
    rows = matrix.run(lesson, ["control_table_after", "control_table_atomic", "kafka_sink_idempotent"], orders=40)
    right = {name: matrix.VARIANTS[name].guarantee for name in matrix.runnable()}
    for picks in ({**right, "kafka_sink_idempotent": "exactly-once"},   # "idempotent producer = exactly-once"
                  {**right, "control_table_after": "exactly-once"},     # "a control table makes it exactly-once"
                  {k: v for k, v in right.items() if k != "delta_merge"},
                  {**right, "delta_sink": "exactly once"}):
        checks = Checks("08-capstone-lab", record=False)
        lab.check_predictions(checks, lambda: picks, lambda: rows)
        assert_fails_with_a_hint(checks)
    checks = Checks("08-capstone-lab", record=False)
    lab.check_predictions(checks, lambda: right, lambda: rows)
    assert set(outcome(checks).values()) == {"PASS"}
