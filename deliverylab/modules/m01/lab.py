"""Lab 01's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Every answer is passed as a lambda, so a check whose exercise is not done yet says SKIP. Each exercise is
also judged on a hidden run (checks/hidden.py): another crash batch and batch size for the consumers
(exercises 1 and 3), and for exercise 2 a sink whose duplicated orders have two or three rows each, on
orders of other amounts, so only a duplicate_cost that computes from the ledger it is given passes.
"""
from __future__ import annotations

import random
from collections import Counter
from types import SimpleNamespace
from typing import Callable

from ...checks import hidden
from .consumers import VARIANTS

LAB = "01-three-guarantees-lab"


def hidden_crash(rng: random.Random) -> dict:
    """Where a hidden run crashes a consumer: another batch, another batch size (crash_and_recover's options)."""
    return {"crash_batch": rng.choice([1, 3, 4]), "batch_size": rng.choice([40, 60, 80])}


def check_crash_report(checks, report: Callable, alo: Callable, crash_and_recover: Callable) -> None:
    """Exercise 1: the at-least-once consumer, crashed between its steps and reconciled; its variant is crashed
    again on a hidden run (``crash_and_recover(name, **options)``, another batch and batch size)."""
    checks.is_type("alo is a ledger", alo, "Ledger",
                   hint="crash_and_recover returns a report; the ledger is one of its attributes.")
    checks.equal("the consumer that crashed was write_then_commit", lambda: report().variant, "write_then_commit",
                  hint="Check the first argument you passed to crash_and_recover.")
    runs = hidden.Runs(f"{LAB}:crash", shown=lambda: alo(),
                       hidden=lambda rng: crash_and_recover(report().variant, **hidden_crash(rng)).ledger)
    checks.on_runs("no order was lost", lambda: report().variant, runs,
                   judge=lambda variant, ledger: None if ledger.lost == 0 else ("0 lost orders", f"{ledger.lost} lost"),
                   hint="Which step runs first in m01.source('write_then_commit')?",
                   depends_on=["alo is a ledger", "the consumer that crashed was write_then_commit"])
    checks.on_runs("some orders were written twice", lambda: report().variant, runs,
                   judge=lambda variant, ledger: None if ledger.duplicated > 0 else
                   ("at least one duplicated order", f"{ledger.duplicated} duplicated"),
                   hint="Was it crashed between its two steps, in a batch it had polled? "
                        "report.crash_run.line() says where it died; crash_and_recover's defaults do that.",
                   depends_on=["alo is a ledger", "the consumer that crashed was write_then_commit"])


def hidden_sink(rng: random.Random) -> SimpleNamespace:
    """A hidden run of exercise 2: an at-least-once sink (nothing lost) where some orders have two rows and
    some three (a batch replayed twice), on orders of their own amounts."""
    from ... import ledger
    from ...orders import generate_orders

    produced = [(o["order_id"], o["amount"]) for o in generate_orders(rng.randint(25, 60), seed=rng.randint(1, 10**6))]
    copies = [1] * len(produced)
    twice = rng.sample(range(len(produced)), rng.randint(4, 10))
    for i in twice:
        copies[i] = 2
    for i in twice[: rng.randint(1, 3)]:
        copies[i] = 3
    rows = [row for row, n in zip(produced, copies) for _ in range(n)]
    rng.shuffle(rows)
    return SimpleNamespace(rows=ledger.normalise_rows(rows), ledger=ledger.reconcile(produced, rows, label="hidden"))


def _copies(rows) -> Counter:
    return Counter(order_id for order_id, _ in rows)


def _extra_value(rows):
    amounts = dict(rows)
    return sum(amounts[order_id] * (n - 1) for order_id, n in _copies(rows).items() if n > 1)


def check_duplicate_cost(checks, cost: Callable, report: Callable) -> None:
    """Exercise 2: ``duplicate_cost(ledger) -> (twice, inflation)``, recomputed the long way from the rows in the
    sink, on the run above and on a hidden sink where some orders have three rows."""
    function = "duplicate_cost is a function of a ledger"
    checks.that(function, lambda: callable(cost()), expected="def duplicate_cost(ledger): ... return twice, inflation",
                found=lambda: f"{cost()!r} ({type(cost()).__name__})",
                hint="Define a function that takes a ledger and returns the two figures; do not call it here.")
    runs = hidden.Runs(f"{LAB}:duplicate-cost", shown=report, hidden=hidden_sink)

    def pair(fn, run):
        figures = fn(run.ledger)
        if not (isinstance(figures, (tuple, list)) and len(figures) == 2):
            raise ValueError(f"duplicate_cost returned {figures!r}: return the two figures, twice and inflation")
        return figures

    def judge_twice(fn, run):
        twice, right = pair(fn, run)[0], sum(1 for n in _copies(run.rows).values() if n > 1)
        return None if twice == right else ("the number of order ids with two or more rows", f"twice = {twice!r}")

    def judge_inflation(fn, run):
        inflation, right = pair(fn, run)[1], _extra_value(run.rows)
        return None if _money(inflation) == right else (
            "observed revenue minus expected revenue", f"inflation = {inflation!r}" + _sign_note(inflation, right))

    checks.on_runs("twice counts the orders with more than one row", cost, runs, judge_twice, depends_on=function,
                   hint="Look for the ledger line about duplicated orders, not the one about rows or extra copies: "
                        "an order replayed twice has three rows but is one order counted more than once.")
    checks.on_runs("inflation is the value of the extra copies", cost, runs, judge_inflation, depends_on=function,
                   hint="A duplicate makes the observed revenue larger than the expected one: inflation is the "
                        "difference, and it is positive. Which two revenue figures does the ledger give?")


def _money(value):
    """An amount as the ledger counts it (a float to the cent, as lab 03 takes it too); None if it is none."""
    from ...config import CourseError
    from ...ledger import to_amount

    try:
        return to_amount(value)
    except CourseError:
        return None


def _sign_note(value, right) -> str:
    return " (the right amount, the wrong sign: subtract the other way)" if _money(value) == -right != 0 else ""


def _named(value) -> str:
    """What was given for a variant's name: a Variant itself is named as one (its repr is a screenful)."""
    return f"the Variant {value.name!r} itself, not its name" if hasattr(value, "summary") else repr(value)


def check_payments_variant(checks, variant: Callable, crash_and_recover: Callable) -> None:
    """Exercise 3: the chosen variant must be one, and must survive a real crash unharmed: one the learner has not
    seen (a hidden batch and batch size, so the check costs one run, as before it had hidden runs).
    ``crash_and_recover(name, **options)`` runs the experiment (the lab passes m01.crash_and_recover with its lesson)."""
    checks.that("payments_variant names a consumer variant", lambda: isinstance(variant(), str) and variant() in VARIANTS,
                expected=f"one of {', '.join(VARIANTS)}", found=lambda: _named(variant()),
                hint="Use the name exactly as it appears in m01.VARIANTS.")
    runs = hidden.Runs(f"{LAB}:payments", hidden=lambda rng: crash_and_recover(variant(), **hidden_crash(rng)).ledger)
    checks.on_runs("the payments consumer survives a crash with nothing lost or duplicated", variant, runs,
                   judge=lambda name, ledger: None if ledger.verdict == "exactly-once" else
                   ("verdict: exactly-once", ledger.verdict_line()),
                   hint="Which steps of this variant can end up disagreeing after a crash? "
                        "Compare the table in section 8 of the lesson.",
                   depends_on="payments_variant names a consumer variant")
