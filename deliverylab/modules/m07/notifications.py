"""The notifications a pipeline's foreachBatch sent: one row per (batch, send) in a SQLite table."""
from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ...config import CourseError


@dataclass(frozen=True)
class Notified:
    """What the notifications say, compared with the orders produced."""
    sends: int             # rows in the notifications table
    batches: int           # distinct batch ids notified
    repeated_batches: int  # batch ids notified more than once
    orders_notified: int   # sum of the "N new orders" figures sent
    produced: int

    def lines(self) -> list[str]:
        return [f"batches notified more than once: {self.repeated_batches}",
                f"orders notified = orders produced: {self.orders_notified == self.produced}"
                + ("" if self.orders_notified == self.produced
                   else f" ({'more' if self.orders_notified > self.produced else 'fewer'} notified)")]

    @property
    def verdict(self) -> str:
        if self.orders_notified == self.produced and self.repeated_batches == 0:
            return "exactly-once"
        return "duplicated" if self.orders_notified > self.produced else "lost"


def path_for(lesson, name: str) -> str:
    """Where pipeline ``name`` of ``lesson`` keeps its notifications (the folder is created)."""
    folder = Path(lesson.path("tables"))
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / f"{name}-notifications.db")


def rows(path: str) -> list[tuple]:
    """``(query_id, batch_id, orders)`` of every notification sent, in the order sent."""
    if not Path(path).exists():
        raise CourseError(f"No notifications at {path}: start the pipeline and let it run a batch first.")
    db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        return list(db.execute("SELECT query_id, batch_id, orders FROM notifications ORDER BY rowid"))
    finally:
        db.close()


def summarise(sent: list[tuple], produced: int) -> Notified:
    """Count repeats among ``sent`` notifications (pure: rows as :func:`rows` returns them)."""
    per_batch = Counter((query, batch) for query, batch, _ in sent)
    return Notified(sends=len(sent), batches=len(per_batch),
                    repeated_batches=sum(1 for n in per_batch.values() if n > 1),
                    orders_notified=sum(orders for _, _, orders in sent), produced=produced)


def of(pipe) -> Notified:
    """The notifications of a crash-lab pipeline started with ``options={"notifications": path}``."""
    path = pipe.options.get("notifications")
    if not path:
        raise CourseError("This pipeline has no notifications table: create it with "
                          "options={'notifications': notifications.path_for(lesson, name)}.")
    return summarise(rows(path), len(pipe.produced))


#: The exercise's seed (checks/hidden.py): it draws the sizes of the run and names it in a FAIL line.
EXERCISE = "07-what-breaks-lab:notifier"
MAX_PER_BATCH = 200


@dataclass(frozen=True)
class Plan:
    """The orders of one run of :func:`crash_and_replay`, drawn from a seed; they add up to ``total``."""
    first: int   # waiting when each query starts: its batch 0 takes them all (the two batch 0s: one size)
    crashed: int  # produced with the first query's crash armed (its batch 1)
    rest: int    # produced after the redeployed query's crash

    @property
    def total(self) -> int:
        return 2 * self.first + self.crashed + self.rest


def plan(rng, total: int = 500) -> Plan:
    """Sizes of a run: a batch 0 of 10 to 25 % of ``total`` (at most MAX_PER_BATCH), 20 to 40 % for the crashed
    batch, the rest after the release's crash (at least 10 %)."""
    first = rng.randint(total // 10, min(total // 4, MAX_PER_BATCH))
    crashed = rng.randint(total // 5, 2 * total // 5)
    return Plan(first, crashed, total - 2 * first - crashed)


def crash_and_replay(lesson, variant, name: str | None = None, total: int = 500, seed: int | None = None):
    """Start ``variant`` (a name, or your own pipeline function writing Delta) with a notifications table,
    crash it after a batch's write and before Spark's commit, restart it and let it catch up. Then redeploy
    it as a release does: a new checkpoint that starts where the old one finished, and a new ``out.app_id``
    (module 05), where batch ids begin again at 0. The new query is crashed too, in its batch 0, after the
    write; it is restarted and processes more orders, then stopped. Returns ``(pipe, crash)`` (the first crash).

    The sizes come from ``seed`` (default: the exercise's hidden seed, kept as ``pipe.seed_drawn``) and add up to
    ``total``; whatever the seed, the two queries' batch 0 hold as many orders each, so a notification keyed by
    batch id and size takes the new one for a replay. When your own function fails, the run ends there and
    ``pipe.failure`` says why in one line."""
    import random

    from ...checks import hidden
    from ...crashlab import Pipeline
    from ...crashlab.record import failure_kept
    from ...crashlab.redeploy import resume_offsets_json

    name = name or (variant if isinstance(variant, str) else variant.__name__)
    seed = hidden.seed_for(EXERCISE) if seed is None else seed
    sizes = plan(random.Random(seed), total)
    _clear(lesson, name)  # a run again starts from nothing: an empty topic, no notifications, no table
    pipe = Pipeline(lesson, variant, name=name, max_per_batch=MAX_PER_BATCH, sink="delta",
                    options={"notifications": path_for(lesson, name)})
    pipe.seed_drawn = seed
    crash = None
    try:
        with failure_kept(pipe):
            pipe.produce(sizes.first)  # waiting before the start: batch 0 takes them all
            pipe.start()
            pipe.drain()
            crash = pipe.crash("after_sink_write", orders=sizes.crashed)
            pipe.restart()
            pipe.drain()
            # the release: a new checkpoint where the old one finished, a new app id, batch ids from 0 again
            pipe.stop()
            pipe.options["starting_offsets"] = resume_offsets_json(pipe)
            pipe.delete_checkpoint()
            pipe.app_id = f"{pipe.app_id}-v2"
            pipe.produce(sizes.first)  # the new batch 0: the old batch 0's id and size
            pipe.restart(wait=False)
            pipe.arm("after_sink_write", 0)  # before the new query's first batch can reach its write
            pipe.crashes.append(pipe.wait_for_crash("after_sink_write"))
            pipe.restart()
            pipe.produce(sizes.rest)
            pipe.drain()
    finally:
        pipe.stop()
    return pipe, crash


def _clear(lesson, name: str) -> None:
    import shutil

    from ...stack.kafka import delete_topics

    delete_topics(lesson.bootstrap, [lesson.topic(f"{name}-orders")])
    Path(path_for(lesson, name)).unlink(missing_ok=True)
    for folder in (lesson.checkpoint(name), lesson.table(name)):
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class Outcome:
    """What lab 07's notifier checks judge of a run: its error (one line), the orders table's ledger and the
    notifications."""
    failure: str | None
    ledger: object = None
    notified: Notified | None = None


def outcome(pipe, notified: Notified | None = None) -> Outcome:
    """The pipeline's run as it ended (``notified``: the notifications as read then, else read now)."""
    if pipe.failure:
        return Outcome(pipe.failure)
    return Outcome(None, pipe.ledger(), notified if notified is not None else of(pipe))
