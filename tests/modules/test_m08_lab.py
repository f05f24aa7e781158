"""Lab 08's checks accept the right answers and reject planted wrong ones (no broker needed)."""
import pytest

from deliverylab.checks import Checks
from deliverylab.crashlab.variants import VARIANTS
from deliverylab.modules.m08 import audit, lab, matrix

PLAN = ["before_sink_write", "mid_sink_write", "after_sink_write", "after_commit", "now"]


@pytest.fixture
def checks():
    return Checks("08-capstone-lab", record=False)


def statuses(checks):
    return [r.status for r in checks.results]


def chaos_result(plan=PLAN, lost=0, duplicated=0, fired=None, failure=None):
    crashes = [{"point": p, "by_sigkill": True} for p in (fired if fired is not None else plan)]
    if failure:
        return {"plan": list(plan), "crashes": crashes[:1], "failure": failure}
    return {"plan": list(plan), "crashes": crashes, "ledger": {"lost": lost, "duplicated": duplicated}}


def test_plan_passes_every_point_and_a_random_kill(checks):
    lab.check_plan(checks, lambda: PLAN)
    assert statuses(checks) == ["PASS", "PASS"]


@pytest.mark.parametrize("plan", [PLAN[:3] + ["now"], PLAN[:4]])  # a named point missing; no random kill
def test_plan_rejects_a_missing_point(checks, plan):
    lab.check_plan(checks, lambda: plan)
    assert "FAIL" in statuses(checks)


def test_chaos_passes_an_exactly_once_run(checks):
    lab.check_chaos(checks, lambda: chaos_result())
    assert statuses(checks) == ["PASS"] * 4


def test_chaos_rejects_a_plain_foreachbatch_append(checks):  # the replays were appended again
    lab.check_chaos(checks, lambda: chaos_result(duplicated=37))
    assert statuses(checks) == ["PASS", "PASS", "PASS", "FAIL"]


def test_chaos_rejects_a_pipeline_that_restarts_at_the_end(checks):  # startingOffsets=latest, fresh checkpoint
    lab.check_chaos(checks, lambda: chaos_result(lost=12))
    assert statuses(checks) == ["PASS", "PASS", "FAIL", "PASS"]


def test_chaos_rejects_a_run_whose_crashes_did_not_all_fire(checks):
    lab.check_chaos(checks, lambda: chaos_result(fired=PLAN[:2]))
    assert statuses(checks)[1] == "FAIL"


def test_chaos_a_failed_pipeline_is_one_fail_line_and_the_rest_skip(checks):
    lab.check_chaos(checks, lambda: chaos_result(failure="[STREAM_FAILED] ... no checkpointLocation"))
    assert statuses(checks) == ["FAIL", "SKIP", "SKIP", "SKIP"]


V = audit.Version
# three batches of the first query, then two of the query redeployed on a new checkpoint
HISTORY = [V(0, "STREAMING UPDATE", 0, "q1"), V(1, "STREAMING UPDATE", 1, "q1"), V(2, "STREAMING UPDATE", 2, "q1"),
           V(3, "STREAMING UPDATE", 0, "q2"), V(4, "STREAMING UPDATE", 1, "q2")]


def test_audit_passes_the_history_read_right(checks):
    lab.check_audit(checks, lambda: [0, 1, 2, 0, 1], lambda: HISTORY, lambda: {0, 1})
    assert set(statuses(checks)) == {"PASS"}


@pytest.mark.parametrize("answer, note", [([1, 0, 2, 1, 0], "newest first"), (["0", "1", "2", "0", "1"], "as text"),
                                          ([0, 1, 2, 3, 4], "version numbers"), ([0, 1, 2], "")])
def test_audit_rejects_a_history_read_wrong(checks, answer, note):
    lab.check_audit(checks, lambda: answer, lambda: HISTORY, lambda: {0, 1})
    assert statuses(checks)[1] == "FAIL"
    assert note in "\n".join(checks.results[1].lines)


def test_audit_rejects_a_batch_of_one_query_committed_twice(checks):
    twice = HISTORY + [V(5, "STREAMING UPDATE", 1, "q2")]
    lab.check_audit(checks, lambda: [0, 1, 2, 0, 1, 1], lambda: twice, lambda: {0, 1})
    assert statuses(checks) == ["PASS", "PASS", "FAIL", "PASS"]


def test_audit_rejects_a_foreachbatch_table_and_a_replay_committed_twice(checks):
    written = [V(0, "WRITE", None, None), V(1, "WRITE", None, None)]
    lab.check_audit(checks, lambda: [None, None], lambda: written, lambda: {1})
    assert statuses(checks)[0] == "FAIL" and statuses(checks)[2] == "FAIL"


def right_picks():
    return {name: VARIANTS[name].guarantee for name in matrix.runnable()}


ROWS = [matrix.MatrixRow("control_table_after", "at-least-once", "at-least-once", 60, 0, 9),
        matrix.MatrixRow("control_table_atomic", "exactly-once", "exactly-once", 60, 0, 0)]


def test_predictions_pass_a_full_and_right_table(checks):
    lab.check_predictions(checks, right_picks, lambda: ROWS)
    assert statuses(checks) == ["PASS"] * 3


def test_predictions_reject_a_table_missing_a_variant(checks):
    picks = right_picks()
    del picks["two_phase_commit"]
    lab.check_predictions(checks, lambda: picks, lambda: ROWS)
    assert statuses(checks)[0] == "FAIL"


def test_predictions_reject_a_misspelt_verdict_and_a_wrong_pick(checks):
    picks = {**right_picks(), "delta_sink": "exactly once"}
    lab.check_predictions(checks, lambda: picks, lambda: ROWS)
    assert statuses(checks)[1] == "FAIL"
    checks2 = Checks("08-capstone-lab", record=False)
    lab.check_predictions(checks2, lambda: {**right_picks(), "control_table_after": "exactly-once"}, lambda: ROWS)
    assert statuses(checks2) == ["PASS", "PASS", "FAIL"]
