"""The board folds every learner's events into one table: learner by module."""
from datetime import datetime, timezone

import pytest

from deliverylab.config import CourseError
from deliverylab.workshop import board

NOW = datetime(2026, 3, 1, 10, 30, tzinfo=timezone.utc)


def ev(kind, learner, module, at="2026-03-01T10:00:00+00:00", **fields):
    return {"kind": kind, "learner": learner, "module": module, "lesson": module, "at": at,
            "machine": f"m-{learner}", "host": f"pc-{learner}", **fields}


def test_latest_state_per_learner_and_module():
    b = board.Board(roster=["ada", "bob", "cy"])
    b.add_all([
        ev("hello", "ada", "01-three-guarantees", checks_passed=0),
        ev("progress", "ada", "01-three-guarantees", checks_passed=4, lab_complete=True, quiz=[5, 6],
           lesson_complete=True),
        ev("progress", "ada", "01-three-guarantees", checks_passed=3, quiz=[2, 6]),  # an older snapshot, late
        ev("verdict", "ada", "01-three-guarantees", verdict="at-least-once", produced=600, lost=0, duplicated=100),
        ev("verdict", "ada", "01-three-guarantees", verdict="exactly-once", produced=600, lost=0, duplicated=0),
        ev("check", "bob", "02-anatomy", description="the query has a checkpoint", status="FAIL",
           at="2026-03-01T10:15:00+00:00"),
    ])
    cell = b.learners["ada"].modules["01-three-guarantees"]
    assert (cell.checks_passed, cell.quiz, cell.lab_complete, cell.verdict) == (4, (5, 6), True, "exactly-once")
    text = board.render(b, now=NOW)
    assert "L 4✓★ q5/6 EO" in text
    assert "not started (never connected)" in text and "not started: cy" in text
    assert "a check failing: bob" in text and "idle 10+ min: ada, bob" in text
    detail = board.render_module(b, "02-anatomy", now=NOW)
    assert "the query has a checkpoint" in detail and "15m" in detail


def test_a_check_that_passes_again_is_no_longer_failing():
    b = board.Board()
    b.add(ev("check", "bob", "02-anatomy", description="x", status="FAIL"))
    b.add(ev("check", "bob", "02-anatomy", description="x", status="PASS"))
    assert b.learners["bob"].modules["02-anatomy"].failing == []


def test_one_id_on_two_machines_is_flagged():
    b = board.Board()
    b.add(ev("hello", "ada", "00-setup-and-tour"))
    b.add({**ev("hello", "ada", "00-setup-and-tour"), "machine": "m-2", "host": "pc-99"})
    assert "2 machines use this id" in board.render(b, now=NOW)


def test_an_empty_board_says_how_learners_appear():
    assert "setup cell" in board.render(board.Board(), now=NOW)


def test_roster_file_and_module_names(tmp_path):
    roster = tmp_path / "class.txt"
    roster.write_text("# room 2\nbob\nada-l  # Ada L.\n\n")
    assert board.read_roster(str(roster)) == ["ada-l", "bob"]
    roster.write_text("bob\nAda L.\n")  # refused as stack up --class refuses it: both name the same learners
    with pytest.raises(CourseError, match=r"line 2: 'Ada L.' is not a learner id.*e.g. 'ada-l'"):
        board.read_roster(str(roster))
    assert board._module_arg("3") == "03-at-most-once" and board._module_arg("02-anatomy") == "02-anatomy"
    with pytest.raises(CourseError, match="Unknown module"):
        board._module_arg("42")


def test_an_event_that_does_not_fit_is_counted_never_fatal():
    b = board.Board()
    b.add_all([ev("progress", "ada", "01-three-guarantees", checks_passed="many"),
               ev("progress", "ada", "01-three-guarantees", quiz=[1, 0]),
               {"kind": "hello"},
               ev("progress", "bob", "01-three-guarantees", checks_passed=3)])
    assert b.learners["bob"].modules["01-three-guarantees"].checks_passed == 3  # the board goes on
    assert b.skipped.total == 2 and "2 events skipped: 2 malformed" in board.render(b, now=NOW)


def test_a_hosts_escape_sequences_are_shown_as_text():
    b = board.Board()
    b.add(ev("hello", "ada", "00-setup-and-tour"))
    b.add({**ev("hello", "ada", "00-setup-and-tour"), "machine": "m-2", "host": "pc\x1b[2J\x1b]0;owned\x07"})
    text = board.render(b, now=NOW)
    assert "\x1b" not in text and "\x07" not in text and "pc\\x1b[2J\\x1b]0;owned\\x07" in text


def test_with_a_roster_learners_not_on_it_are_counted_not_shown():
    b = board.Board(roster=["ada"])
    b.add_all([ev("hello", "ada", "00-setup-and-tour")] + [ev("hello", f"fake{n}", "00-setup-and-tour") for n in range(300)])
    text = board.render(b, now=NOW)
    assert "fake1" not in text and "300 events skipped: 300 from learners not on the roster" in text
    assert "1 learner(s) on the board" in text


def test_a_board_that_did_not_read_everything_says_so():
    b = board.Board()
    b.add(ev("hello", "ada", "00-setup-and-tour"))
    b.partial = True
    assert "partial: the board did not read every learner's events in time" in board.render(b, now=NOW)
