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


def chaos_result(plan=PLAN, lost=0, duplicated=0, fired=None):
    crashes = [{"point": p, "by_sigkill": True} for p in (fired if fired is not None else plan)]
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
    assert statuses(checks) == ["PASS"] * 3


def test_chaos_rejects_a_plain_foreachbatch_append(checks):  # the replays were appended again
    lab.check_chaos(checks, lambda: chaos_result(duplicated=37))
    assert statuses(checks) == ["PASS", "PASS", "FAIL"]


def test_chaos_rejects_a_pipeline_that_restarts_at_the_end(checks):  # startingOffsets=latest, fresh checkpoint
    lab.check_chaos(checks, lambda: chaos_result(lost=12))
    assert statuses(checks) == ["PASS", "FAIL", "PASS"]


def test_chaos_rejects_a_run_whose_crashes_did_not_all_fire(checks):
    lab.check_chaos(checks, lambda: chaos_result(fired=PLAN[:2]))
    assert statuses(checks)[0] == "FAIL"


V = audit.Version
HISTORY = [V(0, "STREAMING UPDATE", 0, "q"), V(1, "STREAMING UPDATE", 1, "q"), V(2, "STREAMING UPDATE", 2, "q")]


def test_audit_passes_the_history_read_right(checks):
    lab.check_audit(checks, lambda: [0, 1, 2], lambda: HISTORY, lambda: {1, 2})
    assert set(statuses(checks)) == {"PASS"}


@pytest.mark.parametrize("answer", [[2, 1, 0], ["0", "1", "2"], [0, 1, 2, 2]])  # newest first; strings; one twice
def test_audit_rejects_a_history_read_wrong(checks, answer):
    lab.check_audit(checks, lambda: answer, lambda: HISTORY, lambda: {1, 2})
    assert statuses(checks)[1] == "FAIL"


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
