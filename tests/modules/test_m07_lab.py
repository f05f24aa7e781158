"""Lab 07's checks accept right answers and reject planted wrong ones, on the run shown and on hidden runs, over
several seeds (no broker, no Spark: outcomes and classifiers are stand-ins here; tests/labs/test_lab07_planted.py
runs them for real). The crash cell's sizes and the hidden poison pills are tested over many seeds."""
import json
import random
import re
import signal
from datetime import datetime
from decimal import Decimal, InvalidOperation
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks, hidden, todo
from deliverylab.crashlab.pipeline import Crash
from deliverylab.modules.m07 import lab, notifications, quarantine
from deliverylab.modules.m07.notifications import summarise
from deliverylab.modules.m07.quarantine import Routed, poison_lines
from seeds import seed_fixture

PRODUCED = [(f"o-{n}", "10.00") for n in range(8)]


class Pipe:
    """A stand-in for the crash lab's pipeline: its failure, its orders table, the seed its sizes came from."""

    def __init__(self, rows=PRODUCED, failure=None, seed=None):
        self.failure, self._rows = failure, rows
        if seed is not None:
            self.seed_drawn = seed

    def ledger(self):
        if self.failure:
            raise AssertionError("a failed pipeline's table is never read")
        return ledger.reconcile(PRODUCED, self._rows)


ONCE = [("q", 0, 2), ("q", 1, 2), ("r", 0, 2), ("r", 1, 2)]        # both queries, each batch once
TWICE = ONCE + [("r", 0, 2)]                                       # the redeployed query's crashed batch 0 again
KEYED_BY_BATCH_AND_SIZE = [("q", 0, 2), ("q", 1, 2), ("r", 1, 2)]  # the new batch 0 taken for the old one
NEVER = [("q", 0, 2)]                                              # notifies only the first batch


def crash(point="after_sink_write"):
    return Crash(point, 1, -signal.SIGKILL, 1)


@pytest.fixture
def checks():
    return Checks("07-what-breaks-lab", record=False)


seed = seed_fixture()


def statuses(checks):
    return {r.description: r.status for r in checks.results}


def run_notifier(checks, sent, pipe=None, point="after_sink_write"):
    lab.check_notifier(checks, lambda: pipe or Pipe(), lambda: crash(point), lambda: summarise(sent, len(PRODUCED)))
    return statuses(checks)


# --------------------------------------------------------------------------- exercise 1


def test_exercise_1_passes_a_keyed_notification(checks):
    assert set(run_notifier(checks, ONCE, pipe=Pipe(seed=4711)).values()) == {"PASS"}


@pytest.mark.parametrize("planted, failed", [
    (TWICE, "no batch notified twice"),
    (KEYED_BY_BATCH_AND_SIZE, "the notifications count every order once"),
    (NEVER, "the notifications count every order once"),
])
def test_exercise_1_rejects_repeated_or_missing_notifications_and_names_the_seed(checks, planted, failed):
    got = run_notifier(checks, planted, pipe=Pipe(seed=4711))
    assert got[failed] == "FAIL", got
    lines = "\n".join(line for r in checks.results if r.description == failed for line in r.lines)
    assert "seed 4711" in lines and f"{hidden.SEED_ENV}=4711" in lines and "hint:" in lines


def test_exercise_1_a_table_written_twice_and_a_run_crashed_elsewhere_fail(checks):
    got = run_notifier(checks, ONCE, pipe=Pipe(rows=PRODUCED + PRODUCED[4:]))
    assert got["the orders table: every order exactly once"] == "FAIL"
    checks.results.clear()
    got = run_notifier(checks, ONCE, point="after_commit")
    assert got["the crash hit your writer after its write, before the commit"] == "FAIL"


def test_exercise_1_a_failed_pipeline_is_one_fail_line_and_the_rest_skip(checks):
    got = run_notifier(checks, ONCE, pipe=Pipe(failure="NameError: name 'sqlite' is not defined", seed=11))
    assert got.pop("your pipeline ran through the crash and the redeploy") == "FAIL"
    assert set(got.values()) == {"SKIP"}
    assert "NameError: name 'sqlite' is not defined" in "\n".join(checks.results[0].lines)


def test_exercise_1_says_skip_while_the_notifier_is_a_todo(checks):
    lab.check_notifier(checks, lambda: todo("notifier"), lambda: todo("notifier"), lambda: todo("notifier"))
    assert set(statuses(checks).values()) == {"SKIP"}


@pytest.mark.parametrize("total", [500, 250])
def test_the_crash_cell_s_sizes_add_up_whatever_the_seed(total):
    for seed in range(300):
        sizes = notifications.plan(random.Random(seed), total)
        assert sizes.total == total, seed  # the printout's produced=N never changes
        assert 0 < sizes.first <= notifications.MAX_PER_BATCH, seed  # each batch 0 takes all that waits
        assert sizes.crashed > 0 and sizes.rest > 0, seed
    assert len({notifications.plan(random.Random(seed), total) for seed in range(50)}) > 10


def test_the_crash_cell_draws_the_exercise_s_seed(monkeypatch):
    monkeypatch.setenv(hidden.SEED_ENV, "90210")
    assert hidden.seed_for(notifications.EXERCISE) == 90210 and notifications.EXERCISE.startswith(lab.LAB)


# --------------------------------------------------------------------------- exercise 2: the hidden poison pills


def reason(line: str) -> str | None:
    """A reference classifier in Python: what the lab's rule says of one record."""
    if not line:
        return "empty"
    try:
        doc = json.loads(line)
    except ValueError:
        return "not JSON"
    if doc.get("order_id") is None:
        return "no order_id"
    try:
        if not Decimal(str(doc.get("amount"))).is_finite():
            return "bad amount"
    except InvalidOperation:
        return "bad amount"
    try:
        datetime.strptime(str(doc.get("event_time")), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return "bad event_time"
    return None


def test_the_demo_file_has_twenty_good_orders_and_six_bad_records():
    lines = poison_lines()
    assert sorted(json.loads(x)["order_id"] for x in lines if reason(x) is None) == lab.GOOD_IDS
    assert sum(1 for x in lines if reason(x)) == 6


def test_hidden_pills_hold_every_hazard_whatever_the_seed():
    for seed in range(150):
        pills = quarantine.hidden_pills(random.Random(seed))
        good = sorted(json.loads(x)["order_id"] for x in pills.lines if reason(x) is None)
        assert good == pills.good_ids and pills.bad == sum(1 for x in pills.lines if reason(x)), seed
        assert not set(good) & set(lab.GOOD_IDS) and pills.bad != 6 or len(good) != 20
        bad = [x for x in pills.lines if reason(x)]
        starts = [x for x in bad if x.startswith('{"amount"')]
        assert starts and any(not x.startswith('{"amount"') for x in pills.lines if reason(x) is None), seed
        assert any(re.search(r'"event_time": "\d{4}-\d{2}-\d{2}T', x) for x in bad), seed  # shaped, no date
        assert any(i.startswith("o-9") for i in good), seed
        assert "" in pills.lines
        assert len(pills.batches) >= 2 and sum(pills.batches) == len(pills.lines)
        start, without_broken_json = 0, 0
        for size in pills.batches:
            batch = pills.lines[start:start + size]
            start += size
            without_broken_json += all(reason(x) != "not JSON" for x in batch)
        assert without_broken_json, seed  # a batch with no record that is not JSON
        firsts = [pills.lines[sum(pills.batches[:k])] for k in range(len(pills.batches))]
        assert any(reason(x) == "no order_id" and "order_id" not in x for x in firsts), seed  # begins with no id


def python_batches(monkeypatch):
    """quarantine.classify_batches for classifiers written in Python: ``classify(lines) -> [(raw, reason, id)]``."""
    def classify_batches(spark, classify, lines, batches):
        result, start = Routed(produced=len(lines)), 0
        for size in batches:
            try:
                rows = classify(lines[start:start + size])
            except Exception as error:  # noqa: BLE001
                result.error = f"{type(error).__name__}: {error}"
                return result
            start += size
            result.good_ids += [i for _, why, i in rows if why is None]
            result.quarantined += [(raw, why) for raw, why, _ in rows if why is not None]
        return result

    monkeypatch.setattr(quarantine, "classify_batches", classify_batches)


def ids(line):
    try:
        return json.loads(line).get("order_id")
    except ValueError:
        return None


RIGHT = Routed(produced=26, good_ids=list(lab.GOOD_IDS), quarantined=[(x, "why") for x in poison_lines() if reason(x)])


def run_quarantine(checks, routed, classify=lambda lines: [(x, reason(x), ids(x)) for x in lines]):
    lab.check_quarantine(checks, lambda: routed, lambda: classify, None)
    return statuses(checks)


def test_exercise_2_passes_a_full_quarantine(checks, seed, monkeypatch):
    python_batches(monkeypatch)
    assert set(run_quarantine(checks, RIGHT).values()) == {"PASS"}


WRONG = {
    # kind 1: the good ids copied from the printout
    "a list of good ids": lambda x: None if ids(x) in lab.GOOD_IDS else "bad",
    # kind 2: the demo's good orders all start with the same key
    "good when it starts with amount": lambda x: None if x.startswith('{"amount"') else "bad",
    # kind 3: the amount is cast, the event time only matched by its shape
    "an event time matched by its shape": lambda x: reason(x) if reason(x) != "bad event_time" or not re.search(
        r'"event_time": "\d{4}-\d{2}-\d{2}T', x) else None,
}


@pytest.mark.parametrize("name", WRONG)
def test_exercise_2_a_rule_that_fits_the_demo_fails_on_the_hidden_pills(checks, seed, monkeypatch, name):
    python_batches(monkeypatch)
    rule = WRONG[name]
    got = run_quarantine(checks, RIGHT, classify=lambda lines: [(x, rule(x), ids(x)) for x in lines])
    assert got["the good orders, and only them"] == "FAIL", got
    assert f"seed {seed}" in "\n".join(checks.results[2].lines)


def test_exercise_2_a_classifier_that_needs_a_broken_record_in_its_batch_fails(checks, seed, monkeypatch):
    """Kind 4: columns that depend on what else is in the micro-batch (a schema inferred per batch)."""
    python_batches(monkeypatch)

    def inferred(lines):
        if all(reason(x) != "not JSON" for x in lines):
            raise KeyError("_corrupt_record")
        return [(x, reason(x), ids(x)) for x in lines]

    got = run_quarantine(checks, RIGHT, classify=inferred)
    assert got["the stream ran to the end"] == "FAIL"
    assert set(got.values()) == {"FAIL", "SKIP"}


def test_exercise_2_rejects_a_filter_that_drops_bad_records(checks, monkeypatch):
    python_batches(monkeypatch)
    got = run_quarantine(checks, Routed(produced=26, good_ids=list(lab.GOOD_IDS), quarantined=[]))
    assert got["produced = good + quarantined"] == "FAIL"
    assert got["records quarantined"] == "FAIL"


def test_exercise_2_rejects_a_failfast_parser_and_skips_the_rest(checks, monkeypatch):
    python_batches(monkeypatch)
    got = run_quarantine(checks, Routed(produced=26, error="Malformed records are detected in record parsing."))
    assert got.pop("the stream ran to the end") == "FAIL"
    assert set(got.values()) == {"SKIP"}


def test_exercise_2_rejects_quarantine_rows_without_raw_value_or_reason(checks, monkeypatch):
    python_batches(monkeypatch)
    bad = RIGHT.quarantined
    routed = Routed(produced=26, good_ids=list(lab.GOOD_IDS), quarantined=[(None, "why")] + bad[1:])
    assert run_quarantine(checks, routed)["each quarantined record keeps its raw value and a reason"] == "FAIL"


def test_exercise_2_says_skip_while_the_classifier_is_a_todo(checks):
    lab.check_quarantine(checks, lambda: todo("classify"), lambda: todo("classify"), None)
    assert set(statuses(checks).values()) == {"SKIP"}
