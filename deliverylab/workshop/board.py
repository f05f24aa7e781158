"""``python -m deliverylab board``: the instructor's live table of the class, learner by module.

It reads every learner's board topic from its beginning (feed.py), so it shows learners who
joined before it started and survives their kernel restarts: every progress event is a full
snapshot of a learner's module, and the board keeps the best of them (checks passed and quiz
scores only grow). The last verdict and the checks failing now follow the latest events. Who sent
an event and when come from Kafka (the topic it is in, the broker's timestamp), every other field is
checked (eventcheck.py), and what is skipped is one line under the table, never an error; text a
learner's kernel sent is shown as text (control characters written out), never run by the terminal.
With a roster, learners not on it are counted, not shown.

    learner  now in                         idle  00  01             02
    ada      02-anatomy-lab                 1m    L   L 4✓★ q5/6 EO  3✓ 1✗ ALO
    bob      01-three-guarantees            14m   L   ·              -
    cy       not started (never connected)  -     -   -              -

Cell: L lesson run to the end · 4✓ checks passed (★ lab complete) · 1✗ a check failing now ·
q5/5 best quiz · EO, ALO, AMO, L+D the last verdict (exactly-once, at-least-once, at-most-once,
lost and duplicated) · "·" lesson opened, nothing else yet · "-" not started.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .. import course
from ..config import CourseError, settings
from . import eventcheck, feed
from .eventcheck import shown

VERDICT_CODES = {"exactly-once": "EO", "at-least-once": "ALO", "at-most-once": "AMO", "lost and duplicated": "L+D"}
IDLE_WARNING_MIN = 10
LEGEND = ("L lesson run; 4✓ checks passed, ★ lab complete; 1✗ a check failing now; q5/6 best quiz; last verdict "
          "EO exactly-once, ALO at-least-once, AMO at-most-once, L+D lost and duplicated; · opened; - not started")


@dataclass
class Cell:
    """One learner in one module."""

    lesson_complete: bool = False
    checks_passed: int = 0
    lab_complete: bool = False
    quiz: tuple[int, int] | None = None
    verdict: str | None = None
    verdict_detail: str = ""
    failing: list[str] = field(default_factory=list)

    def merge_progress(self, item: dict) -> None:
        self.lesson_complete |= bool(item.get("lesson_complete"))
        self.lab_complete |= bool(item.get("lab_complete"))
        self.checks_passed = max(self.checks_passed, int(item.get("checks_passed") or 0))
        quiz = item.get("quiz")
        if isinstance(quiz, list) and len(quiz) == 2 and quiz[1]:
            if self.quiz is None or quiz[0] / quiz[1] > self.quiz[0] / self.quiz[1]:
                self.quiz = (int(quiz[0]), int(quiz[1]))

    def text(self) -> str:
        parts = ["L"] if self.lesson_complete else []
        if self.checks_passed or self.lab_complete:
            parts.append(f"{self.checks_passed}✓" + ("★" if self.lab_complete else ""))
        if self.failing:
            parts.append(f"{len(self.failing)}✗")
        if self.quiz:
            parts.append(f"q{self.quiz[0]}/{self.quiz[1]}")
        if self.verdict:
            parts.append(VERDICT_CODES.get(self.verdict) or shown(self.verdict, 20))
        return " ".join(parts) or "·"


@dataclass
class Learner:
    name: str
    joined: bool = False
    lesson: str | None = None
    last_at: str = ""
    machines: dict[str, str] = field(default_factory=dict)
    modules: dict[str, Cell] = field(default_factory=dict)

    def idle_minutes(self, now: datetime) -> int | None:
        try:
            then = datetime.fromisoformat(self.last_at)
        except ValueError:
            return None
        if then.tzinfo is None:
            then = then.replace(tzinfo=timezone.utc)
        return max(0, int((now - then).total_seconds() // 60))


class Board:
    """The class, folded from its events (checked ones: feed.py; one that still does not fit is counted)."""

    def __init__(self, roster: list[str] | tuple[str, ...] = ()):
        self.learners: dict[str, Learner] = {name: Learner(name) for name in roster}
        self.roster = set(roster)
        self.events = 0
        self.skipped = eventcheck.Tally()
        self.partial = False

    def add(self, item: dict) -> None:
        if self.roster and item["learner"] not in self.roster:
            self.skipped.add(eventcheck.NOT_ON_ROSTER)
            return
        learner = self.learners.setdefault(item["learner"], Learner(item["learner"]))
        learner.joined = True
        self.events += 1
        at = str(item.get("at") or "")
        if at >= learner.last_at:
            learner.last_at = at
            learner.lesson = item.get("lesson") or learner.lesson
        if item.get("machine"):
            learner.machines[item["machine"]] = item.get("host") or "?"
        module = item.get("module")
        if not isinstance(module, str):
            return
        cell = learner.modules.setdefault(module, Cell())
        kind = item.get("kind")
        if kind in ("hello", "progress"):
            cell.merge_progress(item)
        elif kind == "check" and isinstance(item.get("description"), str):
            description = item["description"]
            if item.get("status") == "FAIL" and description not in cell.failing:
                cell.failing.append(description)
            elif item.get("status") == "PASS" and description in cell.failing:
                cell.failing.remove(description)
        elif kind == "verdict":
            cell.verdict = item.get("verdict")
            cell.verdict_detail = (f"produced={item.get('produced')} lost={item.get('lost')} "
                                   f"duplicated={item.get('duplicated')}")

    def add_all(self, items: list[dict]) -> None:
        for item in items:
            try:
                self.add(item)
            except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError):
                self.skipped.add(eventcheck.MALFORMED)

    def read(self, source: "feed.ClassFeed", timeout_s: float) -> None:
        """What ``source`` has now; its skipped records counted here too, and whether it read to the end."""
        before = eventcheck.Tally()
        before.merge(source.tally)
        self.add_all(source.read_available(timeout_s=timeout_s))
        for reason, n in source.tally.reasons.items():
            self.skipped.add(reason, n - before.reasons[reason])
        self.partial = not source.complete

    def modules(self, every: bool = False) -> list[str]:
        """The course's modules in order: all of them, or those any learner has opened."""
        seen = {m for learner in self.learners.values() for m in learner.modules}
        return [m for m in course.MODULES if every or m in seen]


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def _idle(learner: Learner, now: datetime) -> str:
    minutes = learner.idle_minutes(now)
    return "-" if minutes is None else f"{minutes}m"


def render(board: Board, now: datetime | None = None, every_module: bool = False) -> str:
    """The class as text: one row per learner, one column per module."""
    now = now or datetime.now(timezone.utc)
    modules = board.modules(every_module)
    rows = [["learner", "now in", "idle", *(m[:2] for m in modules)]]
    notes = []
    for name in sorted(board.learners):
        learner = board.learners[name]
        if not learner.joined:
            rows.append([name, "not started (never connected)", "-"] + ["-"] * len(modules))
            continue
        cells = [learner.modules[m].text() if m in learner.modules else "-" for m in modules]
        rows.append([shown(name, 63) + (" ⚠" if len(learner.machines) > 1 else ""), shown(learner.lesson or "-", 63),
                     _idle(learner, now), *cells])
        if len(learner.machines) > 1:
            hosts = ", ".join(sorted(shown(h, 64) for h in set(learner.machines.values())))
            notes.append(f"⚠ {shown(name, 63)}: {len(learner.machines)} machines use this id ({hosts}); ask one to "
                         "pick another id")
    joined = sum(1 for learner in board.learners.values() if learner.joined)
    waiting = sorted(n for n, learner in board.learners.items() if not learner.joined)
    failing = sorted(n for n, learner in board.learners.items() if any(c.failing for c in learner.modules.values()))
    idle = sorted(n for n, learner in board.learners.items()
                  if learner.joined and (learner.idle_minutes(now) or 0) >= IDLE_WARNING_MIN)
    summary = [f"{joined} learner(s) on the board, {board.events} events"]
    if waiting:
        summary.append(f"not started: {', '.join(waiting)}")
    if failing:
        summary.append(f"a check failing: {', '.join(failing)}")
    if idle:
        summary.append(f"idle {IDLE_WARNING_MIN}+ min: {', '.join(idle)}")
    below = [line for line in (board.skipped.line(), _partial(board)) if line]
    if not board.learners:
        return "\n".join(["nobody on the board yet: learners appear when they run a lesson's setup cell in "
                          "shared-broker mode", *below])
    return "\n".join(_table(rows) + [""] + notes + ["; ".join(summary), *below, LEGEND])


def _partial(board: Board) -> str | None:
    if not board.partial:
        return None
    return "partial: the board did not read every learner's events in time; what is missing shows at the next refresh"


def render_module(board: Board, module: str, now: datetime | None = None) -> str:
    """One module in detail: a row per learner with the failing check and the whole last verdict."""
    now = now or datetime.now(timezone.utc)
    rows = [["learner", "now in", "idle", "lesson", "checks passed", "failing now", "quiz", "last verdict"]]
    for name in sorted(board.learners):
        learner = board.learners[name]
        cell = learner.modules.get(module)
        if cell is None:
            rows.append([shown(name, 63), shown(learner.lesson or "-", 63), _idle(learner, now) if learner.joined
                         else "-", "not started", "", "", "", ""])
            continue
        quiz = f"{cell.quiz[0]} / {cell.quiz[1]}" if cell.quiz else "-"
        checks = f"{cell.checks_passed}" + (" (lab complete)" if cell.lab_complete else "")
        verdict = shown(f"{cell.verdict} ({cell.verdict_detail})") if cell.verdict else "-"
        rows.append([shown(name, 63), shown(learner.lesson or "-", 63), _idle(learner, now),
                     "run" if cell.lesson_complete else "not yet", checks, shown("; ".join(cell.failing), 60) or "-",
                     quiz, verdict])
    below = [line for line in (board.skipped.line(), _partial(board)) if line]
    return "\n".join([f"module {module}: {course.title(module)}", ""] + _table(rows) + below)


def read_roster(path: str | None) -> list[str]:
    """Learner ids expected in class (so the board can show who has not started): the class broker's roster,
    read and checked as ``stack up --class`` reads it (stack/classauth.py), so both name the same learners."""
    if not path:
        return []
    from ..stack import classauth

    return sorted(classauth.read_roster(Path(path)))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m deliverylab board",
                                     description="The class board: every learner's progress on the shared broker.")
    parser.add_argument("--broker", help="host:port of the class broker (default: the course's broker setting)")
    parser.add_argument("--class", dest="class_broker", action="store_true",
                        help="the class broker this machine started (`stack up --class`), logged in as board")
    parser.add_argument("--module", help="show one module in detail, e.g. 03 or 03-at-most-once")
    parser.add_argument("--all-modules", action="store_true", help="a column for every module, opened or not")
    parser.add_argument("--roster", help="a file of expected learner ids, one per line (shows who has not started)")
    parser.add_argument("--once", action="store_true", help="print the board once and exit")
    parser.add_argument("--refresh", type=float, default=2.0, help="seconds between updates (default 2)")
    return parser


def _module_arg(text: str | None) -> str | None:
    if not text:
        return None
    for module in course.MODULES:
        if module == text or module.startswith(text.zfill(2) + "-"):
            return module
    raise CourseError(f"Unknown module {text!r}.{course.did_you_mean(text, course.MODULES)} "
                      f"Modules: {', '.join(course.MODULES)}.")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    module = _module_arg(args.module)
    from ..stack import classbroker, kafka

    login = classbroker.board_login() if args.class_broker else None
    bootstrap = login.broker if login else (args.broker or settings().bootstrap)
    board = Board(read_roster(args.roster))
    if not kafka.answers(bootstrap, login=login):
        raise CourseError(f"No Kafka broker answers at {bootstrap}. Start the class broker (docs/instructor-guide.md), "
                          "or give its address with --broker HOST:PORT.")

    def show() -> str:
        return render_module(board, module) if module else render(board, every_module=args.all_modules)

    with feed.ClassFeed(bootstrap, login=login) as source:
        board.read(source, timeout_s=10)
        if args.once:
            print(show())
            return 0
        live = sys.stdout.isatty()
        drawn, last_draw = None, 0.0
        try:
            while True:
                board.read(source, timeout_s=1)
                text = show()
                if text != drawn or (live and time.monotonic() - last_draw > 30):
                    header = (f"class board · {bootstrap} · {len(source.partitions)} board topic(s) · "
                              f"{datetime.now():%H:%M:%S} · Ctrl+C to stop")
                    print(("\x1b[2J\x1b[H" if live else "\n") + header + "\n\n" + text, flush=True)
                    drawn, last_draw = text, time.monotonic()
                time.sleep(max(0.2, args.refresh))
        except KeyboardInterrupt:
            return 0
