"""Lab 01's checks accept the right answers and reject planted wrong ones (no broker needed)."""
from decimal import Decimal
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks
from deliverylab.modules.m01 import lab

PRODUCED = [(f"o-{n}", "10.00") for n in range(6)]


def report(variant, rows):
    return SimpleNamespace(variant=variant, rows=ledger.normalise_rows(rows),
                           ledger=ledger.reconcile(PRODUCED, rows, label=variant))


AT_LEAST_ONCE = report("write_then_commit", PRODUCED + PRODUCED[4:] + PRODUCED[5:])  # o-5 three times
AT_MOST_ONCE = report("commit_then_write", PRODUCED[:4])


def statuses(checks):
    return {r.description: r.status for r in checks.results}


@pytest.fixture
def checks():
    return Checks("01-three-guarantees-lab", record=False)


def test_exercise_1_right_answer(checks):
    lab.check_crash_report(checks, lambda: AT_LEAST_ONCE, lambda: AT_LEAST_ONCE.ledger)
    assert set(statuses(checks).values()) == {"PASS"}


def test_exercise_1_rejects_the_report_given_for_the_ledger(checks):
    lab.check_crash_report(checks, lambda: AT_LEAST_ONCE, lambda: AT_LEAST_ONCE)
    assert statuses(checks)["alo is a ledger"] == "FAIL"


def test_exercise_1_rejects_the_wrong_consumer(checks):
    lab.check_crash_report(checks, lambda: AT_MOST_ONCE, lambda: AT_MOST_ONCE.ledger)
    got = statuses(checks)
    assert got["the consumer that crashed was write_then_commit"] == "FAIL"
    assert got["no order was lost"] == "FAIL" and got["some orders were written twice"] == "FAIL"


def test_exercise_2_right_and_wrong(checks, capsys):
    led = AT_LEAST_ONCE.ledger
    lab.check_duplicate_cost(checks, lambda: AT_LEAST_ONCE, lambda: led.duplicated,
                             lambda: led.revenue_observed - led.revenue_expected)
    assert set(statuses(checks).values()) == {"PASS"}
    # planted: rows beyond the first (extra copies) instead of ids, and the subtraction reversed
    lab.check_duplicate_cost(checks, lambda: AT_LEAST_ONCE, lambda: led.extra_copies,
                             lambda: led.revenue_expected - led.revenue_observed)
    assert set(statuses(checks).values()) == {"FAIL"}
    assert led.extra_copies != led.duplicated and led.revenue_observed - led.revenue_expected == Decimal("30.00")
    reversed_line = [line for r in checks.results for line in r.lines if "found:" in line][-1]
    assert "the wrong sign" in reversed_line


def test_exercise_2_takes_the_amount_as_a_float_as_lab_03_does(checks):
    led = AT_LEAST_ONCE.ledger
    lab.check_duplicate_cost(checks, lambda: AT_LEAST_ONCE, lambda: led.duplicated,
                             lambda: float(led.revenue_observed) - float(led.revenue_expected))
    assert set(statuses(checks).values()) == {"PASS"}
    lab.check_duplicate_cost(checks, lambda: AT_LEAST_ONCE, lambda: led.duplicated, lambda: "30 dollars")
    assert statuses(checks)["inflation is the value of the extra copies"] == "FAIL"


def test_exercise_3_rejects_an_unsafe_and_an_unknown_variant(checks):
    verdicts = {"offsets_with_data": "exactly-once", "write_then_commit": "at-least-once"}

    def crash_and_recover(name):
        return SimpleNamespace(ledger=SimpleNamespace(verdict=verdicts[name]))

    lab.check_payments_variant(checks, lambda: "offsets_with_data", crash_and_recover)
    assert set(statuses(checks).values()) == {"PASS"}
    lab.check_payments_variant(checks, lambda: "write_then_commit", crash_and_recover)
    assert statuses(checks)["the payments consumer survives a crash with nothing lost or duplicated"] == "FAIL"
    lab.check_payments_variant(checks, lambda: "exactly_once", crash_and_recover)
    got = statuses(checks)
    assert got["payments_variant names a consumer variant"] == "FAIL"
    assert got["the payments consumer survives a crash with nothing lost or duplicated"] == "SKIP"
