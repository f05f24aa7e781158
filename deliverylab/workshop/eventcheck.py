"""Every event is checked before the board or ``workshop join`` uses it: who sent it and when come from Kafka, every
other field must have the type and range the course's kernels send, and text is shown as text.

Who: the topic it was read from. Each learner writes to her own board topic, ``xo._board.<learner>``, and on a class
broker only she may write there (stack/classauth.py), so the ``learner`` field an event carries is ignored.
When: the broker's clock. Board topics stamp every record when the broker appends it (LogAppendTime), so the ``at``
field is ignored too; a record the broker did not stamp, or one dated more than FUTURE ahead of the reader's
clock, is skipped.

What is skipped is counted by reason (:class:`Tally`) and shown in one line, never raised: one learner's broken
kernel (or a learner typing events by hand) never stops the board of the whole class.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime, timedelta, timezone

from ..stack.classauth import BOARD_TOPIC_PREFIX

KINDS = ("hello", "progress", "check", "verdict")
#: the ledger's verdicts (ledger.VERDICTS)
VERDICTS = ("at-most-once", "at-least-once", "exactly-once", "lost and duplicated")
STATUSES = ("PASS", "FAIL")
VERSION = 1
#: module and lesson names, learner ids: what the course itself uses (lower case, digits, dashes)
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
MACHINE = re.compile(r"[0-9a-f]{1,64}")
BOARD_TOPIC = re.compile(re.escape(BOARD_TOPIC_PREFIX) + r"([a-z0-9][a-z0-9-]{0,62})")
#: how far ahead of the reader's clock a broker's timestamp may be (two machines' clocks differ a little)
FUTURE = timedelta(seconds=60)
LONGEST_TEXT = 300
MOST_CHECKS = 1000
MOST_ORDERS = 10 ** 9
#: Kafka's timestamp type of a record the broker stamped (kafka-python's ConsumerRecord.timestamp_type)
LOG_APPEND_TIME = 1

MALFORMED = "malformed"
UNSTAMPED = "not stamped by the broker"
FUTURE_DATED = "dated in the future"
NOT_ON_ROSTER = "from learners not on the roster"


class Skipped(ValueError):
    """An event that is not used; its reason is one of this module's reasons."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Tally:
    """Skipped events, counted by reason."""

    def __init__(self):
        self.reasons: Counter = Counter()

    def add(self, reason: str, n: int = 1) -> None:
        self.reasons[reason] += n

    def merge(self, other: "Tally") -> None:
        self.reasons.update(other.reasons)

    @property
    def total(self) -> int:
        return sum(self.reasons.values())

    def line(self) -> str | None:
        """``3 events skipped: 2 malformed, 1 dated in the future`` (None when nothing was skipped)."""
        if not self.total:
            return None
        parts = ", ".join(f"{n} {reason}" for reason, n in self.reasons.most_common())
        return f"{self.total} event{'s' if self.total != 1 else ''} skipped: {parts}"


def learner_of(topic: str) -> str | None:
    """The learner whose board topic ``topic`` is (None for any other topic)."""
    found = BOARD_TOPIC.fullmatch(topic)
    return found.group(1) if found else None


def shown(text: object, limit: int = LONGEST_TEXT) -> str:
    """``text`` as it may appear on a terminal: every control character (an escape sequence's ESC, a bell, a
    carriage return, Unicode's direction overrides) written out as its escape, and at most ``limit`` characters."""
    out = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))
    return out if len(out) <= limit else out[:limit - 1] + "…"


def _integer(value, least: int, most: int) -> bool:
    return type(value) is int and least <= value <= most


def _text(value, pattern: re.Pattern | None = None) -> bool:
    return isinstance(value, str) and 0 < len(value) <= LONGEST_TEXT and (pattern is None or bool(pattern.fullmatch(value)))


def _optional(item: dict, key: str, ok) -> bool:
    """A field an event may leave out; only a quiz, machine or host may also be null."""
    if key not in item:
        return True
    if item[key] is None:
        return key in ("quiz", "machine", "host")
    return ok(item[key])


def _quiz(value) -> bool:
    return (isinstance(value, list) and len(value) == 2 and _integer(value[1], 1, 100)
            and _integer(value[0], 0, value[1]))


def _fields_ok(item: dict) -> bool:
    kind = item.get("kind")
    if type(item.get("v")) is not int or item["v"] != VERSION or kind not in KINDS:
        return False
    if not _text(item.get("module"), NAME) or not _optional(item, "lesson", lambda v: _text(v, NAME)):
        return False
    if not (_optional(item, "machine", lambda v: _text(v, MACHINE)) and _optional(item, "host", _text)):
        return False
    if kind in ("hello", "progress"):
        return (_optional(item, "lesson_complete", lambda v: type(v) is bool)
                and _optional(item, "lab_complete", lambda v: type(v) is bool)
                and _optional(item, "checks_passed", lambda v: _integer(v, 0, MOST_CHECKS))
                and _optional(item, "quiz", _quiz))
    if kind == "check":
        return _text(item.get("description")) and item.get("status") in STATUSES
    return (item.get("verdict") in VERDICTS
            and all(_integer(item.get(k), 0, MOST_ORDERS) for k in ("produced", "lost", "duplicated")))


#: the fields each kind may carry (everything else an event holds is dropped)
FIELDS = {"hello": ("lesson_complete", "checks_passed", "lab_complete", "quiz"),
          "progress": ("lesson_complete", "checks_passed", "lab_complete", "quiz"),
          "check": ("description", "status"), "verdict": ("verdict", "produced", "lost", "duplicated")}


def check_event(item: object, learner: str, at: datetime) -> dict:
    """The event ``item`` (decoded JSON) as the board uses it, from ``learner`` at ``at``; Skipped when any field
    is not what the course's kernels send."""
    if not isinstance(item, dict) or not _fields_ok(item):
        raise Skipped(MALFORMED)
    kept = {k: item[k] for k in ("kind", "module", "lesson", "machine", "host", *FIELDS[item["kind"]]) if k in item}
    kept.setdefault("lesson", item["module"])
    return {**kept, "v": VERSION, "learner": learner, "at": at.isoformat(timespec="seconds")}


def check_record(record, now: datetime | None = None) -> dict:
    """One record of a board topic (a kafka-python ConsumerRecord) as an event, or Skipped with the reason."""
    learner = learner_of(record.topic)
    if learner is None:
        raise Skipped(MALFORMED)
    if record.timestamp_type != LOG_APPEND_TIME or not isinstance(record.timestamp, int):
        raise Skipped(UNSTAMPED)
    at = datetime.fromtimestamp(record.timestamp / 1000, timezone.utc)
    if at > (now or datetime.now(timezone.utc)) + FUTURE:
        raise Skipped(FUTURE_DATED)
    try:
        item = json.loads(record.value or b"")
    except (ValueError, UnicodeDecodeError):
        raise Skipped(MALFORMED) from None
    return check_event(item, learner, at)
