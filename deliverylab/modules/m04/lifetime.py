"""A dedup key's lifetime, up close, in the notebook's own Spark (lesson 04, end of section 6).

One ``dropDuplicatesWithinWatermark`` query with a one-minute delay, its state kept in RocksDB, fed one
record at a time with chosen event times (``processAllAvailable`` after each, so each lands in a batch
of its own). T is the first order's event time:

    A      at T           the original
    F1     at T+1:59      another order: the watermark becomes T+0:59
    A'     at T+1:59      a copy of A, 1 min 59 s after it
    -- the query is stopped and started again, the state-store setting unset --
    F2     at T+2:01      another order: the watermark becomes T+1:01
    A''    at T+2:01      a copy of A, 2 min 1 s after it

Spark keeps A's key until the watermark reaches A's event time plus the delay (T+1:00), and the
watermark is the newest event time minus the delay, so A' is dropped and A'' passes: the key lived
until event times were two delays past it (Spark 4.2, ``StreamingDeduplicateWithinWatermarkExec``:
``expiresAt = timestamp + delay``, evicted once ``watermarkForEviction >= expiresAt``).

Every batch that moved the watermark is followed at once by a batch that reads nothing (a no-data
batch, ``spark.sql.streaming.noDataMicroBatches.enabled``): it evicts what the new watermark lets go.
Its ``offsets/N`` names the same Kafka offsets as ``offsets/N-1``, with a later watermark.

The state-store provider is one of the settings a query writes into its ``offsets/N`` files; on a
restart the checkpoint's value wins over the session's (``OffsetSeqMetadata.setSessionConf``), so
the restarted query keeps RocksDB though the setting was unset.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ... import checkpoint

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
T = "2026-01-01T00:00:00Z"


def dedup_query(spark, bootstrap: str, topic: str, ckpt: str, passed: list, login: dict | None = None):
    """Start the lesson's dedup on ``topic``: one-minute watermark, key order_id; every row it lets
    through is appended to ``passed`` as ``(batch id, order id, event time)``."""
    from pyspark.sql import functions as F

    from ...orders import ORDER_SCHEMA

    orders = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).options(**(login or {}))
              .option("subscribe", topic).option("startingOffsets", "earliest").load()
              .select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o")).select("o.*"))
    def keep(batch, batch_id):
        rows = batch.select("order_id", F.date_format("event_time", "yyyy-MM-dd'T'HH:mm:ss").alias("t")).collect()
        passed.extend((batch_id, row.order_id, row.t) for row in rows)

    return (orders.withWatermark("event_time", "1 minute")
            .dropDuplicatesWithinWatermark(["order_id"])
            .writeStream
            .foreachBatch(keep)
            .option("checkpointLocation", ckpt)
            .start())


@dataclass
class Lifetime:
    copies: dict            # label -> "dropped" or "passed"
    no_data_batches: int    # batches whose offsets repeat the batch before
    after_watermark_move: bool   # each of them ran with a later watermark than the batch before
    first_provider: str     # state store named in offsets/0
    last_provider: str      # state store named in the last offsets file (after the restart)

    def lines(self) -> list[str]:
        short = lambda name: name.rsplit(".", 1)[-1]  # noqa: E731
        return [*(f"{label}: {outcome}" for label, outcome in self.copies.items()),
                f"batches that read nothing: {self.no_data_batches} | each right after a batch that moved the "
                f"watermark: {self.after_watermark_move}",
                f"state store named in offsets/0: {short(self.first_provider)}",
                f"state store named in the last offsets file, after a restart with the setting unset: "
                f"{short(self.last_provider)}"]


def _provider(path: Path) -> str:
    return checkpoint.read_offsets_file(path)["metadata"].get("conf", {}).get(PROVIDER, "")


def _no_data(ckpt: Path, topic: str) -> tuple[int, bool]:
    files = checkpoint.numbered_files(ckpt / "offsets")
    repeats, moved = 0, True
    for n in sorted(files):
        if n - 1 not in files:
            continue
        this, before = checkpoint.read_offsets_file(files[n]), checkpoint.read_offsets_file(files[n - 1])
        if checkpoint.topic_offsets(this["sources"][0], topic) == checkpoint.topic_offsets(before["sources"][0], topic):
            repeats += 1
            moved = moved and this["metadata"]["batchWatermarkMs"] > before["metadata"]["batchWatermarkMs"]
    return repeats, moved


def run(spark, lesson, name: str = "lifetime") -> Lifetime:
    """Play the sequence of the module docstring and report what the query did."""
    from ...orders import generate_orders, produce
    from ...stack import kafka
    from .retries import copy_of

    topic, ckpt = lesson.topic(name), Path(lesson.checkpoint(name))
    kafka.ensure_topic(lesson.bootstrap, topic, partitions=1)
    a, f1, f2 = (copy_of(o, T) for o in generate_orders(3, seed=404, start=900))
    passed: list = []

    def send(order, event_time):
        produce(lesson.bootstrap, topic, [copy_of(order, event_time)], progress=False)
        query.processAllAvailable()     # waits for the no-data batch too

    spark.conf.set(PROVIDER, ROCKSDB)    # read when the query first starts
    try:
        query = dedup_query(spark, lesson.bootstrap, topic, str(ckpt), passed, lesson.spark_login)
    finally:
        spark.conf.unset(PROVIDER)
    try:
        send(a, T)
        send(f1, "2026-01-01T00:01:59Z")
        send(a, "2026-01-01T00:01:59Z")
    finally:
        query.stop()
    query = dedup_query(spark, lesson.bootstrap, topic, str(ckpt), passed, lesson.spark_login)
    try:
        send(f2, "2026-01-01T00:02:01Z")
        send(a, "2026-01-01T00:02:01Z")
    finally:
        query.stop()
    copies_of_a = [t for _, order_id, t in passed if order_id == a["order_id"]]
    outcome = lambda when: "passed" if any(t.startswith(when) for t in copies_of_a) else "dropped"  # noqa: E731
    repeats, moved = _no_data(ckpt, topic)
    last = max(checkpoint.numbered_files(ckpt / "offsets"))
    return Lifetime({"copy stamped 1 min 59 s after the original": outcome("2026-01-01T00:01:59"),
                     "copy stamped 2 min 1 s after the original ": outcome("2026-01-01T00:02:01")},
                    repeats, moved, _provider(ckpt / "offsets" / "0"), _provider(ckpt / "offsets" / str(last)))
