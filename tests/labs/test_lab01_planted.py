"""Lab 01 with planted answers on real consumers (make test-labs): real Kafka consumer processes, killed with
SIGKILL by the lab's own crash_and_recover, on the run shown and on a hidden run (another crash batch and batch
size; for exercise 2 a hidden sink with orders in three rows). Right answers written differently pass; each wrong
one, of the four kinds (copied from a printout, right only on the demo's data, a probe missing, a race), ends in
FAIL with a hint."""
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


@pytest.fixture(scope="module")
def crash_and_recover(lesson):
    return lambda name, **options: m01.crash_and_recover(name, lesson, **options)


def fresh_checks():
    return Checks("01-three-guarantees-lab", record=False)


def test_exercise_1_right_and_planted_runs(lesson, report, crash_and_recover):
    spelt_out = m01.crash_and_recover("write_then_commit", lesson, crash_batch=2, crash="between_steps")
    for right in (report, spelt_out):
        checks = fresh_checks()
        lab.check_crash_report(checks, lambda: right, lambda: right.ledger, crash_and_recover)
        assert_all_pass(checks)
    planted = {
        "the report given for the ledger": (report, report),
        "the at-most-once consumer crashed": (m01.crash_and_recover("commit_then_write", lesson),) * 2,
        "crashed after both steps": (m01.crash_and_recover("write_then_commit", lesson, crash="after_batch"),) * 2,
    }
    for name, (given, ledger_given) in planted.items():
        checks = fresh_checks()
        ledger = ledger_given if name == "the report given for the ledger" else ledger_given.ledger
        lab.check_crash_report(checks, lambda: given, lambda: ledger, crash_and_recover)
        assert_fails_with_a_hint(checks), name


def test_exercise_2_right_and_planted_functions(report):
    alo = report.ledger
    assert alo.duplicated > 0 and alo.extra_copies == alo.duplicated  # the run shown: each duplicate twice
    rights = {
        "the ledger's lines": lambda L: (L.duplicated, L.revenue_observed - L.revenue_expected),
        "ids and a float": lambda L: (len(L.duplicated_ids), float(L.revenue_difference)),
    }
    for name, cost in rights.items():
        checks = fresh_checks()
        lab.check_duplicate_cost(checks, lambda: cost, lambda: report)
        assert_all_pass(checks)
    shown = (alo.duplicated, alo.revenue_observed - alo.revenue_expected)
    planted = {
        "numbers copied from the printout": lambda L: shown,  # kind 1
        "extra copies for twice": lambda L: (L.extra_copies, L.revenue_difference),  # kind 2: right on two rows only
        "rows minus orders": lambda L: (L.delivered_rows - L.produced, L.revenue_difference),  # kind 2
        "the orders delivered once": lambda L: (L.delivered_once, L.revenue_difference),
        "subtracted the other way": lambda L: (L.duplicated, L.revenue_expected - L.revenue_observed),
        "a number, not a function": shown,
    }
    for name, cost in planted.items():
        checks = fresh_checks()
        lab.check_duplicate_cost(checks, lambda: cost, lambda: report)
        assert_fails_with_a_hint(checks), name


def test_exercise_3_right_and_planted_choices(crash_and_recover):
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
