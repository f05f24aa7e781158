"""Lab 05's checks accept right answers and reject planted wrong ones, on the run shown and on hidden runs, over
several seeds (no broker: the runs are made up; the hidden MERGE cases are checked over many seeds with a MERGE
written in plain Python). tests/labs/test_lab05_planted.py plants answers for real."""
import random
import signal
from collections import Counter
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks
from deliverylab.crashlab.pipeline import Crash
from deliverylab.modules.m05 import hidden_runs, lab, merges
from seeds import seed_fixture

PRODUCED = [(f"o-{n}", "10.00") for n in range(8)]
SEEDS = [1001, 2718, 31415]


def pipe(delivered, failure=None, produced=PRODUCED):
    return SimpleNamespace(ledger=lambda: ledger.reconcile(produced, delivered), failure=failure)


EXACTLY_ONCE = pipe(PRODUCED)
DUPLICATED = pipe(PRODUCED + PRODUCED[4:])       # a plain append: the replay wrote batch 2 again
LOST = pipe(PRODUCED[:4])                       # the same app id after a new checkpoint: writes skipped
HIDDEN_PRODUCED = [(f"o-{n}", "10.00") for n in range(100, 150)]
HIDDEN_RIGHT = SimpleNamespace(pipe=pipe(HIDDEN_PRODUCED, produced=HIDDEN_PRODUCED), ledger=None)
HIDDEN_DUPLICATED = SimpleNamespace(pipe=pipe(HIDDEN_PRODUCED * 2, produced=HIDDEN_PRODUCED), ledger=None)
HIDDEN_FAILED = SimpleNamespace(pipe=pipe([], failure="sqlite3.IntegrityError: UNIQUE constraint failed: "
                                             "orders.order_id", produced=HIDDEN_PRODUCED), ledger=None)


def crash(point):
    return Crash(point, 2, -signal.SIGKILL, 1)


@pytest.fixture
def checks():
    return Checks("05-exactly-once-sinks-lab", record=False)


seed = seed_fixture(SEEDS)


def statuses(checks):
    return [r.status for r in checks.results]


def text(checks):
    return "\n".join(line for r in checks.results for line in r.lines)


def again(run, calls=None):
    def crash_again(p, point, rng):
        if calls is not None:
            calls.append(point)
        return SimpleNamespace(pipe=run.pipe, ledger=None)
    return crash_again


# --------------------------------------------------------------------------- exercises 1 and 3

@pytest.mark.parametrize("check, point", [(lab.check_idempotent_writer, "after_sink_write"),
                                          (lab.check_atomic_upsert, "mid_sink_write")])
def test_writers_pass_and_are_crashed_again_once_after_their_write(checks, seed, check, point):
    calls = []
    for _ in range(2):  # the check cell run twice: one hidden crash
        check(checks, lambda: EXACTLY_ONCE, lambda: crash(point), again(HIDDEN_RIGHT, calls))
    assert set(statuses(checks)) == {"PASS"} and calls == ["after_sink_write"]


@pytest.mark.parametrize("planted", [DUPLICATED, LOST])
def test_exercise_1_rejects_a_plain_append_and_a_writer_that_skips_without_a_second_crash(checks, seed, planted):
    calls = []
    lab.check_idempotent_writer(checks, lambda: planted, lambda: crash("after_sink_write"), again(HIDDEN_RIGHT, calls))
    assert "FAIL" in statuses(checks) and statuses(checks)[-1] == "SKIP" and calls == []


def test_exercise_1_a_writer_right_on_the_run_shown_fails_on_the_hidden_crash(checks, seed):
    """Kinds 1, 2 and 4: a row count typed in from the printout, a first write without the txn options, a rule
    that held because the crashed batch happened to hold every order: right above, duplicated in the first batch."""
    lab.check_idempotent_writer(checks, lambda: EXACTLY_ONCE, lambda: crash("after_sink_write"),
                                again(HIDDEN_DUPLICATED))
    assert statuses(checks) == ["PASS", "PASS", "PASS", "PASS", "FAIL"]
    assert f"seed {seed}" in text(checks) and "the first write too" in text(checks)


def test_exercise_1_rejects_a_run_crashed_elsewhere(checks, seed):
    lab.check_idempotent_writer(checks, lambda: EXACTLY_ONCE, lambda: crash("after_commit"), again(HIDDEN_RIGHT))
    assert statuses(checks)[:2] == ["PASS", "FAIL"]


def test_a_pipeline_that_failed_gets_one_fail_line_and_no_verdict(checks, seed):
    failed = pipe(PRODUCED[:4], failure="sqlite3.IntegrityError: UNIQUE constraint failed: orders.order_id")
    calls = []
    lab.check_atomic_upsert(checks, lambda: failed, lambda: crash("mid_sink_write"), again(HIDDEN_RIGHT, calls))
    assert statuses(checks) == ["FAIL", "SKIP", "SKIP", "SKIP", "SKIP"] and calls == []  # no second crash
    assert any("found:" in line and "sqlite3.IntegrityError" in line for line in checks.results[0].lines)


def test_exercise_3_a_transaction_without_a_key_fails_on_the_hidden_crash_after_its_commit(checks, seed):
    """Kind 3: the crash shown (mid-write) lacks the crash after the COMMIT that exercise 1 has."""
    lab.check_atomic_upsert(checks, lambda: EXACTLY_ONCE, lambda: crash("mid_sink_write"), again(HIDDEN_FAILED))
    assert statuses(checks) == ["PASS", "PASS", "PASS", "PASS", "FAIL"]
    last = "\n".join(checks.results[-1].lines)
    assert f"seed {seed}" in last and "stopped: sqlite3.IntegrityError" in last and "after your COMMIT" in last


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


def test_exercise_3_rejects_a_row_by_row_append(checks, seed):
    lab.check_atomic_upsert(checks, lambda: DUPLICATED, lambda: crash("mid_sink_write"), again(HIDDEN_RIGHT))
    assert "FAIL" in statuses(checks)


# --------------------------------------------------------------------------- exercise 2


def python_merge(key="order_id", dedupe=True, update=True, overwrite=False, newest=True):
    """A MERGE written in plain Python, behaving as Delta's: ``table`` is a list of rows, ``batch`` of events."""
    index = 0 if key == "order_id" else 1

    def merge(table, batch):
        rows = sorted(batch, key=lambda e: e[4], reverse=newest)
        if dedupe:
            kept = {}
            for e in rows:
                kept.setdefault(e[0], e)
            rows = list(kept.values())
        if overwrite:
            table[:] = rows
            return
        matches = {}
        for n, source in enumerate(rows):
            for t, row in enumerate(table):
                if row[index] == source[index]:
                    matches.setdefault(t, []).append(n)
        if update and any(len(hits) > 1 for hits in matches.values()):
            raise RuntimeError("DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE")
        matched = {n for hits in matches.values() for n in hits}
        new = list(table)
        if update:
            for t, hits in matches.items():
                new[t] = rows[hits[0]]
        table[:] = new + [row for n, row in enumerate(rows) if n not in matched]
    return merge


def fake_run_case(merge, replay=False):
    """As hidden_runs.run_merge_case: the MERGE once on the case (``replay``: twice, as on the run shown)."""
    def run(trial, case):
        table = list(case.target)
        result = merges.MergeTrial()
        try:
            merge(table, case.batch)
            result.after_one = dict(sorted(Counter(row[0] for row in table).items()))
            result.statuses = {row[0]: row[3] for row in table}
            if replay:
                before = list(table)
                merge(table, case.batch)
                result.after_replay = dict(sorted(Counter(row[0] for row in table).items()))
                result.unchanged = before == table
                result.statuses = {row[0]: row[3] for row in table}
        except RuntimeError as error:
            result.error = str(error)
        return result
    return run


RIGHT = dict(after_one={"o-1": 1, "o-2": 1}, after_replay={"o-1": 1, "o-2": 1}, unchanged=True,
             statuses={"o-1": "paid", "o-2": "placed"})


def run_merge_checks(checks, merge=python_merge(), **changes):
    trial = merges.MergeTrial(**{**RIGHT, **changes})
    lab.check_safe_merge(checks, lambda: trial, fake_run_case(merge))
    return dict(zip([r.description for r in checks.results], statuses(checks)))


def test_exercise_2_passes_a_safe_merge(checks, seed):
    assert set(run_merge_checks(checks).values()) == {"PASS"}


@pytest.mark.parametrize("merge, fails", [
    (python_merge(key="customer_id"), "your MERGE ran twice without an error"),     # kind 2: the named gap
    (python_merge(update=False), "each order keeps its latest event"),               # kind 2: insert only
    (python_merge(overwrite=True), "one row per order after the first MERGE"),       # kind 2: overwrite
])
def test_exercise_2_merges_right_only_on_an_empty_table_with_one_order_per_customer_fail_hidden(checks, seed, merge,
                                                                                                fails):
    got = run_merge_checks(checks, merge)  # the run shown passes: its MERGE matched the demo
    assert got[fails] == "FAIL", got
    assert f"seed {seed}" in text(checks) and "right on the run above" in text(checks)


def test_exercise_2_rejects_a_merge_without_dedup(checks, seed):
    got = run_merge_checks(checks, after_one={"o-1": 2, "o-2": 1})  # both events of o-1 inserted
    assert got["one row per order after the first MERGE"] == "FAIL"


def test_exercise_2_rejects_a_clock_column_and_the_earliest_event(checks, seed):
    got = run_merge_checks(checks, unchanged=False, statuses={"o-1": "placed", "o-2": "placed"})
    assert got["the replay changes nothing"] == "FAIL"
    assert got["each order keeps its latest event"] == "FAIL"


def test_exercise_2_the_hidden_case_runs_the_merge_once_and_the_replay_is_judged_on_the_run_shown(checks, seed):
    calls = []

    def run_once(trial, case):
        calls.append(case)
        return fake_run_case(python_merge())(trial, case)

    trial = merges.MergeTrial(**RIGHT)
    lab.check_safe_merge(checks, lambda: trial, run_once)
    assert set(statuses(checks)) == {"PASS"} and len(calls) == 1
    stamped = merges.MergeTrial(**{**RIGHT, "unchanged": False})
    lab.check_safe_merge(fresh := Checks("05-exactly-once-sinks-lab", record=False), lambda: stamped, run_once)
    assert dict(zip([r.description for r in fresh.results], statuses(fresh)))["the replay changes nothing"] == "FAIL"


def test_exercise_2_says_skip_while_the_merge_is_a_todo(checks):
    from deliverylab.checks import todo

    lab.check_safe_merge(checks, lambda: todo("merge"))
    assert set(statuses(checks)) == {"SKIP"}


def test_exercise_2_turns_a_refused_replay_into_a_fail_with_a_hint(checks, seed):
    trial = merges.MergeTrial(after_one={"o-1": 2, "o-2": 1},
                              error="on the replay: DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE")
    lab.check_safe_merge(checks, lambda: trial, fake_run_case(python_merge()))
    assert statuses(checks) == ["FAIL", "SKIP", "SKIP", "SKIP"]
    assert any("hint:" in line and "one per order_id" in line for line in checks.results[0].lines)


@pytest.mark.parametrize("seed", range(300))
def test_every_hidden_merge_case_separates_the_right_merge_from_the_demo_only_ones(seed):
    case = hidden_runs.merge_case(random.Random(seed))
    target_ids = {e[0] for e in case.target}
    batch_ids = {e[0] for e in case.batch}
    assert target_ids - batch_ids and target_ids & batch_ids  # an order left alone, an order moved on
    per_customer = Counter(c for c in {(e[0], e[1]) for e in case.batch} for c in [c[1]])
    assert max(per_customer.values()) >= 2
    assert len({e[4] for e in case.batch + case.target}) == len(case.batch + case.target)  # no ties in time
    runs = {name: fake_run_case(merge, replay=name == "right")(None, case) for name, merge in {
        "right": python_merge(), "customer": python_merge(key="customer_id"), "insert only": python_merge(
            update=False), "overwrite": python_merge(overwrite=True), "oldest": python_merge(newest=False)}.items()}
    right = runs.pop("right")
    assert right.error is None and right.statuses == case.expected and right.unchanged
    assert set(right.after_one.values()) == {1} and set(right.after_one) == set(case.expected)
    for name, wrong in runs.items():
        assert wrong.error or wrong.statuses != case.expected or wrong.after_one != dict.fromkeys(
            sorted(case.expected), 1), name
    by_status = {}
    for e in sorted(case.batch, key=lambda e: e[3], reverse=True):  # "status desc": placed > paid
        by_status.setdefault(e[0], e[3])
    assert any(by_status[o] != case.expected[o] for o in by_status)
