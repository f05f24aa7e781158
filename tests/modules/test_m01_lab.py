"""Lab 01's checks accept right answers written several ways and reject planted wrong ones, on the run shown and
on hidden runs (no broker needed: reports and ledgers are made here)."""
from decimal import Decimal
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks, hidden
from deliverylab.modules.m01 import lab
from seeds import seed_fixture

PRODUCED = [(f"o-{n}", "10.00") for n in range(6)]


def report(variant, rows):
    return SimpleNamespace(variant=variant, rows=ledger.normalise_rows(rows),
                           ledger=ledger.reconcile(PRODUCED, rows, label=variant))


#: The run shown in the lab: every duplicated order twice, as one replay gives.
AT_LEAST_ONCE = report("write_then_commit", PRODUCED + PRODUCED[4:])
AT_MOST_ONCE = report("commit_then_write", PRODUCED[:4])


def statuses(checks):
    return {r.description: r.status for r in checks.results}


seed = seed_fixture()


def fresh():
    return Checks("01-three-guarantees-lab", record=False)


def consumers(verdicts: dict):
    """A stand-in for m01.crash_and_recover: each variant's ledger, whatever crash it is given."""
    def crash_and_recover(name, **options):
        assert set(options) <= {"crash_batch", "batch_size"}
        return {"write_then_commit": AT_LEAST_ONCE, "commit_then_write": AT_MOST_ONCE}.get(name) or \
            SimpleNamespace(ledger=SimpleNamespace(verdict=verdicts[name], verdict_line=lambda: f"verdict: {verdicts[name]}"))
    return crash_and_recover


# --------------------------------------------------------------------------- exercise 1


def test_exercise_1_right_answer_passes_on_the_hidden_crash_too(seed):
    checks = fresh()
    lab.check_crash_report(checks, lambda: AT_LEAST_ONCE, lambda: AT_LEAST_ONCE.ledger, consumers({}))
    assert set(statuses(checks).values()) == {"PASS"}


def test_exercise_1_rejects_the_report_for_the_ledger_and_the_wrong_consumer():
    checks = fresh()
    lab.check_crash_report(checks, lambda: AT_LEAST_ONCE, lambda: AT_LEAST_ONCE, consumers({}))
    got = statuses(checks)
    assert got["alo is a ledger"] == "FAIL" and got["no order was lost"] == "SKIP"
    checks = fresh()
    lab.check_crash_report(checks, lambda: AT_MOST_ONCE, lambda: AT_MOST_ONCE.ledger, consumers({}))
    got = statuses(checks)
    assert got["the consumer that crashed was write_then_commit"] == "FAIL" and got["no order was lost"] == "SKIP"


# --------------------------------------------------------------------------- exercise 2

RIGHT_COSTS = {
    "the ledger's two lines": lambda L: (L.duplicated, L.revenue_observed - L.revenue_expected),
    "ids counted, the difference as a float": lambda L: (len(L.duplicated_ids), float(L.revenue_difference)),
    "a list, the difference as text": lambda L: [L.duplicated, str(L.revenue_observed - L.revenue_expected)],
}
SHOWN = AT_LEAST_ONCE.ledger
#: Wrong answers of the four kinds: copied from the printout, right only on the demo's data (every duplicate
#: twice), and plain mistakes a learner makes.
WRONG_COSTS = {
    "both numbers copied from the run above": (lambda L: (2, Decimal("20.00")), "a hidden run"),
    "extra copies (right only when each duplicate has two rows)": (
        lambda L: (L.extra_copies, L.revenue_difference), "a hidden run"),
    "rows in the sink minus orders produced": (lambda L: (L.delivered_rows - L.produced, L.revenue_difference),
                                               "a hidden run"),
    "twice from the run above, inflation computed": (lambda L: (SHOWN.duplicated, L.revenue_difference), "a hidden run"),
    "the orders delivered once": (lambda L: (L.delivered_once, L.revenue_difference), "the run above"),
    "subtracted the other way": (lambda L: (L.duplicated, L.revenue_expected - L.revenue_observed), "the run above"),
    "the observed revenue itself": (lambda L: (L.duplicated, L.revenue_observed), "the run above"),
}


@pytest.mark.parametrize("name", RIGHT_COSTS)
def test_exercise_2_right_answers_written_differently_pass(name, seed):
    checks = fresh()
    lab.check_duplicate_cost(checks, lambda: RIGHT_COSTS[name], lambda: AT_LEAST_ONCE)
    assert set(statuses(checks).values()) == {"PASS"}, checks.results


@pytest.mark.parametrize("name", WRONG_COSTS)
def test_exercise_2_wrong_answers_fail_where_they_go_wrong(name, seed, capsys):
    cost, where = WRONG_COSTS[name]
    checks = fresh()
    lab.check_duplicate_cost(checks, lambda: cost, lambda: AT_LEAST_ONCE)
    failed = [r for r in checks.results if r.status == "FAIL"]
    assert failed, name
    text = "\n".join(failed[0].lines)
    assert f"on:       {where}" in text and "hint:" in text
    if where == "a hidden run":
        assert f"seed {seed}" in text and hidden.COPIED in text


def test_exercise_2_wants_a_function_and_the_two_figures():
    checks = fresh()
    lab.check_duplicate_cost(checks, lambda: (2, Decimal("20.00")), lambda: AT_LEAST_ONCE)
    assert statuses(checks)["duplicate_cost is a function of a ledger"] == "FAIL"
    checks = fresh()
    lab.check_duplicate_cost(checks, lambda: (lambda L: L.duplicated), lambda: AT_LEAST_ONCE)
    assert "return the two figures" in "\n".join(checks.results[1].lines)


def test_exercise_2_hidden_sinks_separate_rows_from_orders_for_every_seed():
    import random

    for seed in range(300):
        sink = lab.hidden_sink(random.Random(seed)).ledger
        assert sink.lost == 0 < sink.duplicated < sink.extra_copies, seed


# --------------------------------------------------------------------------- exercise 3


def test_exercise_3_right_choices_pass_and_an_unsafe_or_unknown_one_fails(seed):
    verdicts = {"offsets_with_data": "exactly-once", "upsert_by_id": "exactly-once"}
    for safe in verdicts:
        checks = fresh()
        lab.check_payments_variant(checks, lambda: safe, consumers(verdicts))
        assert set(statuses(checks).values()) == {"PASS"}, safe
    checks = fresh()
    lab.check_payments_variant(checks, lambda: "write_then_commit", consumers(verdicts))
    assert statuses(checks)["the payments consumer survives a crash with nothing lost or duplicated"] == "FAIL"
    checks = fresh()
    lab.check_payments_variant(checks, lambda: "exactly_once", consumers(verdicts))
    got = statuses(checks)
    assert got["payments_variant names a consumer variant"] == "FAIL"
    assert got["the payments consumer survives a crash with nothing lost or duplicated"] == "SKIP"


def test_exercise_3_crashes_the_choice_where_the_learner_has_not_looked(monkeypatch):
    monkeypatch.setenv(hidden.SEED_ENV, "4711")
    asked = []

    def crash_and_recover(name, **options):
        asked.append(options)
        return SimpleNamespace(ledger=SimpleNamespace(verdict="at-least-once", verdict_line=lambda: "verdict: at-least-once"))

    checks = fresh()
    lab.check_payments_variant(checks, lambda: "upsert_by_id", crash_and_recover)
    failed = checks.results[-1]
    assert failed.status == "FAIL" and failed.lines[1].startswith("  on:       a hidden run (seed 4711")
    assert asked == [lab.hidden_crash(__import__("random").Random(4711))]  # one run, at the hidden crash
