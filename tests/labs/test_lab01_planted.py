"""Lab 01 with planted wrong answers on real consumers (make test-labs): real Kafka consumer processes,
killed with SIGKILL by the lab's own crash_and_recover. Each wrong answer ends in FAIL with a hint;
the lab's answer passes."""
from __future__ import annotations

import pytest
from planted import assert_all_pass, assert_fails_with_a_hint, outcome

from deliverylab.checks import Checks
from deliverylab.modules import m01
from deliverylab.modules.m01 import lab

pytestmark = [pytest.mark.stack, pytest.mark.labs]


@pytest.fixture(scope="module")
def report(lesson):
    return m01.crash_and_recover("write_then_commit", lesson)


def fresh_checks():
    return Checks("01-three-guarantees-lab", record=False)


def test_exercise_1_right_and_planted_runs(lesson, report):
    checks = fresh_checks()
    lab.check_crash_report(checks, lambda: report, lambda: report.ledger)
    assert_all_pass(checks)
    planted = {
        "the report given for the ledger": (report, report),
        "the at-most-once consumer crashed": (m01.crash_and_recover("commit_then_write", lesson),) * 2,
        "crashed after both steps": (m01.crash_and_recover("write_then_commit", lesson, crash="after_batch"),) * 2,
    }
    for name, (given, ledger_given) in planted.items():
        checks = fresh_checks()
        ledger = ledger_given if name == "the report given for the ledger" else ledger_given.ledger
        lab.check_crash_report(checks, lambda: given, lambda: ledger)
        assert_fails_with_a_hint(checks), name


def test_exercise_2_right_and_planted_figures(report):
    alo = report.ledger
    assert alo.duplicated > 0
    right = (alo.duplicated, alo.revenue_observed - alo.revenue_expected)
    # right by value here, and the lab says why: one replay gives each duplicated order exactly one extra copy
    assert alo.extra_copies == alo.duplicated
    for twice, inflation in (right, (right[0], float(right[1])), (alo.extra_copies, right[1])):
        checks = fresh_checks()
        lab.check_duplicate_cost(checks, lambda: report, lambda: twice, lambda: inflation)
        assert_all_pass(checks)
    planted = {
        "the orders delivered once": (alo.delivered_once, right[1]),
        "all rows in the sink": (alo.delivered_rows, right[1]),
        "subtracted the other way": (right[0], alo.revenue_expected - alo.revenue_observed),
        "the observed revenue itself": (right[0], alo.revenue_observed),
    }
    for name, (twice, inflation) in planted.items():
        checks = fresh_checks()
        lab.check_duplicate_cost(checks, lambda: report, lambda: twice, lambda: inflation)
        assert_fails_with_a_hint(checks), name


def test_exercise_3_right_and_planted_choices(lesson):
    def crash_and_recover(name):
        return m01.crash_and_recover(name, lesson)

    for safe in ("offsets_with_data", "upsert_by_id"):
        checks = fresh_checks()
        lab.check_payments_variant(checks, lambda: safe, crash_and_recover)
        assert_all_pass(checks)
    for wrong in ("write_then_commit", "commit_then_write", "offsets-with-data", m01.VARIANTS["offsets_with_data"]):
        checks = fresh_checks()
        lab.check_payments_variant(checks, lambda: wrong, crash_and_recover)
        statuses = assert_fails_with_a_hint(checks)
        if not isinstance(wrong, str) or "-" in wrong:
            assert "itself, not its name" in "\n".join(checks.results[0].lines) or "-" in str(wrong), statuses
    assert outcome(checks)["payments_variant names a consumer variant"] == "FAIL"
