"""Lab 03's checks accept right answers written several ways and reject planted wrong ones, on the run shown and on
hidden runs (no broker needed).

Exercise 1 runs the learner's function through lab.forced_race (as its cell does) on a simulated at-most-once
pipeline whose driver is either fast (it writes what it is sent at once, unless it is held still) or slow (it writes
only when drained): the verdict must be the same for both, which is what forcing the race both ways is for. Exercise 3's check reads the result of a
restart experiment: planted results here, real queries in tests/labs/test_lab03_planted.py.
"""
from __future__ import annotations

import random
import signal
import subprocess
from decimal import Decimal
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks, hidden
from deliverylab.crashlab.pipeline import Crash
from deliverylab.modules.m03 import lab, race
from seeds import seed_fixture
from lab03_answers import (by_loop, by_sets, no_drain, orders_in_flight, produced_after_a_restart_not_waited_for,
                           produced_before_the_crash, right, right_in_steps)


seed = seed_fixture()


def fresh():
    return Checks("03-at-most-once-lab", record=False)


def statuses(checks):
    return {r.description: r.status for r in checks.results}


def first_fail(checks):
    failed = [r for r in checks.results if r.status == "FAIL"]
    assert failed, statuses(checks)
    return "\n".join(failed[0].lines)


# --------------------------------------------------------------------------- exercise 1


class AmoPipe:
    """An at-most-once pipeline: what a driver has not written when it dies, and what arrives while it is down, is
    lost. ``fast``: the driver writes what it is sent at once, unless held still; else only when drained."""

    variant = SimpleNamespace(name="at_most_once")

    def __init__(self, fast: bool):
        self.fast, self.produced, self.crashes, self.starts, self.running = fast, [], [], 1, True
        self.held, self.sink, self.pending, self.pid = False, [], [], 4242

    def signal(self, pid, sig):
        assert pid == self.pid and self.running
        self.held = sig == signal.SIGSTOP

    def produce(self, n, progress=False):
        start = len(self.produced)
        orders = [{"order_id": f"o-{k:06d}", "amount": f"{10 + k % 7}.50"} for k in range(start, start + n)]
        self.produced += orders
        if self.running:
            self.pending += orders
            if self.fast and not self.held:
                self.drain()
        return orders

    def drain(self):
        assert self.running and not self.held, "drained a driver that is not running, or held still"
        self.sink += self.pending
        self.pending = []

    def crash(self, point, batch=None, orders=500):
        assert point == "now" and self.running
        self.running, self.held, self.pending = False, False, []
        crash = Crash("now", None, -9, self.starts)
        self.crashes.append(crash)
        return crash

    def restart(self, wait=True):
        assert not self.running and wait, "a hidden run restarts a driver and waits for it"
        self.starts, self.running = self.starts + 1, True

    def ledger(self):
        return ledger.reconcile(self.produced, [(o["order_id"], o["amount"]) for o in self.sink])


def typed_slice(pipe):  # kind 1: the orders of the run shown, by position
    right(pipe)
    return pipe.produced[:150] if len(pipe.produced) == 250 else pipe.produced[0:150]


@pytest.fixture
def amo_pipe(request, monkeypatch):
    def make(fast):
        pipe = AmoPipe(fast)
        monkeypatch.setattr(race.os, "killpg", pipe.signal)
        pipe.produce(200)  # the lab's pipeline, before exercise 1
        pipe.drain()
        return pipe
    return make


def judged(pipe, lose_orders):
    """The lab's cell (the function through lab.forced_race, then the ledger), then the check."""
    while_down = lab.forced_race(lose_orders, pipe)
    amo = pipe.ledger()
    checks = fresh()
    lab.check_loss_while_down(checks, lambda: lose_orders, lambda: pipe, lambda: while_down, lambda: amo)
    return checks


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("lose_orders", [right, right_in_steps])
def test_exercise_1_right_answers_pass_on_the_forced_race_too(lose_orders, fast, amo_pipe, seed):
    pipe = amo_pipe(fast)
    checks = judged(pipe, lose_orders)
    assert set(statuses(checks).values()) == {"PASS"}, checks.results
    assert len(pipe.crashes) == 1 and not pipe.held  # one run, no second crash; nothing left held


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("lose_orders", [produced_before_the_crash, orders_in_flight, no_drain,
                                         produced_after_a_restart_not_waited_for])
def test_exercise_1_race_dependent_answers_fail_however_fast_the_driver(lose_orders, fast, amo_pipe, seed):
    pipe = amo_pipe(fast)
    checks = judged(pipe, lose_orders)
    text = first_fail(checks)
    assert "exactly the orders produced while it was down are lost" in text and "hint:" in text, text
    assert f"on:       the run above (seed {seed};" in text
    assert not pipe.held


def test_exercise_1_names_what_went_wrong_and_the_seed(amo_pipe, monkeypatch):
    monkeypatch.setenv(hidden.SEED_ENV, "7")
    pipe = amo_pipe(False)  # a slow driver: an unforced run would be right by luck
    checks = judged(pipe, produced_before_the_crash)
    text = first_fail(checks)
    assert "on:       the run above (seed 7" in text and hidden.COPIED not in text
    assert "150 of the returned orders were produced while a driver ran" in text


@pytest.mark.parametrize("lose_orders, cause, not_this", [
    (no_drain, "reached the sink only after lose_orders returned", "not written when it died"),
    (orders_in_flight, "produced while a driver ran and not written when it died", "only after lose_orders"),
])
def test_exercise_1_says_whether_orders_were_late_or_killed(lose_orders, cause, not_this, amo_pipe, seed):
    text = first_fail(judged(amo_pipe(True), lose_orders))  # a fast driver: right unforced, by luck
    assert "on:       the run above (seed" in text and cause in text and not_this not in text, text


def test_exercise_1_a_function_that_leaves_it_down_finds_it_running_again(amo_pipe, seed):
    pipe = amo_pipe(True)
    checks = judged(pipe, lambda p: (p.crash("now"), p.produce(5))[1])
    assert "still down when lose_orders returned" in first_fail(checks)
    assert pipe.running and len(pipe.crashes) == 1  # it left it down, and it was started again


def test_exercise_1_the_check_judges_the_cells_run_of_this_function(amo_pipe, seed):
    pipe = amo_pipe(True)
    down = lab.forced_race(right, pipe)
    checks = fresh()  # another function than the one the cell ran: run the cell again
    lab.check_loss_while_down(checks, lambda: right_in_steps, lambda: pipe, lambda: down, lambda: pipe.ledger())
    assert "no finished run of this lose_orders to judge" in first_fail(checks)


def test_exercise_1_typed_and_not_a_function(amo_pipe, seed):
    text = first_fail(judged(amo_pipe(True), typed_slice))
    assert "on:       the run above (seed" in text and "150 of the returned orders were not produced by this call" in text
    assert "produced while a driver ran" not in text, text
    pipe = amo_pipe(True)
    down = lab.forced_race(right, pipe)
    checks = fresh()
    lab.check_loss_while_down(checks, lambda: down, lambda: pipe, lambda: down, lambda: pipe.ledger())
    got = statuses(checks)
    assert got["lose_orders is a function of the pipeline"] == "FAIL"
    assert got["exactly the orders produced while it was down are lost"] == "SKIP"


def test_exercise_1_the_wrong_variant_and_no_crash_fail_on_the_run_shown(amo_pipe):
    pipe = amo_pipe(True)
    pipe.variant = SimpleNamespace(name="at_least_once")
    checks = judged(pipe, right)
    assert statuses(checks)["the pipeline is the at_most_once variant"] == "FAIL"
    pipe = amo_pipe(True)
    checks = judged(pipe, lambda p: p.produce(150))  # never crashed: nothing lost
    got = statuses(checks)
    assert got["the pipeline was crashed, then restarted"] == "FAIL"
    assert got["exactly the orders produced while it was down are lost"] == "FAIL"


def test_racing_holds_and_lets_go_a_real_process_group():
    import os

    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        racing = race.Racing(SimpleNamespace(pid=proc.pid, running=True), random.Random(1))
        racing.hold()
        _, status = os.waitpid(proc.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status) and os.WSTOPSIG(status) == signal.SIGSTOP
        racing.release()
        racing.release()  # twice is fine
        _, status = os.waitpid(proc.pid, os.WCONTINUED)
        assert os.WIFCONTINUED(status)
    finally:
        proc.kill()
        proc.wait()
    racing._held = proc.pid
    racing.release()  # the process is gone: nothing to let go


def test_racing_splits_each_produce_both_ways_for_every_seed(monkeypatch):
    for s in range(200):
        pipe = AmoPipe(fast=True)
        monkeypatch.setattr(race.os, "killpg", pipe.signal)
        racing = race.Racing(pipe, random.Random(s))
        racing.produce(150)
        caught, held = racing.splits[-1]
        assert caught >= 1 and held >= 1 and len(pipe.sink) == caught and len(pipe.pending) == held and pipe.held
        racing.crash("now")
        racing.produce(40)
        assert len(racing.down) == 40 and racing._held is None


# --------------------------------------------------------------------------- exercise 2

PRODUCED = [{"order_id": f"o-{n:06d}", "amount": f"{10 + n}.25"} for n in range(10)]
SHOWN_ROWS = ledger.normalise_rows([(o["order_id"], o["amount"]) for o in PRODUCED[:4] + PRODUCED[7:]])
SHOWN_LOST, SHOWN_WORTH = {o["order_id"] for o in PRODUCED[4:7]}, sum(Decimal(o["amount"]) for o in PRODUCED[4:7])


RIGHT_FUNCTIONS = {"sets and Decimal": by_sets, "a loop and floats": by_loop}
L = ledger.reconcile
WRONG_FUNCTIONS = {  # (function, the run it fails on)
    "both typed in from the printout": (lambda p, r: (SHOWN_LOST, SHOWN_WORTH), "a hidden run"),
    "the ids of exercise 1's while_down": (lambda p, r: (SHOWN_LOST, by_sets(p, r)[1]), "a hidden run"),
    "the revenue difference (a duplicate hides part of it)": (
        lambda p, r: (by_sets(p, r)[0], -L(p, r).revenue_difference), "a hidden run"),
    "subtracted the wrong way round": (lambda p, r: ({x for x, _ in r} - {o["order_id"] for o in p}, 0), "the run above"),
    "a count for the amount": (lambda p, r: (by_sets(p, r)[0], len(by_sets(p, r)[0])), "the run above"),
    "the loss as a negative amount": (lambda p, r: (by_sets(p, r)[0], -by_sets(p, r)[1]), "the run above"),
}


@pytest.mark.parametrize("name", RIGHT_FUNCTIONS)
def test_exercise_2_right_functions_pass(name, seed):
    checks = fresh()
    lab.check_missing_revenue(checks, lambda: RIGHT_FUNCTIONS[name], lambda: PRODUCED, lambda: SHOWN_ROWS)
    assert set(statuses(checks).values()) == {"PASS"}, checks.results


@pytest.mark.parametrize("name", WRONG_FUNCTIONS)
def test_exercise_2_wrong_functions_fail_where_they_go_wrong(name, seed):
    fn, where = WRONG_FUNCTIONS[name]
    checks = fresh()
    lab.check_missing_revenue(checks, lambda: fn, lambda: PRODUCED, lambda: SHOWN_ROWS)
    text = first_fail(checks)
    assert f"on:       {where}" in text and "hint:" in text, text
    if where == "a hidden run":
        assert f"seed {seed}" in text and hidden.COPIED in text


def test_exercise_2_wants_a_function_of_two_answers():
    checks = fresh()
    lab.check_missing_revenue(checks, lambda: (SHOWN_LOST, SHOWN_WORTH), lambda: PRODUCED, lambda: SHOWN_ROWS)
    assert statuses(checks)["what_was_lost is a function of the orders and the sink's rows"] == "FAIL"
    checks = fresh()
    lab.check_missing_revenue(checks, lambda: lambda p, r: SHOWN_LOST, lambda: PRODUCED, lambda: SHOWN_ROWS)
    assert "return the two answers" in first_fail(checks)


def test_exercise_2_hidden_sinks_hold_a_gap_and_a_duplicate_for_every_seed():
    for s in range(300):
        sink = lab.hidden_sink(random.Random(s))
        lost, missing = lab.lost_and_missing(sink.produced, sink.rows)
        checked = L(sink.produced, sink.rows)
        assert lost and checked.duplicated >= 1 and -checked.revenue_difference != missing, s
        assert lost != SHOWN_LOST and all(int(i[2:]) >= 10_000 for i in lost)


# --------------------------------------------------------------------------- exercise 3

EVERY_ROW = [(o["order_id"], o["amount"]) for o in PRODUCED]


def result(lost=0, duplicated=0, used_checkpoint=True, ended=None, delivered=10):
    rows = EVERY_ROW[lost:] + EVERY_ROW[lost:lost + duplicated]
    return lab.RestartResult(ledger.reconcile(PRODUCED, rows), [o["order_id"] for o in PRODUCED[4:7]],
                             used_checkpoint, ended=ended, delivered=delivered)


def right_query(topic, checkpoint_dir, keep):
    return None


def test_exercise_3_right_answer_runs_the_hidden_sizes_once(seed):
    asked = []
    checks = fresh()
    lab.check_keeps_place(checks, lambda: right_query, experiment=lambda f, **sizes: asked.append(sizes) or result())
    assert set(statuses(checks).values()) == {"PASS"}
    assert asked == [lab.restart_sizes(random.Random(seed))]


def test_exercise_3_hidden_sizes_are_never_the_ones_the_lab_once_showed():
    for s in range(300):
        sizes = lab.restart_sizes(random.Random(s))
        assert all(sizes[k] != v for k, v in lab.SHOWN_SIZES.items()), sizes


def test_exercise_3_a_restart_from_another_checkpoint_folder_fails(tmp_path):
    def run(folders):
        checks = fresh()
        lab.check_keeps_place(checks, lambda: right_query, experiment=lambda f, **s: lab.RestartResult(
            result().ledger, [], True, delivered=10, folders=folders))
        return checks
    assert set(statuses(run(("/c/q", "/c/q"))).values()) == {"PASS"}
    assert set(statuses(run((None, None))).values()) == {"PASS"}  # not read: judged on offsets/ alone
    text = first_fail(run(("/c/keeper-1/run-a", "/c/keeper-1/run-b")))
    assert "keeper-1/run-a/, the restart in keeper-1/run-b/" in text and "hint:" in text, text


def test_exercise_3_rejects_no_checkpoint_with_latest_and_with_earliest():
    checks = fresh()
    lab.check_keeps_place(checks, lambda: right_query, experiment=lambda f, **s: result(lost=3, used_checkpoint=False))
    got = statuses(checks)
    assert got["its query keeps its progress in checkpoint_dir"] == "FAIL"
    assert got["no order produced while it was stopped is lost"] == "FAIL"
    checks = fresh()
    lab.check_keeps_place(checks, lambda: right_query, experiment=lambda f, **s: result(duplicated=6, used_checkpoint=False))
    assert statuses(checks)["no order is delivered twice"] == "FAIL"


@pytest.mark.parametrize("ended, delivered, says", [
    (lab.ENDED_BY_ITSELF.format(which="first start"), 0, "ended by itself"),
    ("its query failed at the restart: NameError: name 'amount' is not defined", 60, "NameError: name 'amount'"),
    (None, 0, "keep received no order"),
])
def test_exercise_3_says_first_when_the_query_ended_or_never_read(ended, delivered, says):
    checks = fresh()
    lab.check_keeps_place(checks, lambda: right_query,
                          experiment=lambda f, **s: lab.RestartResult(None, [], False, ended=ended, delivered=delivered))
    got = statuses(checks)
    assert got["its query reads until it is stopped and hands each batch to keep"] == "FAIL"
    assert says in first_fail(checks)
    assert {got[k] for k in ("its query keeps its progress in checkpoint_dir", "no order is delivered twice")} == {"SKIP"}


def test_exercise_3_an_experiment_that_raises_runs_once():
    calls = []

    def experiment(f, **sizes):
        calls.append(f)
        raise RuntimeError("the broker went away")

    checks = fresh()
    lab.check_keeps_place(checks, lambda: right_query, experiment=experiment)
    assert calls == [right_query] and "raised RuntimeError: the broker went away" in first_fail(checks)


def test_exercise_3_rejects_a_wrong_signature():
    checks = fresh()
    lab.check_keeps_place(checks, lambda: lambda topic, keep: None, experiment=lambda f, **s: result())
    got = statuses(checks)
    assert got["start_query takes (topic, checkpoint_dir, keep)"] == "FAIL"
    assert {v for k, v in got.items() if k != "start_query takes (topic, checkpoint_dir, keep)"} == {"SKIP"}


def test_exercise_3_a_checkpoint_in_a_folder_under_checkpoint_dir_counts(tmp_path):
    assert not lab._has_offsets(str(tmp_path / "none"))
    (tmp_path / "given" / "query" / "offsets").mkdir(parents=True)
    assert lab._has_offsets(str(tmp_path / "given"))


def test_exercise_3_the_learners_exception_is_one_line():
    message = ("[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: An exception was raised by "
               "the Python Proxy. Return Message: Traceback (most recent call last):\n  File \"<cell>\", line 3, in "
               "handle\nNameError: name 'amount' is not defined\n\nJVM stacktrace:\norg.apache.spark.sql.streaming."
               "StreamingQueryException: [STREAM_FAILED] ...\n\tat org.apache.spark.sql.execution.streaming.X")
    assert lab._one_line(RuntimeError(message)) == "NameError: name 'amount' is not defined"


# --------------------------------------------------------------------------- exercise 4


def test_exercise_4_right_answer():
    checks = fresh()
    lab.check_acceptable(checks, lambda: {"freezer_screen", "click_heatmap"})
    assert set(statuses(checks).values()) == {"PASS"}


@pytest.mark.parametrize("answer, failing", [
    (set(lab.USE_CASES), "no use case that can never lose a record is in it"),
    (set(), "every use case that can afford a loss is in it"),
    ({"freezer_screen", "card_payments"}, "no use case that can never lose a record is in it"),
    ({"freezer_screen", "click-heatmap"}, "acceptable is a set of use-case names"),
    ("freezer_screen", "acceptable is a set of use-case names"),
])
def test_exercise_4_rejects_planted_answers(answer, failing):
    checks = fresh()
    lab.check_acceptable(checks, lambda: answer)
    assert statuses(checks)[failing] == "FAIL"
