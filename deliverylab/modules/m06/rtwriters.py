"""Real-time mode into a ``ForeachWriter`` (lesson 06 section 9): two ways to key the writes, one crash.

Real-time mode refuses Delta's sink and ``foreachBatch``, but it accepts a ``ForeachWriter``
(``writeStream.foreach(writer)``, output mode ``update``). Spark calls ``open(partition_id, epoch_id)``
once per input partition and batch, ``process(row)`` for each row as it arrives, then ``close(error)``;
``epoch_id`` is the batch id. Making that exactly-once is the writer's job. Two writers, each into a
SQLite file of its own, behind one query (:class:`Both`), so they see exactly the same run:

    ByCoordinates   upserts each record on its Kafka coordinates (topic, partition, offset)
    ByEpoch         the pattern PySpark's ForeachWriter documentation gives for micro-batches: the
                    rows of one (partition_id, epoch_id) in one transaction, committed in ``close()``
                    with the pair in a ``done`` table; ``open()`` refuses a pair it finds there

:func:`crash_and_replay` runs them in a crash-lab driver and SIGKILLs it between ``offsets/N`` and
``commits/N``: in real-time mode Spark writes ``offsets/N`` only when batch N ends, after the writers
had its rows. The restarted driver deletes that uncommitted ``offsets/N`` (Spark 4.2,
``MicroBatchExecution``: "we delete the extra entries in offsetLog to sync up") and runs batch N again,
under the same id, from where batch N-1 ended, for a whole new batch duration: it reads whatever has
arrived by then, here also the orders produced while the driver was down.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ...config import CourseError

#: The demo's batch duration: shorter than real-time mode's default minimum of 5 s, which the pipeline lowers
#: in its own session (``spark.sql.streaming.realTimeMode.minBatchDuration``), so the demo costs less waiting.
BATCH = "2 seconds"
MIN_BATCH = "spark.sql.streaming.realTimeMode.minBatchDuration"
NAME = "realtime-writers"
TOPIC = f"{NAME}-orders"
TABLES = {
    "by_coordinates": ["CREATE TABLE IF NOT EXISTS orders (topic TEXT, part INTEGER, offset INTEGER, "
                       "order_id TEXT, amount TEXT, writes INTEGER, PRIMARY KEY (topic, part, offset))"],
    "by_epoch": ["CREATE TABLE IF NOT EXISTS orders (order_id TEXT, amount TEXT, part INTEGER, epoch INTEGER)",
                 "CREATE TABLE IF NOT EXISTS done (part INTEGER, epoch INTEGER, PRIMARY KEY (part, epoch))",
                 "CREATE TABLE IF NOT EXISTS refused (part INTEGER, epoch INTEGER)"],
}


class ByCoordinates:
    """Upsert each record on its own coordinates in Kafka: a replayed record lands on its own row."""

    def __init__(self, db: str):
        self.db = db

    def open(self, partition_id, epoch_id):
        self.conn = sqlite3.connect(self.db, timeout=60)
        return True

    def process(self, row):
        self.conn.execute("INSERT INTO orders VALUES (?, ?, ?, ?, ?, 1) ON CONFLICT (topic, part, offset) "
                          "DO UPDATE SET order_id = excluded.order_id, amount = excluded.amount, writes = writes + 1",
                          (row.topic, row.partition, row.offset, row.order_id, str(row.amount)))
        self.conn.commit()  # each row as it arrives: a replay writes it again on the same row

    def close(self, error):
        self.conn.close()


class ByEpoch:
    """Skip a (partition_id, epoch_id) already committed, as PySpark's ForeachWriter docstring suggests for
    micro-batch mode. Not safe in either mode (Spark's guide, SPARK-28650): a micro-batch replay reads the same
    range but may split it into other partitions (epochsplit.py), a real-time replay reads another range."""

    def __init__(self, db: str):
        self.db = db

    def open(self, partition_id, epoch_id):
        self.conn = sqlite3.connect(self.db, timeout=60)
        self.key = (partition_id, epoch_id)
        self.writing = not self.conn.execute("SELECT 1 FROM done WHERE part = ? AND epoch = ?", self.key).fetchone()
        if not self.writing:
            self.conn.execute("INSERT INTO refused VALUES (?, ?)", self.key)  # for the lesson to count
            self.conn.commit()
        return self.writing

    def process(self, row):
        self.conn.execute("INSERT INTO orders VALUES (?, ?, ?, ?)", (row.order_id, str(row.amount), *self.key))

    def close(self, error):  # Spark calls it after an open() that said no, too
        if error is None and self.writing:  # the rows and the pair in one transaction
            self.conn.execute("INSERT INTO done VALUES (?, ?)", self.key)
            self.conn.commit()
        else:
            self.conn.rollback()
        self.conn.close()


class Both:
    """Hand every row of one query to several writers, each opened and closed as Spark would."""

    def __init__(self, *writers):
        self.writers = writers

    def open(self, partition_id, epoch_id):
        self.taking = [w for w in self.writers if w.open(partition_id, epoch_id)]
        return True

    def process(self, row):
        for writer in self.taking:
            writer.process(row)

    def close(self, error):
        for writer in self.writers:  # a writer whose open() said no is closed too, as Spark does
            writer.close(error)


def prepare(folder: str | Path) -> dict[str, str]:
    """Fresh SQLite files for both writers in ``folder``: ``{"by_coordinates": path, "by_epoch": path}``."""
    paths = {}
    for name, statements in TABLES.items():
        path = Path(folder) / f"{NAME}-{name}.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        with sqlite3.connect(path) as conn:
            for sql in statements:
                conn.execute(sql)
        conn.close()
        paths[name] = str(path)
    return paths


def _query(db: str, sql: str, args: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(db, timeout=60)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def rows(db: str) -> list[tuple[str, str]]:
    """``(order_id, amount)`` of every row a writer's file holds."""
    if not Path(db).is_file():
        raise CourseError(f"No writer's database at {db}: run prepare() first.")
    return _query(db, "SELECT order_id, amount FROM orders")


def written_again(db: str) -> int:
    """How many of ByCoordinates' rows were written more than once (by a replay)."""
    return _query(db, "SELECT COUNT(*) FROM orders WHERE writes > 1")[0][0]


def refused(db: str) -> list[tuple[int, int]]:
    """The (partition_id, epoch_id) pairs ByEpoch's ``open()`` refused, in the order it refused them."""
    return _query(db, "SELECT part, epoch FROM refused ORDER BY rowid")


def realtime_writers(orders, out):
    """The crash-lab pipeline: both writers behind one real-time query (runs in the driver).

    It reads the topic itself: the crash lab's ``orders`` asks Kafka for ``minPartitions``, an option
    real-time mode refuses. ``out.options`` names the topic and the two SQLite files.
    """
    from pyspark.sql import functions as F

    from deliverylab.modules.m06 import rtwriters
    from deliverylab.orders import ORDER_SCHEMA

    spark = orders.sparkSession  # this pipeline's own session in the driver
    spark.conf.set(rtwriters.MIN_BATCH, "1s")
    source = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", out.bootstrap)
              .options(**out.login_options).option("subscribe", out.options["topic"])
              .option("startingOffsets", "earliest").load())
    parsed = source.select("topic", "partition", "offset",
                           F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"))
    writer = rtwriters.Both(rtwriters.ByCoordinates(out.options["by_coordinates"]),
                            rtwriters.ByEpoch(out.options["by_epoch"]))
    return (parsed.select("topic", "partition", "offset", "o.order_id", "o.amount").writeStream
            .foreach(writer).outputMode("update").option("checkpointLocation", out.checkpoint)
            .trigger(realTime=rtwriters.BATCH).start())


@dataclass
class RealTimeReplay:
    """What one crash and restart of :func:`realtime_writers` left, reconciled for each writer."""
    by_sigkill: bool                 # the driver died by SIGKILL
    between_offsets_and_commits: bool  # offsets/N written, commits/N not, when it died
    first_start: int | None          # where batch N starts (batch N-1's end)
    first_end: int | None            # end offset batch N recorded before the crash
    replay_end: int | None           # end offset of batch N once the restart ran it again
    crashed_batch: int | None
    refused: list                    # (partition_id, epoch_id) pairs ByEpoch's open() refused
    written_again: int               # ByCoordinates' rows written twice or more
    coordinates: object              # ledger.Ledger of ByCoordinates
    epoch: object                    # ledger.Ledger of ByEpoch

    def lines(self) -> list[str]:
        """Only what held on every run: how many orders each attempt of batch N read depends on timing."""
        c, e = self.coordinates, self.epoch
        return [f"driver killed by SIGKILL between offsets/N and commits/N: "
                f"{self.by_sigkill and self.between_offsets_and_commits}",
                f"the restart ran batch N again, with the same epoch_id: {self.refused == [(0, self.crashed_batch)]}",
                f"keyed by (topic, partition, offset): {c.verdict} | lost {c.lost} | duplicated {c.duplicated}",
                f"  rows it wrote a second time, each on its own row: {self.written_again > 0}",
                f"keyed by (partition, epoch): exactly-once: {e.verdict == 'exactly-once'}"]

    def counts(self) -> str:
        """This run's numbers (they vary from run to run): what batch N read before and after the crash."""
        def read(end):
            return "?" if end is None or self.first_start is None else end - self.first_start

        return (f"batch N read {read(self.first_end)} orders before the crash, {read(self.replay_end)} when it ran "
                f"again | keyed by (partition, epoch): lost {self.epoch.lost}, duplicated {self.epoch.duplicated}")

    def line(self) -> str:
        return "\n".join(self.lines())


def _end(ckpt: str, batch: int | None, topic: str) -> int | None:
    from ... import checkpoint

    ends = checkpoint.topic_offsets(checkpoint.source_line(ckpt, batch), topic) if batch is not None else None
    return ends.get(0) if ends else None


def _clear(lesson) -> None:
    """Forget an earlier run of the demo (a cell run again): its topic, checkpoint and pipeline folder."""
    import shutil

    from ...stack import kafka

    kafka.delete_topics(lesson.bootstrap, [lesson.topic(TOPIC)])
    for folder in (lesson.checkpoint(NAME), lesson.path("pipelines", NAME)):
        shutil.rmtree(folder, ignore_errors=True)


def crash_and_replay(lesson, orders: int = 20) -> RealTimeReplay:
    """Both writers in a crash-lab driver: ``orders`` orders, a SIGKILL after their batch reached the writers
    and ``offsets/N`` was written (before ``commits/N``), ``orders`` more while the driver is down, a restart."""
    from ... import checkpoint, crashlab, ledger
    from ...stack import kafka

    dbs = prepare(lesson.path("tables"))
    _clear(lesson)
    pipe = crashlab.Pipeline(lesson, realtime_writers, name=NAME, topic=TOPIC, sink="sqlite", max_per_batch=None,
                             options=dbs)
    pipe.options["topic"] = pipe.topic
    kafka.ensure_topic(lesson.bootstrap, pipe.topic, partitions=1)  # real-time mode holds a core per partition
    try:
        pipe.start()
        crash = pipe.crash("after_sink_write", orders=orders)
        offsets, commits = checkpoint.batch_ids(pipe.checkpoint)
        first_end = _end(pipe.checkpoint, crash.batch, pipe.topic)
        pipe.produce(orders)  # while the driver is down
        pipe.restart()
        pipe.drain()
    finally:
        pipe.stop()
    batch, ckpt = crash.batch, pipe.checkpoint
    return RealTimeReplay(
        by_sigkill=crash.by_sigkill, between_offsets_and_commits=batch in offsets and batch not in commits,
        first_start=(_end(ckpt, batch - 1, pipe.topic) or 0) if batch is not None else None,
        first_end=first_end, replay_end=_end(ckpt, batch, pipe.topic), crashed_batch=batch,
        refused=refused(dbs["by_epoch"]), written_again=written_again(dbs["by_coordinates"]),
        coordinates=ledger.reconcile(pipe.produced, rows(dbs["by_coordinates"])),
        epoch=ledger.reconcile(pipe.produced, rows(dbs["by_epoch"])))
