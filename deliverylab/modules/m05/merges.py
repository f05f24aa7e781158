"""MERGE on order_id, run in the kernel's Spark on small batches of order events.

A replay of a foreachBatch is the same function called again with the same batch: here we
call it twice on purpose and compare the table after each call. ``merge_latest`` keeps each order's latest
event, within a batch (one row per key) and across batches (the update is guarded by event time). None of these MERGEs records a
batch id: a replay is harmless only when the MERGE is idempotent, or when Delta's session
settings ``spark.databricks.delta.write.txnAppId`` / ``txnVersion`` make it skip the batch.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from ... import deltalog

EVENT_COLUMNS = "order_id STRING, customer_id STRING, amount DECIMAL(10,2), status STRING, event_time TIMESTAMP"


def events(spark, rows: list[tuple]):
    """A batch of order events from ``(order_id, customer_id, amount, status, event_time)`` tuples."""
    from decimal import Decimal
    from datetime import datetime

    typed = [(o, c, Decimal(a), s, datetime.fromisoformat(t)) for o, c, a, s, t in rows]
    return spark.createDataFrame(typed, EVENT_COLUMNS)


def empty_table(spark, path: str, stamped: bool = False) -> str:
    """A fresh, empty Delta table of order events at ``path`` (``stamped``: plus a merged_at column)."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    columns = EVENT_COLUMNS + (", merged_at TIMESTAMP" if stamped else "")
    spark.createDataFrame([], columns).write.format("delta").save(path)
    return path


def merge_as_is(spark, table: str, batch) -> None:
    """MERGE the batch on order_id: update the row if the order is there, insert it if not."""
    from delta.tables import DeltaTable

    (DeltaTable.forPath(spark, table).alias("t")
        .merge(batch.alias("s"), "t.order_id = s.order_id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute())


def latest_per_order(batch):
    """At most one row per order_id: its latest event. Ties on event_time are broken by
    status, so the same batch always keeps the same row (a replay must choose alike)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = Window.partitionBy("order_id").orderBy(F.col("event_time").desc(), F.col("status").desc())
    return batch.withColumn("rank", F.row_number().over(newest_first)).filter("rank = 1").drop("rank")


#: The update's guard: only a later event replaces a row, with the same tie-break as ``latest_per_order``.
LATER = "s.event_time > t.event_time OR (s.event_time = t.event_time AND s.status > t.status)"


def merge_latest(spark, table: str, batch) -> None:
    """The safe MERGE: one row per key first, deterministic columns only, and "latest" across batches too:
    a matched row is updated only by a later event (``LATER``), so a batch that carries an order's older event
    (a late one, or one another source sent again) leaves the newer row in place."""
    from delta.tables import DeltaTable

    (DeltaTable.forPath(spark, table).alias("t")
        .merge(latest_per_order(batch).alias("s"), "t.order_id = s.order_id")
        .whenMatchedUpdateAll(condition=LATER)
        .whenNotMatchedInsertAll()
        .execute())


def statuses(spark, table: str) -> dict[str, str]:
    """Each order's status in the table: {order_id: status}."""
    return {r.order_id: r.status for r in sorted(spark.read.format("delta").load(table).collect())}


def unguarded_after(spark, path: str, batch, older) -> dict[str, str]:
    """The unguarded MERGE of the same two batches, for comparison: ``batch`` (one row per order first), then
    ``older``, with ``whenMatchedUpdateAll()`` and no condition, into a new table at ``path``. Returns the
    statuses after it."""
    table = empty_table(spark, path)
    merge_as_is(spark, table, latest_per_order(batch))
    merge_as_is(spark, table, latest_per_order(older))
    return statuses(spark, table)


def merge_stamped(spark, table: str, batch) -> None:
    """One row per key, but each row is also stamped with the time of the MERGE: not deterministic,
    so a replay of the same batch writes different values (for a table made with stamped=True)."""
    from pyspark.sql import functions as F

    merge_as_is(spark, table, latest_per_order(batch).withColumn("merged_at", F.current_timestamp()))


def rows_per_order(spark, table: str) -> dict[str, int]:
    rows = spark.read.format("delta").load(table).groupBy("order_id").count().collect()
    return {r.order_id: r["count"] for r in sorted(rows)}


def fingerprint(spark, table: str) -> str:
    """A short hash of every row of the table (sorted): equal before and after a replay means 'same table'."""
    rows = sorted(tuple(str(v) for v in row) for row in spark.read.format("delta").load(table).collect())
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:12]


def merge_error(error: Exception) -> str:
    """The error class Delta gives, e.g. DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE."""
    from ...sparkerrors import error_class

    return error_class(error) or type(error).__name__


@dataclass
class MergeTrial:
    """A MERGE function run on one batch, then on the same batch again, as a replay runs it."""
    after_one: dict | None = None      # rows per order after the first run
    after_replay: dict | None = None   # rows per order after the second
    unchanged: bool | None = None      # the table the same, row for row, after the second run
    statuses: dict | None = None       # order_id -> status at the end
    error: str | None = None           # what the function raised, and on which run
    merge: Callable | None = field(default=None, repr=False)  # the function tried (the lab runs it again)
    path: str | None = field(default=None, repr=False)        # where its table was

    def line(self) -> str:
        if self.error:
            return f"your MERGE raised {self.error}"
        return (f"after one MERGE: {self.after_one} | after the replay: {self.after_replay} "
                f"| unchanged: {self.unchanged}")


def _snapshot(spark, table: str) -> tuple[dict, str, dict]:
    """Rows per order, a fingerprint of every row (as :func:`fingerprint`) and each order's status: one read."""
    rows = spark.read.format("delta").load(table).collect()
    per_order = Counter(row.order_id for row in rows)
    stamp = hashlib.sha256(repr(sorted(tuple(str(v) for v in row) for row in rows)).encode()).hexdigest()[:12]
    return {order: per_order[order] for order in sorted(per_order)}, stamp, {row.order_id: row.status for row in rows}


def merge_twice(spark, my_merge, batch, path: str, target: list[tuple] | None = None, replay: bool = True,
                copy_of: str | None = None) -> MergeTrial:
    """Run ``my_merge(spark, table, batch)`` on a new table at ``path``, then again with the same batch.

    The table starts empty, or with the events of ``target`` (tuples as :func:`events` takes them). An error
    the function raises is kept (one line), not raised, so the lab's checks can say what it means; an
    unfinished TODO is raised, so the cell shows the TODO's line. ``replay=False``: the first run only
    (``after_replay`` and ``unchanged`` stay None, ``statuses`` are read after it). ``copy_of``: the table starts as
    a copy of the Delta table in that folder (a file copy: its log keeps paths relative to the table)."""
    from ...checks import LabTodo
    from ...todos import raise_if_todo

    raise_if_todo(my_merge)
    from ...sparkerrors import quiet_error_log

    if copy_of:
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(copy_of, path)
        table = path
    elif target:
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        events(spark, target).write.format("delta").save(path)
        table = path
    else:
        table = empty_table(spark, path)
    trial, run = MergeTrial(merge=my_merge, path=path), "on the first run"
    try:
        with quiet_error_log():  # an error becomes trial.error's one line, not KBs on stderr
            my_merge(spark, table, batch)
            trial.after_one, before, trial.statuses = _snapshot(spark, table)
            if not replay:
                return trial
            run = "on the replay"
            my_merge(spark, table, batch)
            trial.after_replay, after, trial.statuses = _snapshot(spark, table)
            trial.unchanged = before == after
    except LabTodo:
        raise
    except Exception as err:  # noqa: BLE001 - the learner's code: any error is the answer to report
        first_line = (str(err).strip().splitlines() or [""])[0][:200]
        trial.error = f"{run}: {merge_error(err)}" + (f" ({first_line})" if merge_error(err) not in first_line else "")
    return trial


# ---------------------------------------------------------------------------
# a relative MERGE (a running total), and Delta's session settings that let a MERGE skip a replay
# ---------------------------------------------------------------------------
TOTAL_COLUMNS = "customer_id STRING, total DECIMAL(12,2)"


def payments(spark, rows: list[tuple[str, str]]):
    """A batch of ``(customer_id, amount)`` payments, one row per customer."""
    from decimal import Decimal

    return spark.createDataFrame([(c, Decimal(a)) for c, a in rows], "customer_id STRING, amount DECIMAL(10,2)")


def empty_totals(spark, path: str) -> str:
    """A fresh, empty Delta table of running totals per customer at ``path``."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    spark.createDataFrame([], TOTAL_COLUMNS).write.format("delta").save(path)
    return path


def add_amounts(spark, table: str, batch) -> None:
    """MERGE that ADDS each payment to the customer's total: the new value depends on the old one."""
    from delta.tables import DeltaTable

    (DeltaTable.forPath(spark, table).alias("t")
        .merge(batch.alias("s"), "t.customer_id = s.customer_id")
        .whenMatchedUpdate(set={"total": "t.total + s.amount"})
        .whenNotMatchedInsert(values={"customer_id": "s.customer_id", "total": "s.amount"})
        .execute())


def totals(spark, table: str) -> dict[str, str]:
    return {r.customer_id: str(r.total) for r in sorted(spark.read.format("delta").load(table).collect())}


def table_versions(table: str) -> int:
    """How many commits the table's ``_delta_log`` holds (read from the folder, no Spark)."""
    return len(deltalog.commit_files(table))
