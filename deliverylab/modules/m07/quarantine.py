"""Poison pills: records that are not orders. Route each to the orders table or to a quarantine
table with its raw value and the reason, in one foreachBatch (two commits, one per table), and
count both."""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ...config import CourseError
from ...sparkerrors import cause_line, quiet_error_log

#: Every field as text, so parsing never fails on a type; plus the column Spark fills with a
#: record it cannot parse as JSON at all.
RAW_SCHEMA = ("order_id STRING, customer_id STRING, amount STRING, status STRING, event_time STRING, "
              "_corrupt_record STRING")
POISON_FILE = Path(__file__).resolve().parents[3] / "data" / "orders-with-poison-pills.jsonl"


def poison_lines(path: str | Path = POISON_FILE) -> list[str]:
    """The file's records, one per line, the empty line included (it becomes an empty message)."""
    return Path(path).read_text(encoding="utf-8").splitlines()


def produce_lines(bootstrap: str, topic: str, lines: list[str]) -> int:
    """Write each line as one Kafka record, exactly as it is (no key)."""
    from kafka import KafkaProducer

    from ...stack import kafka

    kafka.ensure_topic(bootstrap, topic)
    producer = kafka.client(KafkaProducer, bootstrap, acks="all", linger_ms=20)
    try:
        for line in lines:
            producer.send(topic, value=line.encode("utf-8"))
        producer.flush()
    finally:
        producer.close()
    return len(lines)


def classify(records):
    """Kafka records -> raw text, partition, offset, the parsed fields, and ``reason`` (null: a good order)."""
    from pyspark.sql import functions as F

    raw = F.col("value").cast("string")
    parsed = F.from_json(raw, RAW_SCHEMA, {"columnNameOfCorruptRecord": "_corrupt_record"})
    rows = records.select(raw.alias("raw"), "partition", "offset", parsed.alias("o")).select(
        "raw", "partition", "offset", "o.*")
    reason = (F.when(F.coalesce(F.length("raw"), F.lit(0)) == 0, "empty message")
              .when(F.col("_corrupt_record").isNotNull(), "not valid JSON")
              .when(F.col("order_id").isNull(), "no order_id")
              .when(F.expr("try_cast(amount AS DECIMAL(10,2))").isNull(), "amount is not a number")
              .when(F.expr("try_cast(event_time AS TIMESTAMP)").isNull(), "event_time is not a timestamp"))
    return rows.withColumn("reason", reason)


def route(classified, good_table: str, quarantine_table: str, app_id: str, batch_id: int,
          between=None) -> None:
    """Write a classified batch to both tables, each write idempotent (Delta txnAppId + txnVersion).

    Two saves are two commits, one in each table's log: ``between`` (the lesson's crash) runs
    after the first and before the second."""
    good = classified.filter("reason IS NULL").selectExpr(
        "order_id", "customer_id", "CAST(amount AS DECIMAL(10,2)) AS amount", "status",
        "CAST(event_time AS TIMESTAMP) AS event_time")
    bad = classified.filter("reason IS NOT NULL").select("raw", "reason", "partition", "offset")
    (good.write.format("delta").mode("append")
        .option("txnAppId", app_id).option("txnVersion", batch_id).save(good_table))
    if between is not None:
        between()
    (bad.write.format("delta").mode("append")
        .option("txnAppId", app_id).option("txnVersion", batch_id).save(quarantine_table))


@dataclass
class Routed:
    """What one run of the quarantine pipeline produced and where it went."""
    produced: int
    good_ids: list = field(default_factory=list)
    quarantined: list = field(default_factory=list)   # (raw, reason) rows
    error: str | None = None

    @property
    def good(self) -> int:
        return len(self.good_ids)

    @property
    def reasons(self) -> dict[str, int]:
        return dict(sorted(Counter(reason for _, reason in self.quarantined).items()))

    def lines(self) -> list[str]:
        return [f"produced={self.produced} good={self.good} quarantined={len(self.quarantined)}",
                f"produced = good + quarantined: {self.produced == self.good + len(self.quarantined)}"]


@dataclass(frozen=True)
class Pills:
    """Where one quarantine pipeline of a lesson reads and writes."""
    topic: str
    good_table: str
    quarantine_table: str
    checkpoint: str
    app_id: str


def prepare(lesson, name: str, lines: list[str]) -> Pills:
    """Produce ``lines`` to a fresh topic of the lesson and clear the pipeline's tables and checkpoint."""
    from ...stack.kafka import delete_topics

    pills = Pills(lesson.topic(f"{name}-raw"), lesson.table(f"{name}_orders"), lesson.table(f"{name}_quarantine"),
                  lesson.checkpoint(name), f"{lesson.topic_prefix}{name}")
    delete_topics(lesson.bootstrap, [pills.topic])   # a re-run starts from the same records
    produce_lines(lesson.bootstrap, pills.topic, lines)
    for folder in (pills.good_table, pills.quarantine_table, pills.checkpoint):
        _remove(folder)
    return pills


def records_of(spark, lesson, pills: Pills):
    """The pipeline's topic as a stream of raw Kafka records, from the start."""
    from ...stack import kafka

    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", lesson.bootstrap)
            .options(**kafka.spark_security(lesson.bootstrap))  # a class broker's login ({} on your own broker)
            .option("subscribe", pills.topic).option("startingOffsets", "earliest").load())


def writer(pills: Pills, classify_fn=classify, between=None):
    """The ``foreachBatch`` function: classify the batch once, route it to both tables."""
    def write(batch, batch_id):
        classified = classify_fn(batch).persist()   # read once, written to two tables
        try:
            route(classified, pills.good_table, pills.quarantine_table, pills.app_id, batch_id, between)
        finally:
            classified.unpersist()
    return write


def run(spark, lesson, name: str, classify_fn=classify, lines: list[str] | None = None) -> Routed:
    """Produce ``lines`` (the poison-pill file) to a topic of the lesson, run one stream to the end
    that classifies each record with ``classify_fn`` and routes it, then count both tables."""
    lines = poison_lines() if lines is None else lines
    pills = prepare(lesson, name, lines)
    records = records_of(spark, lesson, pills)
    if "reason" not in classify_fn(records).columns:  # before the stream: an unfinished TODO raises here
        raise CourseError("classify must return the records with a 'reason' column (null for a good order).")
    query = (records.writeStream.foreachBatch(writer(pills, classify_fn)).option("checkpointLocation", pills.checkpoint)
             .trigger(availableNow=True).start())
    result = Routed(produced=len(lines))
    try:
        with quiet_error_log():  # the error becomes result.error's one line, not KBs on stderr
            query.awaitTermination()
    except Exception as error:  # noqa: BLE001 - a stream that stopped on a record is the finding
        from .kernel import first_line

        result.error = cause_line(error) or first_line(error)
        return result
    return counted(spark, pills, result)


def counted(spark, pills: Pills, result: Routed) -> Routed:
    """``result`` with what the two tables hold now."""
    result.good_ids = [r[0] for r in _read(spark, pills.good_table, "order_id")]
    result.quarantined = [(r[0], r[1]) for r in _read(spark, pills.quarantine_table, "raw", "reason")]
    return result


def _read(spark, table: str, *columns: str) -> list:
    if not (Path(table) / "_delta_log").is_dir():
        return []
    return spark.read.format("delta").load(table).select(*columns).collect()


def _remove(folder: str) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- lab 07's hidden run of a classifier

#: The columns Spark's Kafka source gives a batch (the ones a classifier receives in foreachBatch).
KAFKA_RECORDS = ("key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, "
                 "timestampType INT")


@dataclass(frozen=True)
class HiddenPills:
    """Records of a hidden run, the batches they arrive in (sizes), and what a right classifier makes of them."""
    lines: list
    batches: list
    good_ids: list

    @property
    def bad(self) -> int:
        return len(self.lines) - len(self.good_ids)


def _record(rng, fields: dict) -> str:
    """One JSON object with its keys in an order of the seed's (sorted, as the demo's good orders, or not)."""
    keys = list(fields)
    if rng.random() < 0.5:
        rng.shuffle(keys)
    else:
        keys.sort()
    return json.dumps({k: fields[k] for k in keys})


_MISSING = object()


def hidden_pills(rng) -> HiddenPills:
    """Good orders and poison pills the demo does not have, in two or three micro-batches.

    Whatever the seed: good orders with other ids (one shaped like the demo's bad ids) and keys in other
    orders (one with order_id first); bad records of other kinds and texts, one starting with the key the
    demo's good orders start with; an event time shaped like a timestamp that is no date (month 13, day 32);
    the empty message; a batch that begins with a record without an order id; and every record that is not
    JSON in one batch, so another batch has none."""
    from ...orders import generate_orders

    def order(**changes) -> dict:
        base = generate_orders(1, seed=rng.randint(1, 10**6), start=rng.randrange(200_000, 900_000))[0]
        fields = {**base, "amount": str(base["amount"]), **changes}
        return {k: v for k, v in fields.items() if v is not _MISSING}

    good = [order() for _ in range(rng.randint(12, 30))]
    good[0]["order_id"] = f"o-9{rng.randint(10_000, 99_999)}"  # shaped like the demo's bad ids, and good
    good_lines = [_record(rng, o) for o in good[1:]]
    good_lines.append(json.dumps({"order_id": good[0]["order_id"], **{k: v for k, v in good[0].items()
                                                                       if k != "order_id"}}))
    no_date = rng.choice(["2026-13-02T10:00:00Z", "2026-02-32T10:00:00Z", "2026-04-31T10:00:00Z"])
    always = [
        json.dumps({"amount": rng.choice(["forty-two", "12,50", "N/A"]), **{k: v for k, v in order().items()
                                                                             if k != "amount"}}),
        _record(rng, order(event_time=no_date)),
        "",
    ]
    no_id = _record(rng, order(order_id=_MISSING))  # first in its batch: the batch does not begin with an order
    others = [_record(rng, order(order_id=None)),
              _record(rng, order(amount=rng.choice(["", "ten", "1O.00"]))), _record(rng, order(amount=_MISSING)),
              _record(rng, order(event_time=rng.choice(["yesterday", "", "soon"]))),
              _record(rng, order(event_time=_MISSING))]
    not_json = rng.sample(['{"order_id": "o-100001", "amount": "12.50"', "order o-100002 paid", "{oops}",
                           '{"order_id": "o-100003" "amount": "9.00"}'], rng.randint(1, 2))
    batches = [[] for _ in range(rng.choice([2, 3]))]
    rest = good_lines + always + rng.sample(others, rng.randint(2, len(others)))
    rng.shuffle(rest)
    for i, line in enumerate(rest):
        batches[i % len(batches) if i < len(batches) else rng.randrange(len(batches))].append(line)
    batches[rng.randrange(len(batches))].extend(not_json)
    for batch in batches:
        rng.shuffle(batch)
    batches[rng.randrange(len(batches))].insert(0, no_id)
    return HiddenPills(lines=[line for batch in batches for line in batch], batches=[len(b) for b in batches],
                       good_ids=sorted(o["order_id"] for o in good))


def classify_batches(spark, classify_fn, lines: list[str], batches: list[int]) -> Routed:
    """``classify_fn`` on ``lines`` handed over as foreachBatch hands a stream's records over, batch by batch
    (Kafka's columns, offsets in order), and what the quarantine pipeline would make of each batch: the good
    rows cast as ``route`` casts them for the orders table (a bad amount let through fails there, as in the
    stream), the rest quarantined with their raw value and reason. No stream: the batches are built here."""
    from datetime import datetime

    from pyspark.sql import functions as F

    result = Routed(produced=len(lines))
    now, start = datetime.now(), 0
    for size in batches:
        rows = [(None, line.encode("utf-8"), "hidden-pills", 0, start + i, now, 0)
                for i, line in enumerate(lines[start:start + size])]
        start += size
        try:
            with quiet_error_log():
                classified = classify_fn(spark.createDataFrame(rows, KAFKA_RECORDS))
                if "reason" not in classified.columns:
                    raise CourseError("classify must return the records with a 'reason' column "
                                      "(null for a good order).")
                good = F.col("reason").isNull()
                found = classified.select(
                    "raw", "reason", "order_id",
                    F.when(good, F.expr("CAST(amount AS DECIMAL(10,2))")).alias("amount_written"),
                    F.when(good, F.expr("CAST(event_time AS TIMESTAMP)")).alias("event_time_written")).collect()
        except Exception as error:  # noqa: BLE001 - the batch that stopped it is the finding, in one line
            from .kernel import first_line

            result.error = cause_line(error) or first_line(error)
            return result
        result.good_ids += [row["order_id"] for row in found if row["reason"] is None]
        result.quarantined += [(row["raw"], row["reason"]) for row in found if row["reason"] is not None]
    return result
