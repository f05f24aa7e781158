"""Reading the class topic from its beginning: every event so far, then new ones as they come.

Nobody commits offsets here and no consumer group is used: every reader (the board, a
learner's setup looking for a twin id) reads the whole topic itself, so a board started late,
or restarted, sees everything the learners did before.
"""
from __future__ import annotations

import json
import time

from ..config import CLASS_TOPIC
from ..stack import kafka


def decode(value: bytes | None) -> dict | None:
    """One event, or None for a record that is not one of ours (never crash a board on it)."""
    try:
        item = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(item, dict) or not isinstance(item.get("learner"), str) or "kind" not in item:
        return None
    return item


class ClassFeed:
    """The class topic, read from offset 0. ``read_available()`` returns what arrived since the last call."""

    def __init__(self, bootstrap: str, create: bool = False, timeout_s: float = 3.0, login=None):
        from kafka import TopicPartition

        if create:
            kafka.ensure_topic(bootstrap, CLASS_TOPIC, partitions=1, login=login)
        self.bootstrap = bootstrap
        self._cm = kafka.consumer(bootstrap, login=login, request_timeout_ms=int(max(timeout_s, 2) * 1000) + 1000,
                                  bootstrap_timeout_ms=int(timeout_s * 1000))
        self.consumer = self._cm.__enter__()
        partitions = self.consumer.partitions_for_topic(CLASS_TOPIC) or set()
        self.partitions = [TopicPartition(CLASS_TOPIC, p) for p in sorted(partitions)]
        if self.partitions:
            self.consumer.assign(self.partitions)
            self.consumer.seek_to_beginning(*self.partitions)
        self.count = 0

    @property
    def exists(self) -> bool:
        return bool(self.partitions)

    def read_available(self, timeout_s: float = 3.0) -> list[dict]:
        """Every event up to the topic's end as of now (stops early after ``timeout_s``)."""
        if not self.partitions:
            return []
        ends = self.consumer.end_offsets(self.partitions)
        found: list[dict] = []  # in topic order: one learner's events keep their order (one key, one partition)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(self.consumer.position(tp) >= ends[tp] for tp in self.partitions):
                break
            for tp, records in self.consumer.poll(timeout_ms=200).items():
                for record in records:
                    item = decode(record.value)
                    if item is not None:
                        found.append(item)
        self.count += len(found)
        return found

    def close(self) -> None:
        self._cm.__exit__(None, None, None)

    def __enter__(self) -> "ClassFeed":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_events(bootstrap: str, timeout_s: float = 3.0, login=None) -> list[dict]:
    """Every event on the class topic so far ([] when there is none yet, or no broker answers). ``login``: a class
    broker's login (config.KafkaLogin) other than the course's own setting, e.g. while `workshop join` checks a token."""
    if not kafka.listening(bootstrap, min(timeout_s, 1.0)):
        return []
    with ClassFeed(bootstrap, timeout_s=timeout_s, login=login) as feed:
        return feed.read_available(timeout_s)
