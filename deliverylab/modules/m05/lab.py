"""Lab 05's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Answers are passed as lambdas, so a check whose exercise is not done yet says SKIP. Each exercise is also judged
on a hidden run (checks/hidden.py, built in hidden_runs.py): the writers of exercises 1 and 3 run again, in the
notebook's Spark, on a topic of their own (another number of orders), and their first batch is run a second time
after it was written and committed, as after a crash after the write and before Spark's commit (for exercise 3,
a crash the run shown does not have: after the COMMIT); the MERGE of exercise 2 runs once on a table that already
holds orders, with several orders per customer in the batch. A hidden run is built once per answer and seed, so
running a check cell again does not run it again.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

from ...checks import hidden
from . import hidden_runs

LAB = "05-exactly-once-sinks-lab"
#: Where the hidden runs of both writers stop: after the sink has the batch (after your COMMIT), before commits/N.
HIDDEN_POINT = "after_sink_write"


def _crash_found(crash) -> str:
    return crash.line() if crash is not None else "no crash: your pipeline stopped before it"


def _ledger(run):
    if getattr(run, "ledger", None) is None:
        run.ledger = run.pipe.ledger()
    return run.ledger


def _writer_checks(checks, exercise: str, pipe: Callable, crash: Callable, crash_again: Callable | None,
                   point: str, point_text: str, hints: dict) -> None:
    """The checks exercises 1 and 3 share: on the run shown, your pipeline ran, crashed where it should, and after
    the replay nothing is lost or written twice; then, only if all of that holds, the same on a hidden run: your
    function's first batch on a hidden topic run again after its write (``crash_again(pipe, point, rng)``, default
    hidden_runs.replay_writer), so a wrong answer the run shown already fails costs no second run."""
    ran = f"{exercise}:ran"
    checks.that("your pipeline ran through the crash and the replay", lambda: pipe().failure is None, id=ran,
                expected="no error", found=lambda: pipe().failure, hint=hints["ran"])
    checks.that(f"the crash hit your writer {point_text}", lambda: crash().point == point and crash().by_sigkill,
                depends_on=ran, expected=f"a SIGKILL {hints['point']}", found=lambda: _crash_found(crash()),
                hint=f"Run the cell above again: it crashes your pipeline {point_text}.")
    read: dict = {}  # the sink is read once for this cell's checks

    def ledger():
        if read.get("pipe") is not pipe():
            read.update(pipe=pipe(), ledger=pipe().ledger())
        return read["ledger"]

    lost, duplicated = f"{exercise}:lost", f"{exercise}:duplicated"
    checks.that("after the replay: no order lost", lambda: ledger().lost == 0, depends_on=ran, id=lost,
                expected="0 lost orders", found=lambda: f"{ledger().lost} lost", hint=hints["lost"])
    checks.that("after the replay: no order written twice", lambda: ledger().duplicated == 0, depends_on=ran,
                id=duplicated, expected="0 duplicated orders", found=lambda: f"{ledger().duplicated} duplicated",
                hint=hints["duplicated"])
    again = crash_again or hidden_runs.replay_writer
    key = f"{LAB}:{exercise.replace(' ', '-')}"
    runs = hidden.Runs(key, shown=lambda: SimpleNamespace(pipe=pipe(), crash=crash(), ledger=ledger()),
                       hidden=lambda rng: hidden.once((exercise, id(pipe()), hidden.seed_for(key)), (pipe(),),
                                                lambda: again(pipe(), HIDDEN_POINT, rng)))
    checks.on_runs("a batch you have not seen, run again after its write: nothing lost or written twice", pipe, runs,
                   _judge_again, depends_on=[ran, lost, duplicated], id=f"{exercise}:again", hint=hints["again"])


def _judge_again(_, run):
    if run.pipe.failure is not None:
        return "no error, 0 lost, 0 duplicated", f"your pipeline stopped: {run.pipe.failure}"
    found = _ledger(run)
    if found.lost or found.duplicated:
        return "0 lost, 0 duplicated", f"{found.lost} lost, {found.duplicated} duplicated"
    return None


def check_idempotent_writer(checks, pipe: Callable, crash: Callable, crash_again: Callable | None = None) -> None:
    """Exercise 1: your foreachBatch writer, crashed after its write and before Spark's commit; and on a hidden run,
    its first batch of orders run again after its write (``crash_again``, default hidden_runs.replay_writer)."""
    _writer_checks(checks, "exercise 1", pipe, crash, crash_again, "after_sink_write", "after its write, before the commit", {
        "ran": "The line above is what your pipeline's driver reported. A query that never writes out.checkpoint "
               "cannot be restarted where it stopped.",
        "point": "after the sink's write, before commits/N",
        "lost": "Does your writer skip batches it has never written? Which number tells Delta that two writes are "
                "the same batch?",
        "duplicated": "The replay wrote batch N a second time: which two writer options let Delta recognise a "
                      "(writer, batch) it has already committed?",
        "again": "The check ran your function on orders of its own and ran its first batch of orders again after "
                 "the write, as a crash before Spark's commit does. Does every write carry what lets Delta recognise "
                 "a batch it has committed, the first write too, and does your writer rely on anything that held "
                 "only for the run above?",
    })


def check_atomic_upsert(checks, pipe: Callable, crash: Callable, crash_again: Callable | None = None) -> None:
    """Exercise 3: your SQLite upsert, crashed in the middle of writing a batch; and on a hidden run, its first batch
    of orders run again after its COMMIT, as a crash before Spark's commit leaves it (``crash_again``, default
    hidden_runs.replay_writer)."""
    _writer_checks(checks, "exercise 3", pipe, crash, crash_again, "mid_sink_write", "in the middle of a batch", {
        "ran": "The line above is what your pipeline's driver reported. If the replay met a row that was already in "
               "the table, part of the batch was there when the driver died: what would make the second copy "
               "harmless?",
        "point": "between two of your row writes",
        "lost": "Rows that were never written should come back with the replay: does your writer skip anything, or "
                "end before its transaction is committed?",
        "duplicated": "Part of the batch was already in the table when the driver died. Either it must not be (one "
                      "transaction for the whole batch) or its second copy must land on the first (a key and ON "
                      "CONFLICT ... DO UPDATE).",
        "again": "The check ran your function on orders of its own and ran its first batch again after your COMMIT, "
                 "as a crash before Spark writes commits/N does: the whole batch was in the table when the replay "
                 "came. What makes the second copy of a row harmless?",
    })


# --------------------------------------------------------------------------- exercise 2

#: The run shown: o-1 placed then paid, o-2 placed, into an empty table.
SHOWN_EXPECTED = {"o-1": "paid", "o-2": "placed"}
RAN = "your MERGE ran twice without an error"


def check_safe_merge(checks, trial: Callable, run_case: Callable | None = None) -> None:
    """Exercise 2: your MERGE, run on a batch with two events for one order, then run again (a replay); and once
    on a hidden case (hidden_runs.merge_case): the table the run shown left (a copy), which holds orders, and a batch
    with several orders per customer. ``trial``: the merges.MergeTrial of the lab's cell; ``run_case(trial, case)`` runs its MERGE on a case
    (default hidden_runs.run_merge_case, in the notebook's Spark)."""
    run_case = run_case or hidden_runs.run_merge_case
    key = f"{LAB}:merge"
    runs = hidden.Runs(key, shown=lambda: (trial(), SHOWN_EXPECTED), hidden=lambda rng: hidden.once(
        ("merge", id(trial()), hidden.seed_for(key)), (trial(),), lambda: _hidden_merge(trial(), rng, run_case)))
    checks.on_runs(RAN, trial, runs, lambda _, run: None if run[0].error is None else ("no error", run[0].error),
                   hint="Read the error class: a MERGE refuses a batch in which two source rows match one target row. "
                        "How many source rows may match one row of the table: one per order_id, whatever the "
                        "customer?")
    checks.on_runs("one row per order after the first MERGE", trial, runs, _judge_rows, depends_on=RAN,
                   hint="A batch can hold several events of one order, and a customer several orders: keep one row "
                        "per order_id, join the table on order_id, and leave the orders the batch does not name alone.")
    checks.on_runs("the replay changes nothing", trial, runs, _judge_replay, depends_on=RAN,
                   hint="Is every column you write derived from the batch alone (no clock, no random numbers), and "
                        "does the same batch always keep the same row?")
    checks.on_runs("each order keeps its latest event", trial, runs, _judge_latest, depends_on=RAN,
                   hint="Order the events of one order by event_time, newest first, keep the first, and let it update "
                        "the row the table already has for that order.")


def _hidden_merge(trial, rng, run_case):
    case = hidden_runs.merge_case(rng)
    kept = {o for o, *_ in case.target} - {o for o, *_ in case.batch}
    # the run shown left these orders; where its statuses are not the lab's, "latest" has failed there already
    expected = {**case.expected, **{o: (trial.statuses or {}).get(o, case.expected[o]) for o in kept}}
    return run_case(trial, case), expected


def _judge_rows(_, run):
    trial, expected = run
    if trial.after_one == dict.fromkeys(sorted(expected), 1):
        return None
    missing = sorted(set(expected) - set(trial.after_one))
    extra = {o: n for o, n in trial.after_one.items() if n != 1 or o not in expected}
    found = (f"no row for {', '.join(missing[:3])}" if missing else "") + ("; " if missing and extra else "") + \
        (f"rows per order {extra}" if extra else "")
    return f"every order_id once ({len(expected)} orders)", found


def _judge_replay(_, run):
    trial, _ = run
    if trial.after_replay is None and trial.unchanged is None:
        return None  # the hidden case runs the MERGE once: the run shown is the one replayed
    if trial.unchanged and set(trial.after_replay.values()) == {1}:
        return None
    return "the same table after the second MERGE", (f"rows per order {trial.after_replay}" if trial.unchanged
                                                     else "the second MERGE changed the table")


def _judge_latest(_, run):
    trial, expected = run
    if trial.statuses == expected:
        return None
    wrong = sorted(o for o in expected if trial.statuses.get(o) != expected[o])
    return (f"{wrong[0]}: {expected[wrong[0]]}" if wrong else str(expected),
            f"{wrong[0]}: {trial.statuses.get(wrong[0])}" if wrong else str(trial.statuses))
