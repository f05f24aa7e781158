"""A trial run of a learner's ``dedupe(orders)`` in the notebook's own Spark.

The trial topic holds :data:`ORDERS` seeded orders sent through the flaky network, with a
lost reply every :data:`LOSE_EVERY` sends, so some orders sit at two offsets (real producer
retries). The trial reads it as a stream, applies ``dedupe`` to the parsed orders, and
runs the query with ``availableNow`` in batches of :data:`MAX_PER_BATCH`, collecting what
would be written. It reports what reached the "sink" (a ledger) and the dedup state per
batch, as Spark's progress reported them.

    def dedupe(orders):
        return orders.withWatermark("event_time", "1 minute").dropDuplicatesWithinWatermark(["order_id"])

    result = trial.run(dedupe, lesson)
    print(result.summary())

The lab's checks also run ``dedupe`` over a hidden trial topic of their own (hidden_runs.py): ``run`` takes
another topic, its orders and another batch size.
"""
from __future__ import annotations

import itertools
import json
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable

from ... import streams
from ...todos import raise_if_todo
from ...config import CourseError
from ...sparkerrors import cause_line, quiet_error_log

ORDERS = 400
LOSE_EVERY = 40
MAX_PER_BATCH = 100
TOPIC = "trial-orders"
TIMEOUT_S = 120
_runs = itertools.count(1)


@dataclass
class TrialResult:
    produced: list[dict]           # the distinct orders (the truth)
    records: int                   # records in the topic, retries included
    rows: list[tuple]              # (order_id, amount) of every row the query emitted
    history: list[dict]            # watermarks.state_history of the query's progress
    ledger: object = None          # ledger.reconcile(produced, rows)
    event_times: list[str] = field(default_factory=list)  # event times of every record the query read
    delay: timedelta | None = None  # the delay dedupe gave withWatermark (None: no watermark)
    dedupe: Callable | None = field(default=None, repr=False)  # the function the trial ran

    @property
    def has_watermark(self) -> bool:
        return any(h["watermark"] is not None for h in self.history)

    @property
    def final_state_rows(self) -> int | None:
        """Rows in the dedup state after the last batch (None: the query kept no state)."""
        return self.history[-1]["state_rows"] if self.history else None

    @property
    def watermark(self):
        """The watermark of the last batch (None without one)."""
        return self.history[-1]["watermark"] if self.history else None

    @property
    def late_rows(self) -> int:
        return sum(h["late_rows"] for h in self.history)

    def summary(self) -> str:
        state = "none" if self.final_state_rows is None else f"{self.final_state_rows} rows after the last batch"
        return "\n".join([
            f"records read: {self.records} ({self.records - len(self.produced)} of them producer retries)",
            f"rows out:     {len(self.rows)}",
            f"dedup state:  {state}",
            f"late rows:    {self.late_rows} dropped as too late",
            self.ledger.verdict_line(),
        ])


def _progress_entry(p: dict) -> dict:
    state = p.get("stateOperators") or []
    return {"batch": p["batchId"], "rows": p.get("numInputRows", 0),
            "state_rows": sum(op.get("numRowsTotal", 0) for op in state) if state else None,
            "state_dropped": sum(op.get("numRowsDroppedByWatermark", 0) for op in state) if state else None,
            "watermark": (p.get("eventTime") or {}).get("watermark") if state else None}


def source(lesson) -> tuple[str, list[dict]]:
    """The trial topic of ``lesson`` (filled on first use) and its distinct orders."""
    from ...orders import generate_orders
    from ...stack import kafka
    from .retries import lost_reply_positions, send_through_flaky_network

    topic = lesson.topic(TOPIC)
    orders = generate_orders(ORDERS, seed=11)
    kafka.ensure_topic(lesson.bootstrap, topic)
    if kafka.count_records(lesson.bootstrap, topic) == 0:
        send_through_flaky_network(topic, orders, lost_reply_positions(ORDERS, LOSE_EVERY))
    return topic, orders


def _check_output(df) -> None:
    if not (hasattr(df, "isStreaming") and hasattr(df, "columns")):
        raise CourseError(f"dedupe(orders) must return a streaming DataFrame, not {type(df).__name__}. "
                          "Return the orders DataFrame after your dedup, without calling writeStream.")
    if not df.isStreaming:
        raise CourseError("dedupe(orders) returned a batch DataFrame; build it from the orders it was given.")
    missing = [c for c in ("order_id", "amount", "event_time") if c not in df.columns]
    if missing:
        raise CourseError(f"dedupe(orders) dropped the columns {missing}; keep the order's columns.")


@contextmanager
def refused_in_one_line():
    """Spark's refusal of the learner's query (an analysis error, such as a watermark-based operator with
    no watermark) as one CourseError line with its error class, instead of a JVM stack in the notebook."""
    from pyspark.errors import PySparkException

    with quiet_error_log():
        try:
            yield
        except PySparkException as error:
            cause = cause_line(error) or str(error).strip().splitlines()[0]
            why = (" (a watermark-based operator needs withWatermark on event_time before it)"
                   if "watermark" in cause.lower() else "")
            raise CourseError(f"Spark refused your dedupe's query: {cause[:300].rstrip(';. ')}. Fix your "
                              f"function{why} and run the cell again.") from None


_INTERVAL = re.compile(r"(\d+)\s+(day|hour|minute|second|millisecond|microsecond)s?\b")
_SECONDS = {"day": 86400, "hour": 3600, "minute": 60, "second": 1, "millisecond": 1e-3, "microsecond": 1e-6}


def declared_delay(df) -> timedelta | None:
    """The delay of the outermost withWatermark in ``df``'s plan, e.g. 1 minute; None without one (or when the plan
    cannot be read)."""
    try:
        plan = df._jdf.queryExecution().analyzed().toString()
    except Exception:  # noqa: BLE001 - a plan we cannot read has no delay to report
        return None
    marks = [line.split("EventTimeWatermark", 1)[1] for line in plan.splitlines() if "EventTimeWatermark" in line]
    if not marks:
        return None
    interval = marks[0].rsplit(",", 1)[-1]  # "EventTimeWatermark <id>, event_time#5: timestamp, 1 minutes"
    return timedelta(seconds=sum(int(n) * _SECONDS[unit] for n, unit in _INTERVAL.findall(interval)))


def run(dedupe, lesson, timeout_s: float = TIMEOUT_S, topic: str | None = None, orders: list[dict] | None = None,
        max_per_batch: int = MAX_PER_BATCH) -> TrialResult:
    """Run ``dedupe`` over the trial topic (from its start, with a new checkpoint) and report.

    ``topic`` and ``orders`` (its distinct orders): another topic instead, read ``max_per_batch`` records a batch."""
    from ... import ledger
    from ...crashlab.variants import read_orders
    from ...stack import kafka
    from ...stack.session import get_spark

    if not callable(dedupe):
        raise CourseError("Pass your function itself: trial.run(dedupe, lesson), without calling it.")
    raise_if_todo(dedupe)
    if topic is None:
        topic, orders = source(lesson)
    spark = get_spark()
    rows: list[tuple] = []

    def collect(batch, batch_id):
        rows.extend((r.order_id, r.amount) for r in batch.select("order_id", "amount").collect())

    checkpoint = lesson.path("trials", f"run-{next(_runs)}")
    with refused_in_one_line():
        deduped = dedupe(read_orders(spark, lesson.bootstrap, topic, max_per_batch=max_per_batch))
        _check_output(deduped)
        delay = declared_delay(deduped)
        query = (deduped.writeStream.foreachBatch(collect).trigger(availableNow=True)
                 .option("checkpointLocation", checkpoint).start())
    lesson.track(query)
    if not streams.await_termination(query, "trial query", timeout_s):
        query.stop()
        raise CourseError(f"The trial query did not finish within {timeout_s:.0f} s. Is the broker up? "
                          "python -m deliverylab stack status")
    if query.exception() is not None:
        raise CourseError(f"The trial query failed:\n{str(query.exception())[:1500]}")
    from .watermarks import state_history

    progress = [_progress_entry(p if isinstance(p, dict) else json.loads(p.json)) for p in query.recentProgress]
    records = kafka.read_range(lesson.bootstrap, topic, {p: (0, e) for p, e in kafka.end_offsets(lesson.bootstrap, topic).items()})
    return TrialResult(produced=orders, records=len(records), rows=rows, history=state_history(progress),
                       ledger=ledger.reconcile(orders, rows, label="trial"),
                       event_times=[json.loads(r.value)["event_time"] for r in records], delay=delay, dedupe=dedupe)
