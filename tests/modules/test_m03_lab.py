"""Lab 03's checks accept the right answers and reject planted wrong ones.

Exercises 1, 2 and 4 are checked against planted values (no broker). Exercise 3's check reads
the result of a real restart experiment: it is tested with planted results here, and, in the
``stack`` test at the end, with real queries written the right way and three wrong ways.
"""
from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks
from deliverylab.modules.m03 import lab

PRODUCED = [{"order_id": f"o-{n:06d}", "amount": f"{10 + n}.25"} for n in range(10)]
DOWN = PRODUCED[4:7]                     # produced while the pipeline was down
EVERY_ROW = [(o["order_id"], o["amount"]) for o in PRODUCED]
AT_MOST_ONCE_ROWS = [r for r in EVERY_ROW if r[0] not in {o["order_id"] for o in DOWN}]


def fake_pipe(variant="at_most_once", crashes=1, starts=2):
    return SimpleNamespace(variant=SimpleNamespace(name=variant), crashes=[object()] * crashes, starts=starts)


def statuses(checks):
    return {r.description: r.status for r in checks.results}


@pytest.fixture
def checks():
    return Checks("03-at-most-once-lab", record=False)


# --------------------------------------------------------------------------- exercise 1


def test_exercise_1_right_answer(checks):
    amo = ledger.reconcile(PRODUCED, AT_MOST_ONCE_ROWS)
    lab.check_loss_while_down(checks, lambda: fake_pipe(), lambda: DOWN, lambda: amo)
    assert set(statuses(checks).values()) == {"PASS"}


def test_exercise_1_rejects_a_restart_before_producing(checks):
    # planted: produced after the restart, so the new query read them: nothing lost
    lab.check_loss_while_down(checks, lambda: fake_pipe(), lambda: DOWN,
                              lambda: ledger.reconcile(PRODUCED, EVERY_ROW))
    assert statuses(checks)["exactly the orders produced while it was down are lost"] == "FAIL"


def test_exercise_1_rejects_the_at_least_once_pipeline(checks):
    replayed = EVERY_ROW + EVERY_ROW[:2]
    lab.check_loss_while_down(checks, lambda: fake_pipe("at_least_once"), lambda: DOWN,
                              lambda: ledger.reconcile(PRODUCED, replayed))
    got = statuses(checks)
    assert got["the pipeline is the at_most_once variant"] == "FAIL"
    assert got["exactly the orders produced while it was down are lost"] == "FAIL"
    assert got["nothing was written twice"] == "FAIL"


def test_exercise_1_rejects_a_crash_that_lost_more_than_the_downtime(checks):
    # planted: a before_sink_write crash also loses the batch in flight
    amo = ledger.reconcile(PRODUCED, AT_MOST_ONCE_ROWS[:-1])
    lab.check_loss_while_down(checks, lambda: fake_pipe(), lambda: DOWN, lambda: amo)
    assert statuses(checks)["exactly the orders produced while it was down are lost"] == "FAIL"


def test_exercise_1_skips_until_done_and_needs_a_crash(checks):
    lab.check_loss_while_down(checks, lambda: fake_pipe(crashes=0, starts=1), lambda: undefined, lambda: undefined)  # noqa: F821
    got = statuses(checks)
    assert got["amo is a ledger"] == "SKIP" and got["the pipeline was crashed, then restarted"] == "SKIP"
    amo = ledger.reconcile(PRODUCED, AT_MOST_ONCE_ROWS)
    lab.check_loss_while_down(checks, lambda: fake_pipe(crashes=0, starts=1), lambda: DOWN, lambda: amo)
    assert statuses(checks)["the pipeline was crashed, then restarted"] == "FAIL"


# --------------------------------------------------------------------------- exercise 2

LOST = {o["order_id"] for o in DOWN}
WORTH = sum(Decimal(o["amount"]) for o in DOWN)


def test_exercise_2_right_answers_as_decimal_and_float(checks):
    for missing in (WORTH, float(WORTH)):
        lab.check_missing_revenue(checks, lambda: LOST, lambda: missing, lambda: PRODUCED, lambda: AT_MOST_ONCE_ROWS)
        assert set(statuses(checks).values()) == {"PASS"}


def test_exercise_2_rejects_the_subtraction_the_wrong_way_round(checks):
    sink_minus_produced = {r[0] for r in AT_MOST_ONCE_ROWS} - {o["order_id"] for o in PRODUCED}
    lab.check_missing_revenue(checks, lambda: sink_minus_produced, lambda: -WORTH, lambda: PRODUCED,
                              lambda: AT_MOST_ONCE_ROWS)
    assert set(statuses(checks).values()) == {"FAIL"}


def test_exercise_2_rejects_a_count_for_an_amount_and_the_sinks_ids(checks):
    in_sink = {r[0] for r in AT_MOST_ONCE_ROWS}
    lab.check_missing_revenue(checks, lambda: in_sink, lambda: len(LOST), lambda: PRODUCED, lambda: AT_MOST_ONCE_ROWS)
    assert set(statuses(checks).values()) == {"FAIL"}


# --------------------------------------------------------------------------- exercise 3


def result(lost=0, duplicated=0, used_checkpoint=True):
    rows = EVERY_ROW[lost:] + EVERY_ROW[lost:lost + duplicated]
    return lab.RestartResult(ledger.reconcile(PRODUCED, rows), [o["order_id"] for o in DOWN], used_checkpoint)


def right_query(topic, checkpoint_dir, keep):
    return None


def test_exercise_3_right_answer(checks):
    lab.check_keeps_place(checks, lambda: right_query, lambda f: result())
    assert set(statuses(checks).values()) == {"PASS"}


def test_exercise_3_rejects_no_checkpoint_with_latest_and_with_earliest(checks):
    lab.check_keeps_place(checks, lambda: right_query, lambda f: result(lost=3, used_checkpoint=False))
    got = statuses(checks)
    assert got["its query keeps its progress in checkpoint_dir"] == "FAIL"
    assert got["no order produced while it was stopped is lost"] == "FAIL"
    lab.check_keeps_place(checks, lambda: right_query, lambda f: result(duplicated=6, used_checkpoint=False))
    got = statuses(checks)
    assert got["its query keeps its progress in checkpoint_dir"] == "FAIL"
    assert got["no order is delivered twice"] == "FAIL"


def test_exercise_3_rejects_a_wrong_signature_and_runs_the_experiment_once(checks):
    runs = []
    lab.check_keeps_place(checks, lambda: lambda topic, keep: None, lambda f: runs.append(f) or result())
    got = statuses(checks)
    assert got["start_query takes (topic, checkpoint_dir, keep)"] == "FAIL"
    assert {got[k] for k in got if k != "start_query takes (topic, checkpoint_dir, keep)"} == {"SKIP"}
    lab.check_keeps_place(checks, lambda: right_query, lambda f: runs.append(f) or result())
    assert runs == [right_query]


# --------------------------------------------------------------------------- exercise 4


def test_exercise_4_right_answer(checks):
    lab.check_acceptable(checks, lambda: {"freezer_screen", "click_heatmap"})
    assert set(statuses(checks).values()) == {"PASS"}


@pytest.mark.parametrize("answer, failing", [
    (set(lab.USE_CASES), "no use case that can never lose a record is in it"),
    (set(), "every use case that can afford a loss is in it"),
    ({"freezer_screen", "card_payments"}, "no use case that can never lose a record is in it"),
    ({"freezer_screen", "click-heatmap"}, "acceptable is a set of use-case names"),
    ("freezer_screen", "acceptable is a set of use-case names"),
])
def test_exercise_4_rejects_planted_answers(checks, answer, failing):
    lab.check_acceptable(checks, lambda: answer)
    assert statuses(checks)[failing] == "FAIL"
