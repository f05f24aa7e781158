"""Lab 01's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Every answer is passed as a lambda, so a check whose exercise is not done yet says SKIP.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable

from .consumers import VARIANTS


def check_crash_report(checks, report: Callable, alo: Callable) -> None:
    """Exercise 1: the at-least-once consumer, crashed between its steps and reconciled."""
    checks.is_type("alo is a ledger", alo, "Ledger",
                   hint="crash_and_recover returns a report; the ledger is one of its attributes.")
    checks.equal("the consumer that crashed was write_then_commit", lambda: report().variant, "write_then_commit",
                  hint="Check the first argument you passed to crash_and_recover.")
    checks.that("no order was lost", lambda: alo().lost == 0,
                expected="0 lost orders", found=lambda: f"{alo().lost} lost",
                hint="Which step runs first in m01.source('write_then_commit')?")
    checks.that("some orders were written twice", lambda: alo().duplicated > 0,
                expected="at least one duplicated order", found=lambda: f"{alo().duplicated} duplicated",
                hint="Was it crashed between its two steps, in a batch it had polled? "
                     "report.crash_run.line() says where it died; crash_and_recover's defaults do that.")


def _copies(rows) -> Counter:
    return Counter(order_id for order_id, _ in rows)


def _extra_value(rows):
    amounts = dict(rows)
    return sum(amounts[order_id] * (n - 1) for order_id, n in _copies(rows).items() if n > 1)


def check_duplicate_cost(checks, report: Callable, twice: Callable, inflation: Callable) -> None:
    """Exercise 2: recomputes both figures the long way, from the rows in the sink."""
    checks.that("twice counts the orders with more than one row",
                lambda: twice() == sum(1 for n in _copies(report().rows).values() if n > 1),
                expected="the number of order ids with two or more rows", found=lambda: f"twice = {twice()}",
                hint="Look for the ledger line about duplicated orders, not the one about rows or extra copies.")
    checks.that("inflation is the value of the extra copies",
                lambda: _money(inflation()) == _extra_value(report().rows),
                expected="observed revenue minus expected revenue",
                found=lambda: f"inflation = {inflation()!r}" + _sign_note(inflation(), _extra_value(report().rows)),
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
    """Exercise 3: the chosen variant must be one, and must survive a real crash unharmed.

    ``crash_and_recover(name)`` runs the experiment (the lab passes m01.crash_and_recover).
    """
    checks.that("payments_variant names a consumer variant", lambda: isinstance(variant(), str) and variant() in VARIANTS,
                expected=f"one of {', '.join(VARIANTS)}", found=lambda: _named(variant()),
                hint="Use the name exactly as it appears in m01.VARIANTS.")
    checks.equal("the payments consumer survives a crash with nothing lost or duplicated",
                 lambda: crash_and_recover(variant()).ledger.verdict, "exactly-once",
                 hint="Which steps of this variant can end up disagreeing after a crash? "
                      "Compare the table in section 8 of the lesson.",
                 depends_on="payments_variant names a consumer variant")
