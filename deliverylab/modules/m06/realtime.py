"""Spark's real-time mode (``trigger(realTime=...)``, new in Spark 4.1, in Python since 4.2), tried in the
lesson's own Spark session: which sinks it accepts, and when it writes a batch's ``offsets/N``.

A micro-batch query writes ``offsets/N`` (the batch's planned range) before the batch runs, which is
what makes a replay read the same records again (module 02). In real-time mode a batch runs for a set
time and reads records as they arrive, so its range is known only at its end: Spark writes
``offsets/N`` (then ``commits/N``) after the sink has already received the batch's rows.

Of the sinks it refuses, :func:`refused_sinks` tries the two this course makes exactly-once. It accepts
a ``ForeachWriter``; what its key makes of a crash is rtwriters.py.
"""
from __future__ import annotations

import time
from pathlib import Path

from ...stack import kafka
from ...sparkerrors import error_class

#: The shortest batch real-time mode accepts by default (``spark.sql.streaming.realTimeMode.minBatchDuration``).
BATCH = "5 seconds"


def _source(spark, bootstrap: str, topic: str):
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .options(**kafka.spark_security(bootstrap))  # a class broker's login ({} on your own broker)
            .option("subscribe", topic).option("startingOffsets", "earliest").load())


def refused_sinks(spark, lesson) -> dict[str, str]:
    """Start a real-time query into foreachBatch and into Delta; each start is refused.
    Returns ``{sink: Spark's error class}`` (``"started"`` if a future Spark accepts one; it is stopped)."""
    topic = lesson.topic("realtime-in")
    kafka.ensure_topic(lesson.bootstrap, topic, partitions=1)
    writers = {  # each in an output mode its sink accepts (Delta's sink takes append or complete only)
        "foreachBatch": lambda w, ckpt: (w.outputMode("update").foreachBatch(lambda batch, batch_id: None)
                                         .option("checkpointLocation", ckpt).start()),
        "Delta sink": lambda w, ckpt: (w.outputMode("append").format("delta").option("checkpointLocation", ckpt)
                                       .start(lesson.table("realtime_delta"))),
    }
    found = {}
    for name, start in writers.items():
        writer = _source(spark, lesson.bootstrap, topic).writeStream.trigger(realTime=BATCH)
        try:
            start(writer, lesson.checkpoint(f"realtime-{name.split()[0].lower()}")).stop()
            found[name] = "started"
        except Exception as err:  # Spark's AnalysisException/SparkException, converted by pyspark
            found[name] = error_class(str(err)) or type(err).__name__
    return found


def offsets_after_output(spark, lesson, orders: int = 20) -> dict[str, bool]:
    """Run a Kafka-to-Kafka query in real-time mode: produce ``orders`` orders, watch the output topic,
    and look at the checkpoint the moment the first rows arrive there, then again after the batch."""
    from ...orders import produce_orders

    source, sink = lesson.topic("realtime-in"), lesson.topic("realtime-out")
    for topic in (source, sink):
        kafka.ensure_topic(lesson.bootstrap, topic, partitions=1)  # real-time mode holds a core per partition
    checkpoint = Path(lesson.checkpoint("realtime-kafka"))
    query = (_source(spark, lesson.bootstrap, source).select("key", "value").writeStream.format("kafka")
             .option("kafka.bootstrap.servers", lesson.bootstrap).options(**kafka.spark_security(lesson.bootstrap))
             .option("topic", sink)
             .option("checkpointLocation", str(checkpoint)).outputMode("update").trigger(realTime=BATCH).start())
    try:
        produce_orders(lesson.bootstrap, source, orders, progress=False)
        deadline = time.monotonic() + 60
        while kafka.count_records(lesson.bootstrap, sink) == 0:
            if time.monotonic() > deadline or query.exception() is not None:
                raise RuntimeError(f"the real-time query wrote nothing in 60 s: {query.exception()}")
            time.sleep(0.1)
        seen = {"rows in the output topic": True, "offsets/0 written": (checkpoint / "offsets" / "0").exists()}
        while not (checkpoint / "commits" / "0").exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the real-time query's first batch did not end in 60 s")
            time.sleep(0.2)
        seen["offsets/0 written after the batch"] = (checkpoint / "offsets" / "0").exists()
        return seen
    finally:
        query.stop()
