"""Hidden runs: a lab's check judges the learner's code on runs the learner has not seen.

A check that replays only the run the learner just watched passes anything that is true of that
run: a number typed in from a printout, a rule that happens to hold for the demo's data (one order
per customer, an empty table, a clean stop where two logs agree), a verdict that depended on a race.
So every exercise declares its hidden runs next to the run it shows::

    runs = hidden.Runs("02-anatomy-lab:behind", shown=lambda: pipe,
                       hidden=lambda rng: stopped_pipeline(lesson, orders=rng.randint(40, 90), crashed=True))
    checks.on_runs("records_behind counts every order the query has not read", lambda: records_behind, runs,
                   judge=lambda fn, p: None if fn(p) == lag(p) else (f"{lag(p)} records", f"{fn(p)}"),
                   hint="Which checkpoint file says how far the query has got?")

``hidden(rng)`` builds one hidden run from a ``random.Random`` seeded with the exercise's seed, so
a run is the same every time for one seed (a failure can be reproduced) and differs from the run
shown. Where a check judges a number, the lab asks for a *function* and the check calls it on
every run. ``judge(answer, run)`` says what is wrong on one run, as ``(expected, found)``, or None.

Each run is built once and kept, its error too, so the checks of one exercise share one experiment
(a learner's pipeline that fails runs once, not once per check).

Seeds: each exercise draws its own, once per kernel, from the system's random source; no stored
output shows it, and a PASS line is the same whatever it is. A FAIL on a hidden run names its seed,
and ``%env DELIVERYLAB_HIDDEN_SEED=<seed>`` (or the variable set before the kernel starts) makes
every exercise use that one, to repeat it.
"""
from __future__ import annotations

import os
import random
from typing import Any, Callable

from ..config import CourseError

SEED_ENV = "DELIVERYLAB_HIDDEN_SEED"
#: What a FAIL on a hidden run adds when the same answer was right on the run shown.
COPIED = ("right on the run above, wrong on this one: compute it from what the run gives you; a value copied "
          "from a printout, or a rule that holds only for the demo's data, fails here")

_drawn: dict[str, int] = {}


def seed_for(exercise: str) -> int:
    """The exercise's seed: DELIVERYLAB_HIDDEN_SEED if set, else one drawn for this kernel."""
    fixed = os.environ.get(SEED_ENV, "").strip()
    if fixed:
        if not fixed.isdigit():
            raise CourseError(f"{SEED_ENV}={fixed!r}: a seed is a whole number, such as the one a FAIL line names.")
        return int(fixed)
    if exercise not in _drawn:
        _drawn[exercise] = random.SystemRandom().randrange(1000, 100000)
    return _drawn[exercise]


class Run:
    """One run a check judges: built on first use, then kept (its error too)."""

    def __init__(self, label: str, seed: int | None, make: Callable[[], Any]):
        self.label, self.seed, self._make = label, seed, make
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None

    @property
    def hidden(self) -> bool:
        return self.seed is not None

    def value(self) -> Any:
        if not self._done:
            try:
                self._value = self._make()
            except Exception as error:  # noqa: BLE001 - kept, and raised again to every check that asks
                self._error = error
            self._done = True
        if self._error is not None:
            raise self._error
        return self._value

    def where(self) -> str:
        if not self.hidden:
            return self.label
        return f"{self.label} (seed {self.seed}; `%env {SEED_ENV}={self.seed}` repeats it)"


class Runs:
    """The run the learner watched (``shown``, optional) and ``count`` hidden runs of one exercise."""

    def __init__(self, exercise: str, hidden: Callable[[random.Random], Any], shown: Callable[[], Any] | None = None,
                 count: int = 1):
        self.exercise = exercise
        self.seed = seed_for(exercise)
        self.runs: list[Run] = [Run("the run above", None, shown)] if shown is not None else []
        for i in range(count):
            seed = self.seed + i
            label = "a hidden run" if count == 1 else f"hidden run {i + 1} of {count}"
            self.runs.append(Run(label, seed, lambda seed=seed: hidden(random.Random(seed))))

    def __iter__(self):
        return iter(self.runs)

    @property
    def shown(self) -> Run | None:
        return next((run for run in self.runs if not run.hidden), None)

    def hidden_runs(self) -> list[Run]:
        return [run for run in self.runs if run.hidden]


def judge_runs(answer: Any, runs: Runs, judge: Callable[[Any, Any], tuple[str, str] | None]) -> list[tuple[str, str]] | None:
    """None when ``judge(answer, value)`` finds nothing wrong on any run; else the detail lines of a FAIL on the
    first run where it does (``on:`` names the run and its seed). An unfinished TODO is raised as it is."""
    from . import _is_todo_error, _short

    right_where_shown = False
    for run in runs:
        try:
            problem = judge(answer, run.value())
        except Exception as error:
            if _is_todo_error(error):
                raise
            return [("on", run.where()), ("found", f"it raised {type(error).__name__}: {_short(str(error))}")]
        if problem is None:
            right_where_shown = right_where_shown or not run.hidden
            continue
        expected, found = problem
        details = [("on", run.where()), ("expected", str(expected)), ("found", str(found))]
        if run.hidden and right_where_shown:
            details.append(("note", COPIED))
        return details
    return None


_kept: dict = {}  # key -> (the answer's objects, kept alive with it; the hidden run; its error)


def once(key: tuple, objects: tuple, make: Callable[[], Any]) -> Any:
    """The hidden run ``make()`` built once for ``key`` (a lab keys it by exercise, the answer's objects' ids and the
    seed; ``objects`` are kept alive with it so an id is never reused), its error kept and raised again too."""
    if key not in _kept:
        try:
            _kept[key] = (objects, make(), None)
        except Exception as error:  # noqa: BLE001 - kept, and raised again to every check that asks
            _kept[key] = (objects, None, error)
    _, value, error = _kept[key]
    if error is not None:
        raise error
    return value
