"""Two kinds of duplicate, told apart by counting offsets in the topic against rows in the sink.

* A **source** duplicate entered the topic twice: one order id at two offsets (a producer
  retried a send whose reply was lost). Everything downstream sees two records.
* A **replay** duplicate is one input record that the sink wrote twice: the order sits at
  one offset but has two rows (a batch ran again after a crash and appended again).

So for every order id: ``records`` = offsets holding it in the input topic, ``copies`` =
rows holding it in the sink. More than one record means a source duplicate; more copies
than records means the pipeline wrote a record more than once. Both can happen to the
same id. :func:`classify` is pure; :func:`topic_offsets` reads the topic.

    kinds = classify(topic_offsets(bootstrap, topic), ledger.copies)
    print(kinds.summary())
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...config import CourseError
from ...ledger import sorted_ids


@dataclass(frozen=True)
class DuplicateKinds:
    """Order ids by kind of duplicate. All id fields are sorted tuples.

    ``at_source``: ids at more than one offset of the topic. Of those, ``passed_through``
    reached the sink more than once and ``removed`` exactly once (a dedup in the stream
    caught the copy). ``replayed``: ids with more rows in the sink than records in the
    topic. ``source_extra`` / ``replay_extra``: sink rows beyond the first that each kind
    explains. ``unknown``: ids in the sink that are in no record of the topic.
    """
    at_source: tuple
    passed_through: tuple
    removed: tuple
    replayed: tuple
    source_extra: int
    replay_extra: int
    unknown: tuple

    @property
    def duplicated(self) -> tuple:
        """Ids with more than one row in the sink, whatever the cause."""
        return sorted_ids(set(self.passed_through) | set(self.replayed))

    def kind(self, order_id: Any) -> str:
        """``source``, ``replay``, ``source and replay``, ``removed in the stream`` or ``not duplicated``."""
        source, replay = order_id in self.passed_through, order_id in self.replayed
        if source and replay:
            return "source and replay"
        if source or replay:
            return "source" if source else "replay"
        return "removed in the stream" if order_id in self.removed else "not duplicated"

    def summary(self) -> str:
        """A few stable lines: duplicated ids in the sink by kind, and source copies removed on the way."""
        both = len(set(self.passed_through) & set(self.replayed))
        lines = [f"duplicated in the sink: {len(self.duplicated)} order ids",
                 f"  source (one order id at two or more offsets): {len(self.passed_through)}",
                 f"  replay (one record, written to the sink again): {len(self.replayed)}"]
        if both:
            lines.append(f"  (both at once: {both})")
        lines.append(f"source duplicates removed before the sink: {len(self.removed)}")
        return "\n".join(lines)


def _counts(mapping, what: str) -> dict:
    """order id -> a whole number, from counts or from lists of offsets; ids counted 0 are left out."""
    if not isinstance(mapping, Mapping):
        raise CourseError(f"classify(records, copies) takes two mappings; {what} is a {type(mapping).__name__}. "
                          "records: order id -> offsets in the topic (topic_offsets(...)); "
                          "copies: order id -> rows in the sink (ledger.copies).")
    counts = {}
    for order_id, value in mapping.items():
        n = len(value) if isinstance(value, (list, tuple, set, frozenset)) else value
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise CourseError(f"{what}[{order_id!r}] should be a count or a list of offsets, not {value!r}.")
        if n:
            counts[order_id] = n
    return counts


def classify(records: Mapping, copies: Mapping) -> DuplicateKinds:
    """Tell source duplicates from replay duplicates.

    ``records``: order id -> its offsets in the input topic (or how many there are).
    ``copies``: order id -> how many rows the sink holds (a ledger's ``copies``).
    """
    records, copies = _counts(records, "records"), _counts(copies, "copies")
    at_source = {i for i, n in records.items() if n > 1}                  # one order id, several offsets
    passed = {i for i in at_source if copies.get(i, 0) > 1}               # ... and several rows in the sink
    removed = {i for i in at_source if copies.get(i, 0) == 1}             # ... but one row: dropped on the way
    replayed = {i for i, n in copies.items() if n > records.get(i, n)}    # more rows than records
    return DuplicateKinds(
        at_source=sorted_ids(at_source), passed_through=sorted_ids(passed), removed=sorted_ids(removed),
        replayed=sorted_ids(replayed),
        source_extra=sum(min(copies[i], records[i]) - 1 for i in passed),
        replay_extra=sum(copies[i] - records[i] for i in replayed),
        unknown=sorted_ids(i for i in copies if i not in records),
    )


def offsets_by_id(records) -> dict[Any, list[tuple[int, int]]]:
    """``{order_id: [(partition, offset), ...]}`` from Kafka records whose value is an order's JSON."""
    found: dict[Any, list[tuple[int, int]]] = {}
    for r in records:
        order_id = json.loads(r.value)["order_id"]
        found.setdefault(order_id, []).append((r.partition, r.offset))
    return found


def topic_offsets(bootstrap: str, topic: str) -> dict[Any, list[tuple[int, int]]]:
    """Every order id in ``topic`` with the offsets that hold it (read from the broker now)."""
    from ...stack import kafka

    begin, end = kafka.beginning_offsets(bootstrap, topic), kafka.end_offsets(bootstrap, topic)
    if not end:
        raise CourseError(f"topic {topic!r} does not exist (or has no partitions). Produce to it first.")
    ranges = {p: (begin.get(p, 0), end[p]) for p in end}
    return offsets_by_id(kafka.read_range(bootstrap, topic, ranges))


def of_pipeline(pipe, spark=None) -> DuplicateKinds:
    """:func:`classify` for a crash-lab pipeline: its input topic against the rows its sink's readers see."""
    copies = Counter(order_id for order_id, _ in pipe.delivered(spark))
    return classify(topic_offsets(pipe.lesson.bootstrap, pipe.topic), copies)


def batch_slices(pipe, batch: int, run: int | None = None) -> dict[int, set]:
    """The order ids of a planned batch, per Kafka partition (each read by one task of the batch)."""
    from ...stack import kafka

    found: dict[int, set] = {}
    for r in kafka.read_range(pipe.lesson.bootstrap, pipe.topic, pipe.batch_range(batch, run)):
        found.setdefault(r.partition, set()).add(json.loads(r.value)["order_id"])
    return found


def published(pipe, leftovers: list[str]) -> bool:
    """Are the files that were left under ``_temporary`` (paths relative to the sink) now in the sink folder itself?"""
    from pathlib import Path

    return bool(leftovers) and all((Path(pipe.sink) / Path(f).name).is_file() for f in leftovers)
