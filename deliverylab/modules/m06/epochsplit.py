"""A ``ForeachWriter``'s ``(partition_id, epoch_id)`` in micro-batch mode (lesson 06, section 9): the replay of a
batch reads the same offsets, but Spark may split them into other partitions, and then the pair names other rows.

    replay_split(spark, lesson)   both writers of ``rtwriters`` (ByCoordinates, ByEpoch) behind one micro-batch
                                  query in the notebook's Spark: batch 0 over a topic of one partition, in one Spark
                                  partition; its ``commits/0`` deleted, as a driver killed after the write leaves the
                                  checkpoint; the same query again with the Kafka source's ``minPartitions=2``, which
                                  splits the same range in two

Spark's Structured Streaming guide (the ``foreach`` sink, since Spark 3.0, SPARK-28650): "Spark does not guarantee
same output for (partitionId, epochId), so deduplication cannot be achieved with (partitionId, epochId)", naming a
source that gives another number of partitions and Spark's optimizations as causes. PySpark 4.2's ``ForeachWriter``
docstring (``DataStreamWriter.foreach``) still says the pair has the same data in micro-batch mode.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import rtwriters

NAME = "epoch-split"


@dataclass
class SplitReplay:
    same_range: bool          # offsets/0 is the same file before and after the replay
    partitions_first: int     # Spark partitions (ByEpoch's pairs) of batch 0's first attempt
    partitions_replay: int    # ... and of its replay
    refused: list             # the pairs ByEpoch's open() refused on the replay
    epoch: object             # ledger of ByEpoch
    coordinates: object       # ledger of ByCoordinates

    def lines(self) -> list[str]:
        e, c = self.epoch, self.coordinates
        return [f"the replay of batch 0 read the same offsets: {self.same_range}",
                f"batch 0's Spark partitions: {self.partitions_first} on the first run, "
                f"{self.partitions_replay} on the replay (minPartitions=2)",
                f"keyed by (partition, epoch): {e.verdict} | duplicated {e.duplicated} | pairs refused: {self.refused}",
                f"keyed by (topic, partition, offset): {c.verdict} | duplicated {c.duplicated}"]


def _run(spark, lesson, topic: str, ckpt: str, dbs: dict, min_partitions: int | None) -> None:
    from pyspark.sql import functions as F

    from ...orders import ORDER_SCHEMA
    from ...stack import kafka
    from ... import streams

    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", lesson.bootstrap)
              .options(**kafka.spark_security(lesson.bootstrap)).option("subscribe", topic)
              .option("startingOffsets", "earliest"))
    if min_partitions:
        reader = reader.option("minPartitions", min_partitions)
    parsed = reader.load().select("topic", "partition", "offset",
                                  F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"))
    writer = rtwriters.Both(rtwriters.ByCoordinates(dbs["by_coordinates"]), rtwriters.ByEpoch(dbs["by_epoch"]))
    query = (parsed.select("topic", "partition", "offset", "o.order_id", "o.amount").writeStream
             .foreach(writer).option("checkpointLocation", ckpt).trigger(availableNow=True).start())
    streams.await_termination(query, "the ForeachWriter query")


def _pairs(db: str) -> list[tuple[int, int]]:
    return rtwriters._query(db, "SELECT part, epoch FROM done ORDER BY part, epoch")


def replay_split(spark, lesson, orders: int = 20) -> SplitReplay:
    """The run of the module's docstring, on a fresh topic of one partition with ``orders`` orders."""
    import shutil

    from ... import ledger
    from ...stack import kafka

    topic, ckpt = lesson.topic(NAME), lesson.checkpoint(NAME)
    kafka.delete_topics(lesson.bootstrap, [topic])
    shutil.rmtree(ckpt, ignore_errors=True)
    kafka.ensure_topic(lesson.bootstrap, topic, partitions=1)
    produced = lesson.produce_orders(orders, topic=NAME, progress=False)
    dbs = rtwriters.prepare(lesson.path("tables", NAME))

    _run(spark, lesson, topic, ckpt, dbs, None)                 # batch 0, one Spark partition
    first_pairs = _pairs(dbs["by_epoch"])
    plan = (Path(ckpt) / "offsets" / "0").read_text()
    for name in ("0", ".0.crc"):                                # what a driver killed after the write leaves
        (Path(ckpt) / "commits" / name).unlink(missing_ok=True)
    _run(spark, lesson, topic, ckpt, dbs, 2)                    # batch 0 again, split in two
    refused = rtwriters.refused(dbs["by_epoch"])
    written_again = [pair for pair in _pairs(dbs["by_epoch"]) if pair not in first_pairs]
    return SplitReplay(
        same_range=plan == (Path(ckpt) / "offsets" / "0").read_text(),
        partitions_first=len(first_pairs), partitions_replay=len(refused) + len(written_again), refused=refused,
        epoch=ledger.reconcile(produced, rtwriters.rows(dbs["by_epoch"])),
        coordinates=ledger.reconcile(produced, rtwriters.rows(dbs["by_coordinates"])))
