"""Short streams in the notebook's own SparkSession, run to the end of what the topic holds.

Each run is ``trigger(availableNow=True)``: the query reads what is in the topic when it
starts, commits, and stops, like a scheduled job that restarts from its checkpoint. That
makes "the query was down while ..." a plain sequence of cells.
"""
from __future__ import annotations

from ... import sparkerrors, streams
from ...config import CourseError
from ...sparkerrors import with_causes


def orders_from(spark, bootstrap: str, topic: str, fail_on_data_loss: bool = True, starting_offsets: str = "earliest"):
    """The orders topic as a stream of parsed orders (the crash lab's reader, plus failOnDataLoss).
    ``topic`` may name several topics, comma-separated (Kafka's ``subscribe`` option)."""
    from pyspark.sql import functions as F

    from ...orders import ORDER_SCHEMA
    from ...stack import kafka

    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .options(**kafka.spark_security(bootstrap))  # a class broker's login ({} on your own broker)
            .option("subscribe", topic)
            .option("startingOffsets", starting_offsets)
            .option("failOnDataLoss", "true" if fail_on_data_loss else "false")
            .load()
            .select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("order"))
            .select("order.*"))


def run_to_end(stream, checkpoint: str, table: str, errors=None) -> str | None:
    """Append ``stream`` to the Delta table at ``table`` until it has read everything available, then stop.

    Returns None when the run finished; when it failed, what ``errors`` makes of Spark's error
    (by default :func:`first_line`; :func:`error_class` gives only the error's name).
    """
    query = (stream.writeStream.format("delta").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(table))
    try:
        streams.await_termination(query, "query reading the topic to its end")
    except Exception as error:  # noqa: BLE001 - the lesson prints what Spark said
        return (errors or first_line)(error)
    return None


class SimulatedCrash(RuntimeError):
    """Raised inside a ``foreachBatch`` function to stop the query in the middle of a batch.

    The query fails there: ``offsets/N`` is written and ``commits/N`` is not, as after a driver
    kill, so a restart from the same checkpoint runs batch N again."""


def run_foreach_batch(stream, checkpoint: str, write) -> str:
    """Run ``stream`` with ``foreachBatch(write)`` until it has read everything available.

    Returns ``"finished"``, ``"stopped by the crash"`` when ``write`` raised :class:`SimulatedCrash`,
    or the first line of any other error."""
    query = (stream.writeStream.foreachBatch(write).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    try:
        streams.await_termination(query, "foreachBatch query reading the topic to its end")
    except Exception as error:  # noqa: BLE001 - the lesson prints what happened
        return "stopped by the crash" if SimulatedCrash.__name__ in with_causes(error) else first_line(error)
    return "finished"


#: How Spark's Kafka source says that records it must read are gone (retention, a deleted topic). The
#: driver says it when it plans a batch; a task that finds the records gone while reading says it
#: too, and Spark then wraps it in TASK_WRITE_FAILED: which one speaks depends on timing.
KAFKA_DATA_LOSS = "Some data may have been lost because they are not available in Kafka any more;"


def first_line(error) -> str:
    """The stable part of a streaming query's error: its first sentence, without the query's ids.

    Spark wraps the cause as ``[STREAM_FAILED] Query [id = .., runId = ..] terminated with
    exception: <cause>``; the cause's first line is what says what went wrong. Kafka's data-loss
    sentence is returned wherever in the chain of causes it stands.
    """
    if KAFKA_DATA_LOSS in with_causes(error):
        return KAFKA_DATA_LOSS
    text = str(error)
    marker = "terminated with exception: "
    if marker in text:
        text = text.split(marker, 1)[1]
    text = text.removeprefix("assertion failed: ")
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line.split(" SQLSTATE:")[0].strip()


def error_class(error) -> str:
    """The name of the error that stopped a query, e.g. ``STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE``:
    the first ``[NAME]`` in the chain of causes that is not a wrapper, or the first line when
    the error has no name (Kafka's data-loss error has none)."""
    return sparkerrors.cause_class(error) or first_line(error)


def drop_unread(bootstrap: str, topic: str) -> dict[int, int]:
    """Make the broker drop every record ``topic`` holds now, as retention does when it deletes
    old segments: the partitions' log start offsets move up to their end. Returns the new start
    offsets. (Kafka's DeleteRecords request, the one ``kafka-delete-records.sh`` sends.)"""
    from kafka import TopicPartition

    from ...stack import kafka

    ends = kafka.end_offsets(bootstrap, topic)
    if not ends:
        raise CourseError(f"Topic {topic} does not exist or has no partitions: produce some orders first.")
    with kafka.admin(bootstrap) as client:
        client.delete_records({TopicPartition(topic, p): offset for p, offset in ends.items()})
    return kafka.beginning_offsets(bootstrap, topic)
