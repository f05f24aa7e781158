"""Lab 05's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Answers are passed as lambdas, so a check whose exercise is not done yet says SKIP.
"""
from __future__ import annotations

from typing import Callable


def _verdict_checks(checks, what: str, ledger: Callable, hint_lost: str, hint_duplicated: str, ran: str) -> None:
    exercise = ran.split(":")[0]  # exercises 1 and 3 ask the same questions: one result each
    checks.that(f"{what}: no order lost", lambda: ledger().lost == 0, depends_on=ran, id=f"{exercise}:lost",
                expected="0 lost orders", found=lambda: f"{ledger().lost} lost", hint=hint_lost)
    checks.that(f"{what}: no order written twice", lambda: ledger().duplicated == 0, depends_on=ran,
                id=f"{exercise}:duplicated", expected="0 duplicated orders",
                found=lambda: f"{ledger().duplicated} duplicated", hint=hint_duplicated)


def _ran_check(checks, exercise: str, pipe: Callable, hint: str) -> str:
    """Your pipeline ran to the end: its error (one line) otherwise. Returns the check's id."""
    ran = f"{exercise}:ran"
    checks.that("your pipeline ran through the crash and the replay", lambda: pipe().failure is None, id=ran,
                expected="no error", found=lambda: pipe().failure, hint=hint)
    return ran


def _crash_found(crash) -> str:
    return crash.line() if crash is not None else "no crash: your pipeline stopped before it"


def check_idempotent_writer(checks, pipe: Callable, crash: Callable) -> None:
    """Exercise 1: your foreachBatch writer, crashed after its write and before Spark's commit."""
    ran = _ran_check(checks, "exercise 1", pipe,
                     hint="The line above is what your pipeline's driver reported. A query that never writes "
                          "out.checkpoint cannot be restarted where it stopped.")
    checks.that("the crash hit your writer after its write, before the commit",
                lambda: crash().point == "after_sink_write" and crash().by_sigkill, depends_on=ran,
                expected="a SIGKILL after the sink's write, before commits/N", found=lambda: _crash_found(crash()),
                hint="Run the cell above again: it crashes your pipeline after your batch is written.")
    _verdict_checks(checks, "after the replay", lambda: pipe().ledger(),
                    hint_lost="Does your writer skip batches it has never written? Which number tells Delta that two "
                              "writes are the same batch?",
                    hint_duplicated="The replay wrote batch N a second time: which two writer options let Delta "
                                    "recognise a (writer, batch) it has already committed?", ran=ran)


def check_safe_merge(checks, trial: Callable) -> None:
    """Exercise 2: your MERGE, run on a batch with two events for one order, then run again (a replay).
    ``trial``: the merges.MergeTrial of the lab's cell."""
    ran = "your MERGE ran twice without an error"
    checks.that(ran, lambda: trial().error is None, expected="no error", found=lambda: trial().error,
                hint="Read the error class: a MERGE refuses a batch in which two source rows match one "
                     "target row. How many rows may the batch you MERGE hold for one order_id?")
    checks.that("one row per order after the first MERGE", lambda: set(trial().after_one.values()) == {1},
                expected="every order_id once", found=lambda: trial().after_one, depends_on=ran,
                hint="A batch can hold several events of one order: keep one row per order_id before you MERGE.")
    checks.that("the replay changes nothing", lambda: trial().unchanged and set(trial().after_replay.values()) == {1},
                expected="the same table after the second MERGE", depends_on=ran,
                found=lambda: (f"rows per order {trial().after_replay}" if trial().unchanged
                               else "the second MERGE changed the table"),
                hint="Is every column you write derived from the batch alone (no clock, no random numbers), "
                     "and does the same batch always keep the same row?")
    checks.equal("each order keeps its latest event", lambda: trial().statuses, {"o-1": "paid", "o-2": "placed"},
                 depends_on=ran, hint="Order the events of one order by event_time, newest first, and keep the first.")


def check_atomic_upsert(checks, pipe: Callable, crash: Callable) -> None:
    """Exercise 3: your SQLite upsert, crashed in the middle of writing a batch."""
    ran = _ran_check(checks, "exercise 3", pipe,
                     hint="The line above is what your pipeline's driver reported. If the replay met a row that "
                          "was already in the table, part of the batch was there when the driver died: what "
                          "would make the second copy harmless?")
    checks.that("the crash hit your writer in the middle of a batch",
                lambda: crash().point == "mid_sink_write" and crash().by_sigkill, depends_on=ran,
                expected="a SIGKILL between two of your row writes", found=lambda: _crash_found(crash()),
                hint="Run the cell above again: it crashes your pipeline while it writes a batch.")
    _verdict_checks(checks, "after the replay", lambda: pipe().ledger(),
                    hint_lost="Rows that were never written should come back with the replay: does your writer skip "
                              "anything, or end before its transaction is committed?",
                    hint_duplicated="Part of the batch was already in the table when the driver died. Either it "
                                    "must not be (one transaction for the whole batch) or its second copy must "
                                    "land on the first (a key and ON CONFLICT ... DO UPDATE).", ran=ran)
