"""Lab 07's checks accept the right answers and reject planted wrong ones (no broker needed)."""
import signal
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks, todo
from deliverylab.crashlab.pipeline import Crash
from deliverylab.modules.m07 import lab
from deliverylab.modules.m07.notifications import summarise
from deliverylab.modules.m07.quarantine import Routed, poison_lines

PRODUCED = [(f"o-{n}", "10.00") for n in range(8)]
EXACT_TABLE = SimpleNamespace(failure=None, ledger=lambda: ledger.reconcile(PRODUCED, PRODUCED))
DUPLICATED_TABLE = SimpleNamespace(failure=None, ledger=lambda: ledger.reconcile(PRODUCED, PRODUCED + PRODUCED[4:]))
FAILED = SimpleNamespace(failure="NameError: name 'sqlite' is not defined", ledger=lambda: 1 / 0)

ONCE = [("q", 0, 0), ("q", 1, 4), ("q", 2, 4)]                    # the crashed batch 2 notified once
TWICE = ONCE + [("-", 2, 4)]                                      # a plain append: batch 2 notified again
TWICE = [("-", b, n) for _, b, n in TWICE]
NEVER = [("q", 0, 0)]                                             # notifies only the empty batch 0
AFTER_RESTART_ONLY_KEYED_BY_RUN = [("q", 0, 0), ("q", 1, 4), ("run1", 2, 4), ("run2", 2, 4)]  # a key that changes per run


def crash(point="after_sink_write"):
    return Crash(point, 2, -signal.SIGKILL, 1)


@pytest.fixture
def checks():
    return Checks("07-what-breaks-lab", record=False)


def statuses(checks):
    return dict(zip([r.description for r in checks.results], [r.status for r in checks.results]))


def run_notifier(checks, sent, table=EXACT_TABLE, point="after_sink_write"):
    lab.check_notifier(checks, lambda: table, lambda: crash(point), lambda: summarise(sent, len(PRODUCED)))
    return statuses(checks)


def test_exercise_1_passes_a_keyed_notification(checks):
    assert set(run_notifier(checks, ONCE).values()) == {"PASS"}


@pytest.mark.parametrize("planted", [TWICE, NEVER, AFTER_RESTART_ONLY_KEYED_BY_RUN])
def test_exercise_1_rejects_repeated_or_missing_notifications(checks, planted):
    assert "FAIL" in run_notifier(checks, planted).values()


def test_exercise_1_rejects_a_table_written_twice_and_a_run_crashed_elsewhere(checks):
    got = run_notifier(checks, ONCE, table=DUPLICATED_TABLE)
    assert got["the orders table: every order exactly once"] == "FAIL"
    checks.results.clear()
    got = run_notifier(checks, ONCE, point="after_commit")
    assert got["the crash hit your writer after its write, before the commit"] == "FAIL"


def test_exercise_1_a_failed_pipeline_is_one_fail_line_and_the_rest_skip(checks):
    got = run_notifier(checks, ONCE, table=FAILED)
    assert got.pop("your pipeline ran through the crash and the redeploy") == "FAIL"
    assert set(got.values()) == {"SKIP"}
    assert "NameError: name 'sqlite' is not defined" in "\n".join(checks.results[0].lines)


def test_exercise_1_says_skip_while_the_notifier_is_a_todo(checks):
    lab.check_notifier(checks, lambda: todo("notifier"), lambda: todo("notifier"), lambda: todo("notifier"))
    assert set(statuses(checks).values()) == {"SKIP"}


BAD = [(line, "why") for line in poison_lines() if not line.startswith('{"amount"')]
RIGHT = Routed(produced=26, good_ids=list(lab.GOOD_IDS), quarantined=BAD)


def run_quarantine(checks, routed):
    lab.check_quarantine(checks, lambda: routed)
    return statuses(checks)


def test_the_file_has_twenty_good_orders_and_six_bad_records():
    assert len(BAD) == 6 and len(poison_lines()) == 26


def test_exercise_2_passes_a_full_quarantine(checks):
    assert set(run_quarantine(checks, RIGHT).values()) == {"PASS"}


def test_exercise_2_rejects_a_filter_that_drops_bad_records(checks):
    got = run_quarantine(checks, Routed(produced=26, good_ids=list(lab.GOOD_IDS), quarantined=[]))
    assert got["produced = good + quarantined"] == "FAIL"
    assert got["records quarantined"] == "FAIL"


def test_exercise_2_rejects_a_failfast_parser(checks):
    got = run_quarantine(checks, Routed(produced=26, error="Malformed records are detected in record parsing."))
    assert got["the stream ran to the end"] == "FAIL"


def test_exercise_2_rejects_a_classifier_that_lets_a_bad_amount_through(checks):
    forty = [row for row in BAD if "forty" in row[0]][0]
    routed = Routed(produced=26, good_ids=list(lab.GOOD_IDS) + ["o-900004"], quarantined=[r for r in BAD if r != forty])
    got = run_quarantine(checks, routed)
    assert got["the good orders, and only them"] == "FAIL"
    assert got["records quarantined"] == "FAIL"


def test_exercise_2_rejects_quarantine_rows_without_raw_value_or_reason(checks):
    routed = Routed(produced=26, good_ids=list(lab.GOOD_IDS), quarantined=[(None, "why")] + BAD[1:])
    assert run_quarantine(checks, routed)["each quarantined record keeps its raw value and a reason"] == "FAIL"
    checks.results.clear()
    routed = Routed(produced=26, good_ids=list(lab.GOOD_IDS), quarantined=[(raw, None) for raw, _ in BAD])
    assert run_quarantine(checks, routed)["each quarantined record keeps its raw value and a reason"] == "FAIL"


def test_exercise_2_says_skip_while_the_classifier_is_a_todo(checks):
    lab.check_quarantine(checks, lambda: todo("classify"))
    assert set(statuses(checks).values()) == {"SKIP"}
