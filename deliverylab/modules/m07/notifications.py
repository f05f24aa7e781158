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


def crash_and_replay(lesson, variant, name: str | None = None, orders: int = 200, redeploy_orders: int = 100):
    """Start ``variant`` (a name, or your own pipeline function writing Delta) with a notifications
    table, process ``orders`` orders, crash it after a batch's write and before Spark's commit,
    restart it and let it catch up. Then redeploy it as a release does: a new checkpoint that starts
    where the old one finished, and a new ``out.app_id`` (module 05), where batch ids begin again at 0;
    it processes ``redeploy_orders`` more and is stopped. Returns ``(pipe, crash)``.

    When your own function fails, the run ends there and ``pipe.failure`` says why in one line."""
    from ...crashlab import Pipeline
    from ...crashlab.record import failure_kept
    from ...crashlab.redeploy import new_checkpoint

    name = name or (variant if isinstance(variant, str) else variant.__name__)
    pipe = Pipeline(lesson, variant, name=name, max_per_batch=200, sink="delta",
                    options={"notifications": path_for(lesson, name)})
    crash = None
    try:
        with failure_kept(pipe):
            pipe.start()
            pipe.produce(orders)
            pipe.drain()
            crash = pipe.crash("after_sink_write", orders=orders)
            pipe.restart()
            pipe.drain()
            if redeploy_orders:
                new_checkpoint(pipe, redeploy_orders, resume_where_it_stopped=True, new_app_id="v2")
    finally:
        pipe.stop()
    return pipe, crash
