"""Lab 05's checks accept the right answers and reject planted wrong ones (no broker needed)."""
import signal
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks
from deliverylab.crashlab.pipeline import Crash
from deliverylab.modules.m05 import lab, merges

PRODUCED = [(f"o-{n}", "10.00") for n in range(8)]


def pipe(delivered, failure=None):
    return SimpleNamespace(ledger=lambda: ledger.reconcile(PRODUCED, delivered), failure=failure)


EXACTLY_ONCE = pipe(PRODUCED)
DUPLICATED = pipe(PRODUCED + PRODUCED[4:])       # a plain append: the replay wrote batch 2 again
LOST = pipe(PRODUCED[:4])                       # the same app id after a new checkpoint: writes skipped


def crash(point):
    return Crash(point, 2, -signal.SIGKILL, 1)


@pytest.fixture
def checks():
    return Checks("05-exactly-once-sinks-lab", record=False)


def statuses(checks):
    return [r.status for r in checks.results]


def test_exercise_1_passes_an_idempotent_writer(checks):
    lab.check_idempotent_writer(checks, lambda: EXACTLY_ONCE, lambda: crash("after_sink_write"))
    assert set(statuses(checks)) == {"PASS"}


@pytest.mark.parametrize("planted", [DUPLICATED, LOST])
def test_exercise_1_rejects_a_plain_append_and_a_writer_that_skips(checks, planted):
    lab.check_idempotent_writer(checks, lambda: planted, lambda: crash("after_sink_write"))
    assert "FAIL" in statuses(checks)


def test_exercise_1_rejects_a_run_crashed_elsewhere(checks):
    lab.check_idempotent_writer(checks, lambda: EXACTLY_ONCE, lambda: crash("after_commit"))
    assert statuses(checks)[:2] == ["PASS", "FAIL"]


RIGHT = dict(after_one={"o-1": 1, "o-2": 1}, after_replay={"o-1": 1, "o-2": 1}, unchanged=True,
             statuses={"o-1": "paid", "o-2": "placed"})


def run_merge_checks(checks, **changes):
    trial = merges.MergeTrial(**{**RIGHT, **changes})
    lab.check_safe_merge(checks, lambda: trial)
    return dict(zip([r.description for r in checks.results], statuses(checks)))


def test_exercise_2_passes_a_safe_merge(checks):
    assert set(run_merge_checks(checks).values()) == {"PASS"}


def test_exercise_2_rejects_a_merge_without_dedup(checks):
    got = run_merge_checks(checks, after_one={"o-1": 2, "o-2": 1})  # both events of o-1 inserted
    assert got["one row per order after the first MERGE"] == "FAIL"


def test_exercise_2_rejects_a_clock_column_and_the_earliest_event(checks):
    got = run_merge_checks(checks, unchanged=False, statuses={"o-1": "placed", "o-2": "placed"})
    assert got["the replay changes nothing"] == "FAIL"
    assert got["each order keeps its latest event"] == "FAIL"


def test_exercise_2_says_skip_while_the_merge_is_a_todo(checks):
    from deliverylab.checks import todo

    lab.check_safe_merge(checks, lambda: todo("merge"))
    assert set(statuses(checks)) == {"SKIP"}


def test_exercise_2_turns_a_refused_replay_into_a_fail_with_a_hint(checks):
    trial = merges.MergeTrial(after_one={"o-1": 2, "o-2": 1},
                              error="on the replay: DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE")
    lab.check_safe_merge(checks, lambda: trial)
    assert statuses(checks) == ["FAIL", "SKIP", "SKIP", "SKIP"]
    assert any("hint:" in line and "one order_id" in line for line in checks.results[0].lines)


def test_a_pipeline_that_failed_gets_one_fail_line_and_no_verdict(checks):
    failed = pipe(PRODUCED[:4], failure="sqlite3.IntegrityError: UNIQUE constraint failed: orders.order_id")
    lab.check_atomic_upsert(checks, lambda: failed, lambda: crash("mid_sink_write"))
    assert statuses(checks) == ["FAIL", "SKIP", "SKIP", "SKIP"]
    assert any("found:" in line and "sqlite3.IntegrityError" in line for line in checks.results[0].lines)


@pytest.mark.parametrize("message,line", [
    ("Pipeline 'w' stopped with an error (exit 1):\n[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in "
     "the user provided function in foreach batch sink.\nsqlite3.IntegrityError: UNIQUE constraint failed: "
     "orders.order_id\norg.apache.spark.SparkException: job aborted", "sqlite3.IntegrityError: UNIQUE constraint "
     "failed: orders.order_id"),
    ("Pipeline 'w' runs batches but writes nothing to its checkpoint folder (out.checkpoint).",
     "Pipeline 'w' runs batches but writes nothing to its checkpoint folder (out.checkpoint)."),
])
def test_a_failed_pipelines_message_becomes_one_line(message, line):
    from deliverylab.crashlab.record import failure_line

    assert failure_line(message) == line


def test_exercise_3_accepts_an_atomic_upsert_and_rejects_a_row_by_row_append(checks):
    lab.check_atomic_upsert(checks, lambda: EXACTLY_ONCE, lambda: crash("mid_sink_write"))
    assert set(statuses(checks)) == {"PASS"}
    lab.check_atomic_upsert(checks, lambda: DUPLICATED, lambda: crash("mid_sink_write"))
    assert "FAIL" in statuses(checks)
