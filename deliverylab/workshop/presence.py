"""Saying hello to the class board at setup, and spotting two machines that use one learner id.

``lesson.setup`` calls :func:`announce` (shared-broker mode only). It reads the learner's own
board topic (a second or less; on a class broker nobody else can write there), warns when another
machine said hello with the same learner id in the last hours (their topics and tables would be the
same as this learner's), and sends a hello that carries the module's progress, so the board is right
again after a kernel restart. The hello's time is the broker's (feed.py), never the sender's.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from ..config import settings
from . import events, feed

#: A hello older than this from another machine is not a clash (a machine used yesterday).
TWIN_WINDOW = timedelta(hours=12)
READ_TIMEOUT_S = 3.0


def _age(at: str, now: datetime) -> timedelta | None:
    try:
        then = datetime.fromisoformat(at)
    except (TypeError, ValueError):
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    return now - then


def twins(items: list[dict], learner: str, machine: str, now: datetime | None = None) -> dict[str, dict]:
    """Other machines that said hello as ``learner`` within TWIN_WINDOW: ``{machine: its latest hello}``."""
    now = now or datetime.now(timezone.utc)
    found: dict[str, dict] = {}
    for item in items:
        if item.get("kind") != "hello" or item.get("learner") != learner or item.get("machine") in (None, machine):
            continue
        age = _age(item.get("at", ""), now)
        if age is not None and age <= TWIN_WINDOW:
            found[item["machine"]] = item
    return found


def twin_warning(found: dict[str, dict], learner: str, source: str) -> str | None:
    if not found:
        return None
    hosts = sorted({item.get("host") or "?" for item in found.values()})
    how = ("set DELIVERYLAB_LEARNER" if source == "DELIVERYLAB_LEARNER" else
           "run `python -m deliverylab workshop join ADDRESS --learner NEW-ID` (or set DELIVERYLAB_LEARNER)")
    return (f"another machine ({', '.join(hosts)}) also uses the learner id {learner!r} on this broker: your topics, "
            f"tables and board rows would mix with theirs. Pick an id of your own: {how}, then run this cell again.")


def announce(lesson: str) -> str | None:
    """Hello to the class board; a warning line when the learner id is in use elsewhere. Never raises."""
    if not events.enabled():
        return None
    events.set_current_lesson(lesson)
    s = settings()
    warning = None
    try:
        items = feed.read_events(s.bootstrap, READ_TIMEOUT_S)
        warning = twin_warning(twins(items, s.learner, events.machine_id()), s.learner, s.learner_source)
    except Exception:  # noqa: BLE001 - a board that cannot be read must not stop a lesson
        pass
    try:
        from .. import progress

        snapshot = events.progress_fields(progress.status(lesson))
    except Exception:  # noqa: BLE001
        snapshot = {}
    events.publish("hello", lesson, **snapshot)
    return warning
