"""The orders pipeline, Kafka -> Spark -> a sink, in the variants the course compares.

Each variant is a short function a lesson can show to the learner
(``inspect.getsource(variants.at_least_once)``). It receives the parsed ``orders``
stream and an ``Outputs`` (where to write), and returns the started streaming query.
The crash lab runs each variant in a driver process of its own (see ``driver.py``).
:data:`VARIANTS` is the one table of them: the guarantee the course expects of each,
and the kind of sink it writes (see ``sinks.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..config import CourseError
from ..course import did_you_mean
from ..orders import ORDER_SCHEMA
from ..stack.session import with_iceberg
from .crashpoints import crash_here  # variants with crash points of their own call it in their batch function
from .drivers import runnable_here

ORDER_COLUMNS = ["order_id", "customer_id", "amount", "status", "event_time"]


@dataclass(frozen=True)
class Outputs:
    sink: str          # a folder (Parquet, Delta), a SQLite file, a Kafka topic, a memory table name
    checkpoint: str    # the query's checkpoint folder
    bootstrap: str     # the Kafka broker
    app_id: str        # a stable id for idempotent writers (Delta txnAppId)
    options: dict = field(default_factory=dict)  # a lesson's settings for a variant (Pipeline(options=...))

    @property
    def iceberg_table(self) -> str:  # module 10: the course catalog's name for the Iceberg table in folder `sink`
        from .sinks import iceberg_identifier
        return iceberg_identifier(self.sink)

    @property
    def login_options(self) -> dict:
        """Spark's Kafka options that log in at ``bootstrap`` on a class broker with logins ({} on your own broker)."""
        from ..stack import kafka

        return kafka.spark_security(self.bootstrap)


def read_orders(spark, bootstrap: str, topic: str, starting_offsets: str = "earliest", max_per_batch: int | None = None,
                min_partitions: int | None = None):
    """The orders topic as a stream of parsed order rows.

    ``min_partitions`` (Kafka's ``minPartitions``): a batch whose records come from fewer topic
    partitions than this is split into this many Spark partitions (the crash lab asks for 2).
    """
    from pyspark.sql import functions as F

    from ..stack import kafka

    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .options(**kafka.spark_security(bootstrap))  # a class broker's login ({} on your own broker)
              .option("subscribe", topic)
              .option("startingOffsets", starting_offsets))
    if max_per_batch:
        reader = reader.option("maxOffsetsPerTrigger", max_per_batch)
    if min_partitions:
        reader = reader.option("minPartitions", min_partitions)
    return (reader.load()
            .select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("order"))
            .select("order.*"))


# ---------------------------------------------------------------------------
# at-most-once: progress is not kept; a restart begins at the end of the topic
# ---------------------------------------------------------------------------
def at_most_once(orders, out: Outputs):
    """Reads with startingOffsets=latest and a throw-away checkpoint (a new one at every start)."""
    def append(batch, batch_id):
        batch.write.mode("append").parquet(out.sink)

    return orders.writeStream.foreachBatch(append).option("checkpointLocation", out.checkpoint).start()


def memory_sink(orders, out: Outputs):
    """Spark's memory sink: a table in the driver's memory, gone when the driver dies.

    Spark refuses to resume such a query from its checkpoint ("This query does not support
    recovering from checkpoint location"), so a restart is a new query with a new checkpoint.
    """
    return (orders.writeStream.format("memory").queryName(out.sink)
            .option("checkpointLocation", out.checkpoint).start())


# ---------------------------------------------------------------------------
# at-least-once: durable progress, but a plain append that a replay repeats
# ---------------------------------------------------------------------------
def at_least_once(orders, out: Outputs):
    def append(batch, batch_id):
        batch.write.mode("append").parquet(out.sink)  # a replay of batch_id appends it again

    return orders.writeStream.foreachBatch(append).option("checkpointLocation", out.checkpoint).start()


def file_sink(orders, out: Outputs):
    """Spark's file sink: exactly-once for readers that go through its _spark_metadata log."""
    return orders.writeStream.format("parquet").option("checkpointLocation", out.checkpoint).start(out.sink)


def kafka_sink(orders, out: Outputs):
    """Spark's Kafka sink is at-least-once: a replayed batch is sent again."""
    from pyspark.sql import functions as F

    records = orders.select(F.col("order_id").alias("key"), F.to_json(F.struct(*ORDER_COLUMNS)).alias("value"))
    return (records.writeStream.format("kafka")
            .option("kafka.bootstrap.servers", out.bootstrap)
            .options(**out.login_options)  # a class broker's login ({} on your own broker)
            .option("topic", out.sink)
            .option("checkpointLocation", out.checkpoint)
            .start())


# ---------------------------------------------------------------------------
# exactly-once: replayable source + durable progress + idempotent/transactional sink
# ---------------------------------------------------------------------------
def delta_sink(orders, out: Outputs):
    """Delta's streaming sink records (query id, batch id) in each commit and skips a replay."""
    return orders.writeStream.format("delta").option("checkpointLocation", out.checkpoint).start(out.sink)


def delta_txn(orders, out: Outputs):
    """foreachBatch made idempotent: Delta skips a (txnAppId, txnVersion) it has already committed."""
    def append_once(batch, batch_id):
        (batch.write.format("delta").mode("append")
            .option("txnAppId", out.app_id)
            .option("txnVersion", batch_id)
            .save(out.sink))

    return orders.writeStream.foreachBatch(append_once).option("checkpointLocation", out.checkpoint).start()


def delta_merge(orders, out: Outputs):
    """MERGE on the business key: replaying the same batch updates rows instead of adding them."""
    from delta.tables import DeltaTable

    def upsert(batch, batch_id):
        target = DeltaTable.forPath(batch.sparkSession, out.sink)
        (target.alias("t").merge(batch.alias("s"), "t.order_id = s.order_id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute())

    return orders.writeStream.foreachBatch(upsert).option("checkpointLocation", out.checkpoint).start()


def sqlite_upsert(orders, out: Outputs):
    """A real database: one transaction per batch, INSERT ... ON CONFLICT on the order id.

    Rows stream in partition by partition (toLocalIterator), inside the one transaction.
    """
    import sqlite3

    def upsert(batch, batch_id):
        rows = ((r.order_id, r.customer_id, str(r.amount), r.status, str(r.event_time))
                for r in batch.toLocalIterator())
        db = sqlite3.connect(out.sink)
        try:
            with db:  # one transaction: commits when the block ends, rolls back on an error
                db.executemany(
                    "INSERT INTO orders VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT(order_id) DO UPDATE SET amount = excluded.amount, status = excluded.status",
                    rows)
        finally:
            db.close()

    return orders.writeStream.foreachBatch(upsert).option("checkpointLocation", out.checkpoint).start()


# ---------------------------------------------------------------------------
# deduplication in the stream (module 04), in front of the same plain append;
# out.options["delay"] is the watermark's delay (default "1 minute")
# ---------------------------------------------------------------------------
def dedup_no_watermark(orders, out: Outputs):
    """Keyed on the order id alone, with no watermark: every id ever seen stays in the state."""
    def append(batch, batch_id):
        batch.write.mode("append").parquet(out.sink)

    deduped = orders.dropDuplicates(["order_id"])
    return deduped.writeStream.foreachBatch(append).option("checkpointLocation", out.checkpoint).start()


def dedup_watermark(orders, out: Outputs):
    """Keyed on (order id, event time); state for a key goes once the watermark passes its event time."""
    def append(batch, batch_id):
        batch.write.mode("append").parquet(out.sink)

    deduped = (orders.withWatermark("event_time", out.options.get("delay", "1 minute"))
               .dropDuplicates(["order_id", "event_time"]))
    return deduped.writeStream.foreachBatch(append).option("checkpointLocation", out.checkpoint).start()


def dedup_within_watermark(orders, out: Outputs):
    """Keyed on the order id alone; its state goes once the watermark passes first event time + delay."""
    def append(batch, batch_id):
        batch.write.mode("append").parquet(out.sink)

    deduped = (orders.withWatermark("event_time", out.options.get("delay", "1 minute"))
               .dropDuplicatesWithinWatermark(["order_id"]))
    return deduped.writeStream.foreachBatch(append).option("checkpointLocation", out.checkpoint).start()


# ---------------------------------------------------------------------------
# module 06: the Kafka sink with the producer's idempotence asked for explicitly
# ---------------------------------------------------------------------------
def kafka_sink_idempotent(orders, out: Outputs):
    """The Kafka sink with an idempotent producer (acks=all): a replayed batch is still sent again."""
    from pyspark.sql import functions as F

    records = orders.select(F.col("order_id").alias("key"), F.to_json(F.struct(*ORDER_COLUMNS)).alias("value"))
    return (records.writeStream.format("kafka")
            .option("kafka.bootstrap.servers", out.bootstrap)
            .options(**out.login_options)  # a class broker's login ({} on your own broker)
            .option("kafka.enable.idempotence", "true")  # removes duplicates of this producer's own retries
            .option("kafka.acks", "all")
            .option("topic", out.sink)
            .option("checkpointLocation", out.checkpoint)
            .start())


# ---------------------------------------------------------------------------
# module 05: what makes a sink exactly-once (and what only looks like it)
# ---------------------------------------------------------------------------
def delta_txn_per_checkpoint(orders, out: Outputs):
    """delta_txn with a new txnAppId for every new checkpoint: the query id, which a new checkpoint changes."""
    from deliverylab.checkpoint import query_id

    def append_once(batch, batch_id):
        (batch.write.format("delta").mode("append")
            .option("txnAppId", f"{out.app_id}/{query_id(out.checkpoint)}")
            .option("txnVersion", batch_id)
            .save(out.sink))

    return orders.writeStream.foreachBatch(append_once).option("checkpointLocation", out.checkpoint).start()


def _order_rows(batch) -> list[tuple]:
    return [(r.order_id, r.customer_id, str(r.amount), r.status, str(r.event_time)) for r in batch.toLocalIterator()]


def control_table_after(orders, out: Outputs):
    """A control table of processed batch ids, written AFTER the data, in a second transaction."""
    import sqlite3

    def write(batch, batch_id):
        db = sqlite3.connect(out.sink)
        try:
            if db.execute("SELECT 1 FROM processed_batches WHERE batch_id = ?", (batch_id,)).fetchone():
                return                                   # marked as done: skip the replay
            with db:                                     # transaction 1: the data
                db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", _order_rows(batch))
            crash_here("between_data_and_marker", batch_id)
            with db:                                     # transaction 2: the marker
                db.execute("INSERT INTO processed_batches VALUES (?)", (batch_id,))
        finally:
            db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def control_table_atomic(orders, out: Outputs):
    """The same control table, but data and marker commit in ONE transaction."""
    import sqlite3

    def write(batch, batch_id):
        db = sqlite3.connect(out.sink)
        try:
            if db.execute("SELECT 1 FROM processed_batches WHERE batch_id = ?", (batch_id,)).fetchone():
                return                                   # marked as done: skip the replay
            with db:                                     # one transaction: both or neither
                db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", _order_rows(batch))
                crash_here("between_data_and_marker", batch_id)
                db.execute("INSERT INTO processed_batches VALUES (?)", (batch_id,))
        finally:
            db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def two_phase_commit(orders, out: Outputs):
    """Stage each batch where readers of the published folder never look, then publish it in one rename
    (atomic on one POSIX/HDFS file system, not on an object store), once per batch id."""
    from deliverylab.crashlab import twophase

    def write(batch, batch_id):
        rows = [r.asDict() for r in batch.toLocalIterator()]
        twophase.stage(out.sink, batch_id, rows)         # phase 1: invisible
        crash_here("between_stage_and_publish", batch_id)
        twophase.publish(out.sink, batch_id)             # phase 2: one rename; a second publish is a no-op

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


# ---------------------------------------------------------------------------
# module 07: a side effect next to an exactly-once write; out.options["notifications"] is a SQLite file
# ---------------------------------------------------------------------------
def notify_per_batch(orders, out: Outputs):
    """The orders reach Delta exactly once (txnAppId); the notification per batch is appended again on a replay."""
    import sqlite3

    def write(batch, batch_id):
        (batch.write.format("delta").mode("append")
            .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))
        db = sqlite3.connect(out.options["notifications"])
        try:
            with db:  # the side effect: "N new orders" for this batch
                db.execute("CREATE TABLE IF NOT EXISTS notifications (query_id TEXT, batch_id INTEGER, orders INTEGER)")
                db.execute("INSERT INTO notifications VALUES (?, ?, ?)", ("-", batch_id, batch.count()))
        finally:
            db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def notify_once(orders, out: Outputs):
    """The same notification, keyed on (query id, batch id): a replay finds its key and adds nothing."""
    import sqlite3

    from deliverylab.checkpoint import query_id

    def write(batch, batch_id):
        (batch.write.format("delta").mode("append")
            .option("txnAppId", out.app_id).option("txnVersion", batch_id).save(out.sink))
        db = sqlite3.connect(out.options["notifications"])
        try:
            with db:
                db.execute("CREATE TABLE IF NOT EXISTS notifications (query_id TEXT, batch_id INTEGER, orders INTEGER, "
                           "PRIMARY KEY (query_id, batch_id))")
                db.execute("INSERT OR IGNORE INTO notifications VALUES (?, ?, ?)",
                           (query_id(out.checkpoint), batch_id, batch.count()))
        finally:
            db.close()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


# ------------------- module 10: Iceberg (the Iceberg kernel only); the sink is a table of the course's catalog
def iceberg_sink(orders, out: Outputs):
    """Iceberg's streaming sink: each batch is one commit whose snapshot summary names the query and the batch."""
    return (orders.writeStream.format("iceberg").outputMode("append")
            .option("checkpointLocation", out.checkpoint).toTable(out.iceberg_table))


def iceberg_append(orders, out: Outputs):
    """foreachBatch with a plain append: nothing in the table says which batch a commit was."""
    table = out.iceberg_table
    def append(batch, batch_id):
        batch.writeTo(table).append()  # a replay of batch_id appends it again

    return orders.writeStream.foreachBatch(append).option("checkpointLocation", out.checkpoint).start()


def iceberg_stamped(orders, out: Outputs):
    """foreachBatch made exactly-once: the commit carries a batch stamp in its summary, checked before writing."""
    from deliverylab.checkpoint import query_id
    table = out.iceberg_table

    def append_once(batch, batch_id):
        stamp = f"{query_id(out.checkpoint)}:{batch_id}"  # the checkpoint's query id: a new checkpoint, new stamps
        done = batch.sparkSession.sql(
            f"SELECT count(*) FROM {table}.snapshots s JOIN {table}.history h USING (snapshot_id) "
            f"WHERE h.is_current_ancestor AND s.summary['course.batch'] = '{stamp}'").first()[0]
        if done:
            return  # this batch's commit is in the table already: a replay
        batch.writeTo(table).option("snapshot-property.course.batch", stamp).append()  # rows + stamp: ONE commit

    return orders.writeStream.foreachBatch(append_once).option("checkpointLocation", out.checkpoint).start()


def iceberg_merge(orders, out: Outputs):
    """foreachBatch MERGE INTO on the order id: a replayed batch finds its orders and inserts nothing."""
    table = out.iceberg_table
    def merge(batch, batch_id):
        batch.createOrReplaceTempView("orders_batch")
        batch.sparkSession.sql(f"MERGE INTO {table} t USING orders_batch s ON t.order_id = s.order_id "
                               "WHEN NOT MATCHED THEN INSERT *")

    return orders.writeStream.foreachBatch(merge).option("checkpointLocation", out.checkpoint).start()


@dataclass(frozen=True)
class Variant:
    name: str
    start: object            # the function above
    guarantee: str           # what the course expects: at-most-once | at-least-once | exactly-once
    sink_kind: str           # parquet | parquet-log | kafka | delta | sqlite (see sinks.py)
    starting_offsets: str = "earliest"
    fresh_checkpoint_each_start: bool = False
    table_first: bool = False  # the sink table must exist before batch 0 (a MERGE needs a target)
    crash_points: tuple = ()   # its own crash points, inside its batch function (crashpoints.crash_here)


VARIANTS = {v.name: v for v in (
    Variant("at_most_once", at_most_once, "at-most-once", "parquet", "latest", fresh_checkpoint_each_start=True),
    Variant("memory_sink", memory_sink, "at-most-once", "memory", "latest", fresh_checkpoint_each_start=True),
    Variant("at_least_once", at_least_once, "at-least-once", "parquet"),
    Variant("file_sink", file_sink, "exactly-once", "parquet-log"),
    Variant("kafka_sink", kafka_sink, "at-least-once", "kafka"),
    Variant("delta_sink", delta_sink, "exactly-once", "delta"),
    Variant("delta_txn", delta_txn, "exactly-once", "delta"),
    Variant("delta_merge", delta_merge, "exactly-once", "delta", table_first=True),
    Variant("sqlite_upsert", sqlite_upsert, "exactly-once", "sqlite"),
    # dedup removes duplicates that came in through the topic; the append still repeats a replay
    Variant("dedup_no_watermark", dedup_no_watermark, "at-least-once", "parquet"),
    Variant("dedup_watermark", dedup_watermark, "at-least-once", "parquet"),
    Variant("dedup_within_watermark", dedup_within_watermark, "at-least-once", "parquet"),
    # module 06: an idempotent producer dedups its own retries, not a replay by a new driver
    Variant("kafka_sink_idempotent", kafka_sink_idempotent, "at-least-once", "kafka"),
    Variant("delta_txn_per_checkpoint", delta_txn_per_checkpoint, "exactly-once", "delta"),
    Variant("control_table_after", control_table_after, "at-least-once", "sqlite-log",
            crash_points=("between_data_and_marker",)),
    Variant("control_table_atomic", control_table_atomic, "exactly-once", "sqlite-log",
            crash_points=("between_data_and_marker",)),
    Variant("two_phase_commit", two_phase_commit, "exactly-once", "two-phase",
            crash_points=("between_stage_and_publish",)),
    # module 07: the table is exactly-once either way; the notifications are not, unless keyed
    Variant("notify_per_batch", notify_per_batch, "exactly-once", "delta"),
    Variant("notify_once", notify_once, "exactly-once", "delta"),
)}
#: Module 10's rows: in VARIANTS only where Spark carries Iceberg (its kernel); the main kernel's table is unchanged.
ICEBERG_VARIANTS = {v.name: v for v in (
    Variant("iceberg_sink", iceberg_sink, "exactly-once", "iceberg"),
    Variant("iceberg_append", iceberg_append, "at-least-once", "iceberg"),
    Variant("iceberg_stamped", iceberg_stamped, "exactly-once", "iceberg"),
    Variant("iceberg_merge", iceberg_merge, "exactly-once", "iceberg"),
)}
if with_iceberg():
    VARIANTS.update(ICEBERG_VARIANTS)


#: Prepended to a learner's pipeline function when it runs in a driver process.
CUSTOM_HEADER = """# Written by deliverylab from a notebook cell: the pipeline this driver runs.
from pyspark.sql import functions as F
from deliverylab.checks import todo
from deliverylab.crashlab.crashpoints import crash_here
from deliverylab.crashlab.variants import Outputs


"""


def custom(function, sink_kind: str = "delta", guarantee: str = "unknown", crash_points: tuple = ()) -> Variant:
    """A learner's own pipeline: ``def my_pipeline(orders, out): ... return query``.

    It runs in a driver process of its own, so it must be self-contained: it sees only
    what it imports or defines inside itself (plus ``F``, ``crash_here`` and ``Outputs``).
    """
    import inspect

    if not callable(function) or len(inspect.signature(function).parameters) != 2:
        raise CourseError("A pipeline is a function of two arguments, (orders, out), that starts the query "
                          "and returns it: def my_pipeline(orders, out): return orders.writeStream...start()")
    if sink_kind not in _sink_kinds():
        raise CourseError(f"Unknown sink kind {sink_kind!r}.{did_you_mean(sink_kind, _sink_kinds())} "
                          f"Sink kinds: {', '.join(_sink_kinds())}.")
    return Variant(function.__name__, function, guarantee, sink_kind, crash_points=tuple(crash_points))


def custom_source(function) -> str:
    """The module a driver imports to run a learner's pipeline function."""
    import inspect
    import textwrap

    try:
        code = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        raise CourseError(f"Cannot read the code of {getattr(function, '__name__', function)!r}. Define the "
                          "pipeline with `def` in a notebook cell (not a lambda), then pass it.") from None
    return CUSTOM_HEADER + code


def load_custom(path: str, name: str, spec: dict) -> Variant:
    """In a driver: the learner's function from the file the notebook wrote (see custom_source)."""
    import importlib.util

    module_spec = importlib.util.spec_from_file_location(f"deliverylab_custom_{name}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return Variant(name, getattr(module, name), spec.get("guarantee", "unknown"), spec["sink_kind"],
                   crash_points=tuple(spec.get("crash_points", ())))


def _sink_kinds() -> list[str]:
    from .sinks import SINKS
    return list(SINKS)


def variant(name: str) -> Variant:
    """The variant called ``name``, or a CourseError naming the closest one and all of them."""
    if name in ICEBERG_VARIANTS and name not in VARIANTS:  # main kernel: the Iceberg venv's drivers (or `make setup`)
        return runnable_here(ICEBERG_VARIANTS[name])
    if name not in VARIANTS:
        raise CourseError(f"Unknown pipeline {name!r}.{did_you_mean(name, VARIANTS)} "
                          f"Pipelines: {', '.join(VARIANTS)}.")
    return VARIANTS[name]
