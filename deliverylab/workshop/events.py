"""What a learner's kernel tells the class board, and how it gets there without slowing a lesson.

Only in shared-broker mode (settings().shared): otherwise every function here returns at once
and nothing is sent. The progress store, the checks and the ledger call in after they have
done their own work (progress.py, checks/, ledger.py); setup says hello (presence.py).

An event is one small JSON object on the learner's own board topic, ``xo._board.<learner>`` (one partition;
on a class broker admin creates it and only she may write it, stack/classroster.py; on a broker without logins
her kernel creates it). The board takes who sent it from the topic and when from the broker's own timestamp
(the topic stamps every record when it is appended, LogAppendTime); ``learner`` and ``at`` stay in the event
for a reader of the raw topic only. eventcheck.py says what every other field must be:

    {"v": 1, "kind": "progress", "learner": "ada", "module": "03-at-most-once",
     "lesson": "03-at-most-once-lab", "at": "2026-01-01T10:00:00+00:00", "machine": "5f0c...",
     "host": "pc-12", ...}

    kind      what else it carries
    hello     (setup ran) the module's progress too, so a board catches up after a restart
    progress  lesson_complete, checks_passed, lab_complete, quiz: [score, total] or null
    check     description, status: PASS or FAIL
    verdict   verdict, produced, lost, duplicated

Progress events are snapshots of the learner's own progress store, never increments: a lost
or repeated event does no harm, the next one carries everything.

Sending happens on a background thread with short timeouts. The lesson never waits for the
broker; a failure is reported once, as a warning, in the next cell that publishes.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import queue
import socket
import threading
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

from ..config import settings
from ..course import module_id

VERSION = 1
SEND_TIMEOUT_S = 3.0
#: After a failed send, events are dropped for this long instead of piling up behind a dead broker.
BACKOFF_S = 30.0
QUEUE_SIZE = 500


def enabled() -> bool:
    """True in shared-broker mode: only then does anything go to the class board. The course's own
    three-broker cluster on this machine (lesson 09 points DELIVERYLAB_BROKER at it) is no workshop."""
    from ..stack import brokers

    try:
        s = settings()
        return s.shared and s.bootstrap != brokers.bootstrap()
    except Exception:  # noqa: BLE001 - a bad setting is reported by setup, never by a publish
        return False


def machine_id() -> str:
    """A stable id for this copy of the course on this machine (two learners' machines differ)."""
    try:
        machine = Path("/etc/machine-id").read_text().strip()
    except OSError:
        machine = ""
    text = f"{machine or socket.gethostname()}|{settings().root}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


_lesson: dict[str, str] = {}  # the lesson this kernel set up last (a kernel runs one lesson)


def set_current_lesson(name: str) -> None:
    _lesson["name"] = name


def current_lesson() -> str | None:
    return _lesson.get("name")


def event(kind: str, module: str, **fields) -> dict:
    """One event of this learner, for ``module`` (a module id, lesson or lab name)."""
    base = {"v": VERSION, "kind": kind, "learner": settings().learner, "module": module_id(module),
            "lesson": current_lesson() or module, "at": now(), "machine": machine_id(),
            "host": socket.gethostname()}
    base.update(fields)
    return base


def progress_fields(status) -> dict:
    """The snapshot fields of a progress.ModuleStatus."""
    return {"lesson_complete": status.lesson_complete, "checks_passed": status.checks_passed,
            "lab_complete": status.lab_complete, "quiz": list(status.quiz_best) if status.quiz_best else None}


def publish(kind: str, module: str, **fields) -> None:
    """Queue one event for the class board. Never raises, never waits; nothing outside shared mode."""
    if not enabled():
        return
    try:
        _report_problem()
        _sender(settings().bootstrap).put(event(kind, module, **fields))
    except Exception as error:  # noqa: BLE001 - the board must never break a lesson
        _warn(f"the class board did not get this result ({error}); your progress is still saved on this machine")


def progress_changed(status) -> None:
    """progress.py calls this after recording: the module's whole progress, as a snapshot."""
    publish("progress", status.module, **progress_fields(status))


def check_result(module: str, description: str, status: str) -> None:
    """checks/ calls this for every PASS and FAIL of a lab check."""
    if status in ("PASS", "FAIL"):
        publish("check", module, description=description, status=status)


_last_verdict: dict[str, tuple] = {}


def verdict_seen(verdict: str, produced: int, lost: int, duplicated: int) -> None:
    """ledger.py calls this when a verdict line is made; the same verdict twice in a row is sent once."""
    lesson = current_lesson()
    if lesson is None or not enabled():
        return
    key = (verdict, produced, lost, duplicated)
    if _last_verdict.get(lesson) == key:
        return
    _last_verdict[lesson] = key
    publish("verdict", lesson, verdict=verdict, produced=produced, lost=lost, duplicated=duplicated)


# --------------------------------------------------------------------------- sending


class _Sender:
    """One background thread per broker address, with its own producer."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_SIZE)
        self.producer = None
        self.topics: set[str] = set()  # board topics known to exist (one per learner id this kernel sent as)
        self.failed_at = 0.0
        self.thread = threading.Thread(target=self._run, name="class-board-events", daemon=True)
        self.thread.start()

    def put(self, item: dict) -> None:
        try:
            self.queue.put_nowait(item)
        except queue.Full:  # the broker has been unreachable for a long while: drop, the next snapshot heals
            pass

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            try:
                if time.monotonic() - self.failed_at >= BACKOFF_S:
                    _send_one(self, item)
            except Exception as error:  # noqa: BLE001 - remembered, reported once in the learner's next cell
                self.failed_at = time.monotonic()
                self._close()
                _problems.append(f"{type(error).__name__}: {error}"[:200])
            finally:
                self.queue.task_done()

    def _close(self) -> None:
        if self.producer is not None:
            try:
                self.producer.close(timeout=1)
            except Exception:  # noqa: BLE001
                pass
            self.producer = None


def _send_one(sender: _Sender, item: dict) -> None:
    """Send one event and wait (briefly) for the broker's acknowledgement."""
    from ..stack.classauth import board_topic
    from ..stack.classroster import BOARD_TOPIC_CONFIG

    from ..stack import kafka

    topic = board_topic(item["learner"])
    if topic not in sender.topics:  # a broker without logins creates no topic by itself; a class broker's admin did
        kafka.ensure_topic(sender.bootstrap, topic, partitions=1, config=dict(BOARD_TOPIC_CONFIG))
        sender.topics.add(topic)
    if sender.producer is None:
        from kafka import KafkaProducer

        timeout_ms = int(SEND_TIMEOUT_S * 1000)
        sender.producer = KafkaProducer(
            bootstrap_servers=sender.bootstrap, client_id="deliverylab-board", acks=1, retries=1,
            enable_idempotence=False, request_timeout_ms=timeout_ms, max_block_ms=timeout_ms,
            delivery_timeout_ms=2 * timeout_ms + 1000, linger_ms=20, bootstrap_timeout_ms=timeout_ms,
            **kafka.security(sender.bootstrap),  # a class broker with logins: the learner's (stack/classauth.py)
        )
    sender.producer.send(topic, key=item["learner"].encode(),
                         value=json.dumps(item, sort_keys=True).encode()).get(timeout=2 * SEND_TIMEOUT_S + 1)


_senders: dict[str, _Sender] = {}
_senders_lock = threading.Lock()
_problems: list[str] = []


def _sender(bootstrap: str) -> _Sender:
    with _senders_lock:
        if bootstrap not in _senders:
            _senders[bootstrap] = _Sender(bootstrap)
        return _senders[bootstrap]


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=4)


def _report_problem() -> None:
    """Warn once (in the caller's cell) about sends that failed since the last warning."""
    if _problems:
        latest = _problems[-1]
        _problems.clear()
        _warn(f"the class board on {settings().bootstrap} did not receive your latest results ({latest}). "
              "Your progress is saved on this machine; the board catches up with your next result.")


def flush(timeout_s: float = 5.0) -> bool:
    """Wait until every queued event was sent or dropped (tests, and the end of a kernel)."""
    deadline = time.monotonic() + timeout_s
    for sender in list(_senders.values()):
        while sender.queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)
    return all(not s.queue.unfinished_tasks for s in _senders.values())


atexit.register(flush, 2.0)
