"""Lesson 02's runs of asynchronous progress tracking: what Spark refuses, and what a restart does with the files.

    refused(spark, lesson)      the three writers Spark 4.2 refuses at start() with the option on (a foreachBatch
                                sink, an availableNow trigger, real-time mode): {what: its error's first line}
    switch_off(spark, lesson)   one checkpoint, four runs of a noop query on a topic of one partition:
                                1. the option on, an interval of INTERVAL_MS: six batches of 10 records, of which
                                   the first and the first one past the interval leave files (batches 0 and 3)
                                2. the option off: the restart fails (batch 2, the one before the last on disk,
                                   has no offsets file)
                                3. the option on again with an interval of 0, as Spark's guide says: the batches
                                   the first run kept in memory are read again as one new batch, then one more
                                4. the option off: the restart runs normally

Spark 4.2 (``AsyncProgressTrackingMicroBatchExecution``, ``AsyncOffsetSeqLog.addAsync``) writes ``offsets/N`` of a
batch, and then its ``commits/N``, only for the first batch of a run and for a batch that starts at least the
interval after the last one it wrote; a restart with the option on looks up the previous batch on disk
(``getPrevBatchFromStorage``), one with the option off wants ``offsets/N-1`` of the last batch N
(``MicroBatchExecution.validateOffsetLogAndGetPrevOffset``: ``batch N-1 doesn't exist`` when it is missing).
The guide's fix ("Switching the setting off", Structured Streaming's performance tips): turn the option back on
with ``asyncProgressTrackingCheckpointIntervalMs`` 0, run at least two batches, then switch it off.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

from ... import checkpoint
from .limits import fill_partitions, write_to_partition
from .tracking import batches_read, describe

#: The first run's interval: long enough that its next two batches start inside it on a busy machine.
INTERVAL_MS = 5000
RECORDS = 10  # per batch


def start_tracked(records, checkpoint_dir: str, **options):
    """The demo's query: the topic's records into Spark's ``noop`` sink, with the given writer options."""
    return (records.writeStream.format("noop")
            .option("checkpointLocation", checkpoint_dir)
            .options(**options)
            .start())


def _records(spark, lesson, topic: str):
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", lesson.bootstrap)
            .options(**lesson.spark_login)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load())


def refused(spark, lesson) -> dict[str, str]:
    """The option on three writers Spark refuses as the query starts: {what: the first line of the error}."""
    records = _records(spark, lesson, lesson.topic("tracked"))
    found = {}
    for what, writer in [
            ("foreachBatch sink, option on", records.writeStream.foreachBatch(lambda batch, batch_id: None)),
            ("availableNow trigger, option on", records.writeStream.format("noop").trigger(availableNow=True)),
            ("realTime trigger, option on",
             records.writeStream.format("console").outputMode("update").trigger(realTime="5 seconds"))]:
        try:
            (writer.option("checkpointLocation", lesson.checkpoint("tracked-refused"))
                .option("asyncProgressTrackingEnabled", True).start().stop())
            found[what] = "accepted"
        except Exception as error:  # noqa: BLE001 - Spark refuses it as the query starts: the lesson prints why
            found[what] = str(error).splitlines()[0]
    return found


@dataclass
class SwitchOff:
    first: list[dict]           # batches_read of run 1 (option on, INTERVAL_MS)
    on_disk: tuple              # (offsets ids, commits ids) after run 1
    switched_off: str           # how run 2 (option off) ended
    wanted: int                 # the batch run 2 asked for: the one before the last on disk
    again: list[dict]           # run 3 (option on, interval 0)
    on_disk_again: tuple        # files after run 3
    last: list[dict]            # run 4 (option off)

    def lines(self) -> list[str]:
        def files(found):
            return f"offsets {sorted(found[0])} commits {sorted(found[1])}"
        return [f"run 1, option on, interval {INTERVAL_MS // 1000} s: {describe(self.first)}",
                f"files on disk after it stopped:    {files(self.on_disk)}",
                f"run 2, option off:                 {self.switched_off}",
                f"  the batch before the last on disk: {self.wanted}",
                f"run 3, option on, interval 0:      {describe(self.again)}",
                f"files on disk after it stopped:    {files(self.on_disk_again)}",
                f"run 4, option off:                 {describe(self.last)}"]


def _batch(query, bootstrap: str, topic: str) -> None:
    write_to_partition(bootstrap, topic, 0, RECORDS)
    query.processAllAvailable()


def failure_line(error_text: str) -> str:
    """Spark's reason for stopping a restart, without the query's ids: ``batch 2 doesn't exist``, or the first line."""
    found = re.search(r"batch \d+ doesn't exist", error_text)
    return found.group(0) if found else (error_text.strip().splitlines() or [""])[0][:160]


def _failure(query) -> str:
    """How a query that should fail at its start ended (``failure_line``), or "it ran"."""
    try:
        query.processAllAvailable()
    except Exception as error:  # noqa: BLE001 - the StreamingQueryException is the answer
        return failure_line(str(error))
    finally:
        query.stop()
    return "it ran"


def switch_off(spark, lesson, topic_name: str = "tracked") -> SwitchOff:
    """The four runs of the module's docstring, on a fresh topic and checkpoint."""
    topic, ckpt = lesson.topic(topic_name), lesson.checkpoint(topic_name)
    fill_partitions(lesson.bootstrap, topic, {0: RECORDS})
    records = _records(spark, lesson, topic)

    query = start_tracked(records, ckpt, asyncProgressTrackingEnabled=True,
                          asyncProgressTrackingCheckpointIntervalMs=INTERVAL_MS)
    query.processAllAvailable()                          # batch 0: the first of the run, written to disk
    first_written = time.monotonic()                     # its files were issued before this moment
    for _ in range(2):
        _batch(query, lesson.bootstrap, topic)           # batches 1 and 2: inside the interval, memory only
    time.sleep(max(0.0, first_written + INTERVAL_MS / 1000 + 0.5 - time.monotonic()))  # the interval passes
    for _ in range(3):
        _batch(query, lesson.bootstrap, topic)           # batch 3 past it (written), 4 and 5 inside the next one
    query.stop()
    first, on_disk = batches_read(query.recentProgress, topic), checkpoint.batch_ids(ckpt)

    switched_off = _failure(start_tracked(records, ckpt))
    wanted = max(on_disk[0]) - 1

    query = start_tracked(records, ckpt, asyncProgressTrackingEnabled=True,
                          asyncProgressTrackingCheckpointIntervalMs=0)
    query.processAllAvailable()                          # what run 1 kept in memory, planned anew
    _batch(query, lesson.bootstrap, topic)               # a second batch, as the guide asks
    query.stop()
    again, on_disk_again = batches_read(query.recentProgress, topic), checkpoint.batch_ids(ckpt)

    query = start_tracked(records, ckpt)
    _batch(query, lesson.bootstrap, topic)
    query.stop()
    return SwitchOff(first, on_disk, switched_off, wanted, again, on_disk_again,
                     batches_read(query.recentProgress, topic))
