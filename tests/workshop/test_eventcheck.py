"""Every event is checked before it is used (workshop/eventcheck.py): who sent it is the topic it was read from,
when is the broker's stamp, every other field has the type and range the course's kernels send; what fails is
counted by reason, and text is shown as text."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.workshop import eventcheck

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)


def record(value, topic="xo._board.ada", at=NOW, timestamp_type=1):
    body = value if isinstance(value, bytes) else json.dumps(value).encode()
    return SimpleNamespace(topic=topic, value=body, timestamp=int(at.timestamp() * 1000), timestamp_type=timestamp_type)


def progress(**fields):
    return {"v": 1, "kind": "progress", "learner": "ada", "module": "01-three-guarantees",
            "lesson": "01-three-guarantees-lab", "machine": "5f0c12ab", "host": "pc-12", "checks_passed": 2,
            "lesson_complete": True, "lab_complete": False, "quiz": [4, 5], "at": "2031-01-01T00:00:00+00:00", **fields}


def reason(rec) -> str:
    with pytest.raises(eventcheck.Skipped) as skipped:
        eventcheck.check_record(rec, now=NOW)
    return skipped.value.reason


def test_the_sender_is_the_topic_and_the_time_is_the_brokers():
    item = eventcheck.check_record(record(progress(learner="bob")), now=NOW)
    assert item["learner"] == "ada"  # the topic's: what the event says is ignored
    assert item["at"] == "2026-03-01T10:00:00+00:00"  # the broker's stamp, not the event's 2031
    assert item["checks_passed"] == 2 and item["quiz"] == [4, 5] and "cycle" not in item


@pytest.mark.parametrize("fields", [
    {"checks_passed": "many"}, {"checks_passed": -1}, {"checks_passed": True}, {"quiz": [6, 5]}, {"quiz": "5/6"},
    {"lesson_complete": "yes"}, {"kind": "party"}, {"v": 2}, {"module": "Ada\x1b[2J"}, {"module": 3},
    {"machine": "not hex"}, {"host": "x" * 400}, {"lesson": ""},
])
def test_a_field_of_the_wrong_type_or_range_makes_the_event_malformed(fields):
    assert reason(record(progress(**fields))) == eventcheck.MALFORMED


def test_checks_and_verdicts_are_checked_too():
    check = {"v": 1, "kind": "check", "module": "02-anatomy", "description": "the query has a checkpoint",
             "status": "FAIL"}
    assert eventcheck.check_record(record(check), now=NOW)["status"] == "FAIL"
    assert reason(record({**check, "status": "MAYBE"})) == eventcheck.MALFORMED
    verdict = {"v": 1, "kind": "verdict", "module": "01-three-guarantees", "verdict": "exactly-once", "produced": 600,
               "lost": 0, "duplicated": 0}
    assert eventcheck.check_record(record(verdict), now=NOW)["verdict"] == "exactly-once"
    assert reason(record({**verdict, "lost": "0"})) == eventcheck.MALFORMED
    assert reason(record({**verdict, "verdict": "perfect"})) == eventcheck.MALFORMED
    assert eventcheck.VERDICTS == ledger.VERDICTS


def test_records_the_broker_did_not_stamp_or_dated_ahead_or_not_json_are_skipped():
    assert reason(record(progress(), timestamp_type=0)) == eventcheck.UNSTAMPED
    assert reason(record(progress(), at=NOW + timedelta(days=365 * 5))) == eventcheck.FUTURE_DATED
    assert eventcheck.check_record(record(progress(), at=NOW + timedelta(seconds=30)), now=NOW)  # clocks differ a little
    assert reason(record(b"\xff not json")) == eventcheck.MALFORMED
    assert reason(record([1, 2])) == eventcheck.MALFORMED
    assert reason(record(progress(), topic="xo.ada.orders")) == eventcheck.MALFORMED


def test_the_skipped_are_one_line_by_reason():
    tally = eventcheck.Tally()
    assert tally.line() is None
    tally.add(eventcheck.MALFORMED, 2)
    tally.add(eventcheck.FUTURE_DATED)
    assert tally.line() == "3 events skipped: 2 malformed, 1 dated in the future"


def test_text_is_shown_as_text_never_as_terminal_control_codes():
    assert eventcheck.shown("pc\x1b[2J\x1b[H\x07-12") == "pc\\x1b[2J\\x1b[H\\x07-12"
    assert eventcheck.shown("ada\u202eevil") == "ada\\u202eevil"  # a direction override, written out
    assert eventcheck.shown("Ada ✓ q5/6") == "Ada ✓ q5/6"
    assert eventcheck.shown("x" * 50, 10) == "x" * 9 + "…"
    assert eventcheck.learner_of("xo._board.ada") == "ada" and eventcheck.learner_of("xo._board.Ada") is None
    assert eventcheck.learner_of("xo._board.a.b") is None and eventcheck.learner_of("xo.ada._board") is None
