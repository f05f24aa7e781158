"""Lab 05's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Answers are passed as lambdas, so a check whose exercise is not done yet says SKIP.
"""
from __future__ import annotations

from typing import Callable


def _verdict_checks(checks, what: str, ledger: Callable, hint_lost: str, hint_duplicated: str) -> None:
    checks.that(f"{what}: no order lost", lambda: ledger().lost == 0,
                expected="0 lost orders", found=lambda: f"{ledger().lost} lost", hint=hint_lost)
    checks.that(f"{what}: no order written twice", lambda: ledger().duplicated == 0,
                expected="0 duplicated orders", found=lambda: f"{ledger().duplicated} duplicated", hint=hint_duplicated)


def check_idempotent_writer(checks, pipe: Callable, crash: Callable) -> None:
    """Exercise 1: your foreachBatch writer, crashed after its write and before Spark's commit."""
    checks.that("the crash hit your writer after its write, before the commit",
                lambda: crash().point == "after_sink_write" and crash().by_sigkill,
                expected="a SIGKILL at after_sink_write", found=lambda: crash().line(),
                hint="Run the cell that crashes the pipeline with point 'after_sink_write'.")
    _verdict_checks(checks, "after the replay", lambda: pipe().ledger(),
                    hint_lost="Does your writer skip batches it has never written? txnVersion must be the batch id.",
                    hint_duplicated="The replay wrote batch N a second time: which two writer options let Delta "
                                    "recognise a (writer, batch) it has already committed?")


def check_safe_merge(checks, rows_after_one: Callable, rows_after_replay: Callable, same_after_replay: Callable,
                     statuses: Callable) -> None:
    """Exercise 2: your MERGE, run on a batch with two events for one order, then run again (a replay)."""
    checks.that("one row per order after the first MERGE", lambda: set(rows_after_one().values()) == {1},
                expected="every order_id once", found=lambda: rows_after_one(),
                hint="A batch can hold several events of one order: keep one row per order_id before you MERGE.")
    checks.that("the replay changes nothing", lambda: same_after_replay() and set(rows_after_replay().values()) == {1},
                expected="the same table after the second MERGE", found=lambda: rows_after_replay(),
                hint="Is every column you write derived from the batch alone (no clock, no random numbers), "
                     "and does the same batch always keep the same row?")
    checks.equal("each order keeps its latest event", statuses, {"o-1": "paid", "o-2": "placed"},
                 hint="Order the events of one order by event_time, newest first, and keep the first.")


def check_atomic_upsert(checks, pipe: Callable, crash: Callable) -> None:
    """Exercise 3: your SQLite upsert, crashed in the middle of writing a batch."""
    checks.that("the crash hit your writer in the middle of a batch",
                lambda: crash().point == "mid_sink_write" and crash().by_sigkill,
                expected="a SIGKILL at mid_sink_write", found=lambda: crash().line(),
                hint="Run the cell that crashes the pipeline with point 'mid_sink_write'.")
    _verdict_checks(checks, "after the replay", lambda: pipe().ledger(),
                    hint_lost="Rows that were never written should come back with the replay: does your writer "
                              "skip anything?",
                    hint_duplicated="Part of the batch was already in the table when the driver died. Either it "
                                    "must not be (one transaction for the whole batch) or its second copy must "
                                    "land on the first (a key and ON CONFLICT ... DO UPDATE).")
