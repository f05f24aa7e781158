"""The learner's own progress: which checks passed and how the quizzes went.

Everything lives in one small SQLite file, ``<state>/progress.db`` (``.state/`` unless
DELIVERYLAB_STATE says otherwise). SQLite is used because two notebooks in two kernels
may write at the same moment: each write is a short transaction, and a writer that
finds the file busy waits a few seconds instead of failing.

Four things are recorded, always for the current learner (settings().learner):

* a lesson run to its last cell, from ``lesson.complete()``;
* a check that passed (module, description), from ``checks.Checks``;
* a lab run in which every check passed, from ``Checks.summary()``;
* every finished quiz attempt (module, score, total), from ``quiz.Quiz``.

After each record, the module's progress also goes to the class board when the course
uses a shared broker (workshop/events.py; nothing happens otherwise, and it never fails here).

``python -m deliverylab progress`` prints the table from :func:`table`. A module counts
as done when everything it asks for is met: its lesson was run to the end; if it has a
lab, one run of the lab ended with every check passing; if it has a quiz, the best score
is at least 80%.
"""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from . import course
from .config import settings
from .course import module_id

#: The course's modules in teaching order (course.MODULES is the one list).
MODULES: tuple[str, ...] = tuple(course.MODULES)

#: Share of the quiz a learner needs for the module to count as done.
QUIZ_PASS_MARK = 0.8

_SCHEMA = """
CREATE TABLE IF NOT EXISTS passed_checks (
    learner     TEXT NOT NULL,
    module      TEXT NOT NULL,
    description TEXT NOT NULL,
    passed_at   TEXT NOT NULL,
    PRIMARY KEY (learner, module, description)
);
CREATE TABLE IF NOT EXISTS completed_lessons (
    learner      TEXT NOT NULL,
    module       TEXT NOT NULL,
    completed_at TEXT NOT NULL,
    PRIMARY KEY (learner, module)
);
CREATE TABLE IF NOT EXISTS completed_labs (
    learner      TEXT NOT NULL,
    module       TEXT NOT NULL,
    completed_at TEXT NOT NULL,
    PRIMARY KEY (learner, module)
);
CREATE TABLE IF NOT EXISTS quiz_attempts (
    learner     TEXT NOT NULL,
    module      TEXT NOT NULL,
    score       INTEGER NOT NULL,
    total       INTEGER NOT NULL,
    recorded_at TEXT NOT NULL
);
"""


def store_path() -> Path:
    """Where the progress file lives for the current settings."""
    return settings().state / "progress.db"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@contextmanager
def _connection() -> Iterator[sqlite3.Connection]:
    """One short transaction on the progress file; commits on success, always closes."""
    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=10)
    try:
        connection.executescript(_SCHEMA)
        with connection:
            yield connection
    finally:
        connection.close()


def _tell_the_board(module: str) -> None:
    """Send the module's progress to the class board (shared-broker mode only; never raises)."""
    from .workshop import events

    if events.enabled():
        try:
            events.progress_changed(status(module))
        except Exception:  # noqa: BLE001 - the board must never break recording progress
            pass


def record_check(module: str, description: str) -> None:
    """Remember that a check passed. The first time it passed is kept."""
    with _connection() as db:
        db.execute(
            "INSERT OR IGNORE INTO passed_checks VALUES (?, ?, ?, ?)",
            (settings().learner, module_id(module), description, _now()),
        )
    _tell_the_board(module)


def record_lesson_complete(module: str) -> None:
    """Remember that the learner ran the module's lesson to its last cell."""
    with _connection() as db:
        db.execute("INSERT OR REPLACE INTO completed_lessons VALUES (?, ?, ?)",
                   (settings().learner, module_id(module), _now()))
    _tell_the_board(module)


def lesson_complete(module: str) -> bool:
    with _connection() as db:
        row = db.execute("SELECT 1 FROM completed_lessons WHERE learner = ? AND module = ?",
                         (settings().learner, module_id(module))).fetchone()
    return row is not None


def record_lab_complete(module: str) -> None:
    """Remember that a run of the module's lab ended with every check passing."""
    with _connection() as db:
        db.execute(
            "INSERT OR REPLACE INTO completed_labs VALUES (?, ?, ?)",
            (settings().learner, module_id(module), _now()),
        )
    _tell_the_board(module)


def record_quiz(module: str, score: int, total: int) -> None:
    """Remember one finished quiz attempt."""
    if total <= 0 or not 0 <= score <= total:
        raise ValueError(f"a quiz score must be between 0 and the total; got {score} / {total}")
    with _connection() as db:
        db.execute(
            "INSERT INTO quiz_attempts VALUES (?, ?, ?, ?, ?)",
            (settings().learner, module_id(module), score, total, _now()),
        )
    _tell_the_board(module)


def passed_checks(module: str) -> list[str]:
    """Descriptions of the checks that have passed for a module, oldest first."""
    with _connection() as db:
        rows = db.execute(
            "SELECT description FROM passed_checks WHERE learner = ? AND module = ? "
            "ORDER BY passed_at, description",
            (settings().learner, module_id(module)),
        ).fetchall()
    return [description for (description,) in rows]


def lab_complete(module: str) -> bool:
    """True once a run of the module's lab ended with every check passing."""
    with _connection() as db:
        row = db.execute(
            "SELECT 1 FROM completed_labs WHERE learner = ? AND module = ?",
            (settings().learner, module_id(module)),
        ).fetchone()
    return row is not None


def best_quiz(module: str) -> tuple[int, int] | None:
    """The best quiz attempt as (score, total), or None if the quiz was never finished."""
    with _connection() as db:
        row = db.execute(
            "SELECT score, total FROM quiz_attempts WHERE learner = ? AND module = ? "
            "ORDER BY CAST(score AS REAL) / total DESC, score DESC LIMIT 1",
            (settings().learner, module_id(module)),
        ).fetchone()
    return (row[0], row[1]) if row else None


@dataclass(frozen=True)
class ModuleStatus:
    """One row of the progress table."""

    module: str
    checks_passed: int
    lab_complete: bool
    quiz_best: tuple[int, int] | None
    has_lab: bool
    has_quiz: bool
    lesson_complete: bool = False

    @property
    def quiz_passed(self) -> bool:
        if self.quiz_best is None:
            return False
        score, total = self.quiz_best
        return score >= QUIZ_PASS_MARK * total

    @property
    def done(self) -> bool:
        """The lesson ran to its end, and the lab and the quiz (where the module has them) are passed."""
        lab_ok = self.lab_complete or not self.has_lab
        quiz_ok = self.quiz_passed or not self.has_quiz
        return self.lesson_complete and lab_ok and quiz_ok


def status(module: str) -> ModuleStatus:
    """Everything the table shows about one module."""
    module = module_id(module)
    return ModuleStatus(
        module=module,
        checks_passed=len(passed_checks(module)),
        lab_complete=lab_complete(module),
        quiz_best=best_quiz(module),
        has_lab=course.has_lab(settings().root, module),
        has_quiz=course.has_quiz(module),
        lesson_complete=lesson_complete(module),
    )


def _row(state: ModuleStatus) -> tuple[str, ...]:
    lesson = "run" if state.lesson_complete else "not yet"
    checks = str(state.checks_passed) + (" (lab complete)" if state.lab_complete else "")
    if state.quiz_best is not None:
        quiz = f"{state.quiz_best[0]} / {state.quiz_best[1]}"
    else:
        quiz = "not taken" if state.has_quiz else "-"
    return (state.module, lesson, checks if state.has_lab else "-", quiz, "yes" if state.done else "not yet")


def table() -> str:
    """The learner's progress as a plain-text table, one row per module."""
    header = ("module", "lesson", "checks passed", "quiz best", "done?")
    rows = [header] + [_row(status(module)) for module in MODULES]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    lines.append("")
    lines.append(
        f"done = the lesson was run to its end, the lab ended once with every check passing, and the "
        f"quiz best is at least {QUIZ_PASS_MARK:.0%} (for modules that have a lab and a quiz)."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m deliverylab progress``: print the progress table."""
    args = list(argv or [])
    if args[:1] == ["progress"]:
        args = args[1:]
    if args:
        print("usage: python -m deliverylab progress")
        return 2
    print(f"progress of learner {settings().learner!r} (stored in {store_path()})")
    print()
    print(table())
    return 0
