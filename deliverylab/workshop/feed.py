"""Reading the learners' board topics from their beginning: every event so far, then new ones as they come.

Each learner's kernel writes to her own topic, ``xo._board.<learner>`` (events.py); the board reads every one its
login may see, a learner's setup (or ``workshop join``) only her own, to spot a second machine with her id.
Nobody commits offsets here and no consumer group is used: every reader reads the topics itself, so a board
started late, or restarted, sees everything the learners did before. Every record is checked (eventcheck.py):
who sent it is the topic it is in, when is the broker's stamp, and one that is malformed is counted, never used
and never fatal.
"""
from __future__ import annotations

import time

from ..stack import kafka
from ..stack.classauth import board_topic
from . import eventcheck

#: how often a board that keeps reading looks for learners' topics that appeared since
DISCOVER_EVERY_S = 5.0


class ClassFeed:
    """Board topics, read from offset 0. ``read_available()`` returns the events that arrived since the last call;
    ``tally`` counts the records skipped so far, ``complete`` says whether the last read reached every topic's end.

    ``learners``: only these learners' topics (a learner's own); None for every board topic this login may see."""

    def __init__(self, bootstrap: str, timeout_s: float = 3.0, login=None, learners: list[str] | None = None):
        self.bootstrap, self.learners = bootstrap, learners
        self._cm = kafka.consumer(bootstrap, login=login, request_timeout_ms=int(max(timeout_s, 2) * 1000) + 1000,
                                  bootstrap_timeout_ms=int(timeout_s * 1000))
        self.consumer = self._cm.__enter__()
        self.partitions: list = []
        self.tally = eventcheck.Tally()
        self.complete = True
        self.count = 0
        self.discovered_at = 0.0
        self.discover()

    def _topics(self) -> list[str]:
        if self.learners is not None:
            return [board_topic(name) for name in self.learners]
        return sorted(t for t in self.consumer.topics() if eventcheck.learner_of(t))

    def discover(self) -> None:
        """Assign the partitions of board topics that appeared since the last look, from their beginning."""
        from kafka import TopicPartition

        self.discovered_at = time.monotonic()
        found = [TopicPartition(t, p) for t in self._topics()  # a topic not there yet has no partitions: None
                 for p in sorted(self.consumer.partitions_for_topic(t) or ())]
        new = [tp for tp in found if tp not in self.partitions]
        if new:
            self.partitions += new
            self.consumer.assign(self.partitions)
            self.consumer.seek_to_beginning(*new)

    @property
    def exists(self) -> bool:
        return bool(self.partitions)

    def read_available(self, timeout_s: float = 3.0) -> list[dict]:
        """Every event up to each topic's end as of now (stops early after ``timeout_s``: ``complete`` is then
        False). Malformed records are counted in ``tally`` and left out."""
        if time.monotonic() - self.discovered_at >= DISCOVER_EVERY_S:
            self.discover()
        if not self.partitions:
            self.complete = True
            return []
        ends = self.consumer.end_offsets(self.partitions)
        found: list[dict] = []  # one learner's events keep their order (one topic, one partition)
        deadline = time.monotonic() + timeout_s
        self.complete = False
        while True:
            if all(self.consumer.position(tp) >= ends[tp] for tp in self.partitions):
                self.complete = True
                break
            if time.monotonic() >= deadline:
                break
            for records in self.consumer.poll(timeout_ms=200).values():
                for record in records:
                    try:
                        found.append(eventcheck.check_record(record))
                    except eventcheck.Skipped as skipped:
                        self.tally.add(skipped.reason)
        self.count += len(found)
        return found

    def close(self) -> None:
        self._cm.__exit__(None, None, None)

    def __enter__(self) -> "ClassFeed":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_events(bootstrap: str, timeout_s: float = 3.0, login=None, learner: str | None = None) -> list[dict]:
    """Every event of one learner's board topic so far ([] when there is none yet, or no broker answers): ``learner``,
    else the login's, else the course's own learner id. ``login``: a class broker's login (config.KafkaLogin) other
    than the course's own setting, e.g. while `workshop join` checks a token."""
    if not kafka.listening(bootstrap, min(timeout_s, 1.0)):
        return []
    if learner is None:
        from ..config import settings

        learner = login.username if login is not None else settings().learner
    with ClassFeed(bootstrap, timeout_s=timeout_s, login=login, learners=[learner]) as feed:
        return feed.read_available(timeout_s)


def read_all_events(bootstrap: str, timeout_s: float = 3.0, login=None) -> list[dict]:
    """Every event of every board topic this login may read, so far ([] when no broker answers)."""
    if not kafka.listening(bootstrap, min(timeout_s, 1.0)):
        return []
    with ClassFeed(bootstrap, timeout_s=timeout_s, login=login) as feed:
        return feed.read_available(timeout_s)
