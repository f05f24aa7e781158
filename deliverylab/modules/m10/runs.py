"""Lesson 10's runs and table chores in one call each, so a cell shows the idea and not the plumbing.

The chores run in the notebook's Spark session (the course's ``iceberg`` catalog, its table cache off) while
the pipeline that writes the table is dead or stopped: the course's Hadoop catalog takes one writer at a time.
"""
from __future__ import annotations

import time

from ... import ledger
from ...crashlab import Pipeline
from ...orders import ORDER_SCHEMA
from ...stack.session import ICEBERG_CATALOG
from . import tables

#: The order id of the row "another writer" commits: never produced, so the ledger leaves it out.
FOREIGN_ID = "foreign-0001"


def crash_and_replay(lesson, variant: str, point: str = "after_sink_write", orders: int = 100,
                     name: str | None = None, before_restart=None, **pipeline_args):
    """Start ``variant``, process ``orders`` orders, crash it at ``point`` while a fresh batch of ``orders`` runs,
    call ``before_restart(pipe, crash)`` if given (the driver is dead), restart it from its checkpoint, let it
    catch up, and stop it. Returns ``(pipe, crash)``."""
    pipeline_args.setdefault("max_per_batch", 100)
    pipe = Pipeline(lesson, variant, name=name, **pipeline_args)
    try:
        pipe.start()
        pipe.produce(orders)
        pipe.drain()
        crash = pipe.crash(point, orders=orders)
        if before_restart is not None:
            before_restart(pipe, crash)
        pipe.restart()
        pipe.drain()
    finally:
        pipe.stop()
    return pipe, crash


def verdict(pipe) -> ledger.Ledger:
    """The ledger of a pipeline's Iceberg table, read without a JVM, the foreign writer's row left out."""
    rows = [row for row in tables.rows(pipe.sink) if row[0] != FOREIGN_ID]
    return ledger.reconcile(pipe.produced, rows, label=pipe.name)


def foreign_commit(spark, table: str) -> None:
    """Another writer commits a snapshot of its own: one row with the order id :data:`FOREIGN_ID`.

    A data commit, because only a data commit makes a snapshot (a change of table properties writes new
    metadata but no snapshot)."""
    spark.sql(f"INSERT INTO {tables.iceberg_identifier(table, spark)} "
              f"VALUES ('{FOREIGN_ID}', 'c-foreign', 0.00, 'placed', TIMESTAMP '2026-01-01 00:00:00')")


def expire_snapshots(spark, table: str, retain_last: int = 1) -> dict:
    """``CALL iceberg.system.expire_snapshots`` on ``table``: keep the newest ``retain_last`` ancestors, expire
    every other snapshot older than now. ``older_than`` must be given: its default is five days ago, which
    expires nothing a lesson made. Returns the procedure's counts (deleted files by kind)."""
    now = spark.sql("SELECT date_format(current_timestamp() + INTERVAL 1 SECOND, 'yyyy-MM-dd HH:mm:ss.SSS')").first()[0]
    row = spark.sql(f"CALL {ICEBERG_CATALOG}.system.expire_snapshots(table => '{tables.iceberg_identifier(table, spark)}', "
                    f"older_than => TIMESTAMP '{now}', retain_last => {retain_last})").first()
    return row.asDict()


def delta_expiry_run(lesson, retention_s: int = 2, outage_s: float = 3.0, orders: int = 100, pipe=None):
    """Delta's counterpart: ``delta_sink`` with ``delta.setTransactionRetentionDuration`` of ``retention_s``
    seconds, crashed after Delta's commit, restarted after an outage of ``outage_s`` (longer). Delta 4.4 drops a
    ``txn`` entry older than the retention when it builds a snapshot, so the replay is written again.
    ``pipe``: a ``delta_sink`` pipeline to go on with (the two-driver run's, still running: one start less) instead
    of a new one. Returns ``(pipe, crash)``."""
    from ...stack.session import get_spark

    def set_retention(pipe) -> None:  # its own commit, while the pipeline is idle
        get_spark().sql(f"ALTER TABLE delta.`{pipe.sink}` SET TBLPROPERTIES "
                        f"('delta.setTransactionRetentionDuration' = 'interval {retention_s} seconds')")

    if pipe is None:
        pipe = Pipeline(lesson, "delta_sink", name="delta_retention", max_per_batch=100)
    try:
        if not pipe.running:
            pipe.start() if pipe.starts == 0 else pipe.restart()
        pipe.produce(orders)
        pipe.drain()
        set_retention(pipe)
        crash = pipe.crash("after_sink_write", orders=orders)
        time.sleep(outage_s)  # the outage: longer than the retention
        pipe.restart()
        pipe.drain()
    finally:
        pipe.stop()
    return pipe, crash


CACHED_CATALOG = "iceberg_cached"


def cache_trap(spark, table: str, rows: int = 3) -> dict[str, int]:
    """Iceberg's catalog cache, made visible: a second catalog on the same warehouse with the cache on (and never
    expiring, so the demo does not depend on timing) counts ``table``; then ``rows`` rows are committed through the
    course's catalog (another Table object, as another driver's commit would be); then both catalogs count again;
    then the same rows are MERGEd (insert-only, on order_id) through the cached catalog, whose stale read finds
    none of them, so it appends them again; then the cached one counts once more after ``REFRESH TABLE``.
    Returns the counts by name."""
    prefix = f"spark.sql.catalog.{CACHED_CATALOG}"
    for key, value in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "hadoop",
                       ".warehouse": spark.conf.get(f"spark.sql.catalog.{ICEBERG_CATALOG}.warehouse"),
                       ".cache-enabled": "true", ".cache.expiration-interval-ms": "-1"}.items():
        spark.conf.set(prefix + key, value)
    course = tables.iceberg_identifier(table, spark)
    cached = CACHED_CATALOG + course.removeprefix(ICEBERG_CATALOG)

    def count(name: str) -> int:
        return spark.sql(f"SELECT count(*) FROM {name}").first()[0]

    def insert(first: int, n: int) -> None:
        values = ", ".join(f"('o-{i:06d}', 'c-1', 1.00, 'placed', TIMESTAMP '2026-01-01 00:00:00')"
                           for i in range(first, first + n))
        spark.sql(f"INSERT INTO {course} VALUES {values}")

    spark.sql(f"CREATE TABLE IF NOT EXISTS {course} ({ORDER_SCHEMA}) USING iceberg "
              "TBLPROPERTIES ('format-version' = '2')")
    insert(0, 2)
    counts = {"rows, cached catalog, before": count(cached)}
    insert(2, rows)
    counts["rows, cached catalog, after"] = count(cached)
    counts["rows, course catalog (cache off), after"] = count(course)
    counts["rows, pyiceberg (no JVM), after"] = len(tables.rows(table))
    # the same rows again, as an insert-only MERGE through the cached catalog: it reads the stale table
    spark.sql(f"SELECT * FROM {course} WHERE order_id >= 'o-{2:06d}'").createOrReplaceTempView("cache_demo_batch")
    spark.sql(f"MERGE INTO {cached} t USING cache_demo_batch s ON t.order_id = s.order_id WHEN NOT MATCHED THEN INSERT *")
    ids = [row[0] for row in tables.rows(table)]
    counts[f"rows after a MERGE of those {rows} through the cached catalog"] = len(ids)
    counts["order ids in the table twice"] = len(ids) - len(set(ids))
    spark.sql(f"REFRESH TABLE {cached}")
    counts["rows, cached catalog, after REFRESH TABLE"] = count(cached)
    return counts


def merge_plan(spark, table: str) -> dict[str, bool]:
    """What Spark's plan of an insert-only ``MERGE INTO`` of ``table`` on order_id is made of (``EXPLAIN``): an
    append of the rows an anti-join against the table's current scan kept, and no row-level rewrite."""
    spark.sql("SELECT * FROM VALUES ('o-plan', 'c-plan', CAST(1.00 AS DECIMAL(10,2)), 'placed', "
              "TIMESTAMP '2026-01-01 00:00:00') AS s(order_id, customer_id, amount, status, event_time)"
              ).createOrReplaceTempView("plan_batch")  # a batch of one row (an empty one would plan no join)
    plan = spark.sql(f"EXPLAIN MERGE INTO {tables.iceberg_identifier(table, spark)} t USING plan_batch s "
                     "ON t.order_id = s.order_id WHEN NOT MATCHED THEN INSERT *").first()[0]
    return {"an append (AppendData)": "AppendData" in plan,
            "an anti-join of the batch against the table (LeftAnti)": "LeftAnti" in plan,
            "a scan of the table's current snapshot (BatchScan)": "BatchScan" in plan,
            "a row-level rewrite (ReplaceData, WriteDelta)": "ReplaceData" in plan or "WriteDelta" in plan}
