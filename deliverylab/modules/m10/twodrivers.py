"""Two drivers on one checkpoint (lesson 10): where Iceberg's streaming sink and Delta's part ways.

Both sinks look for the batch before they commit it, and the look is where they differ:

* Iceberg 1.12 (``SparkWrite.BaseStreamingWrite.commit``): ``table.refresh()``, a walk from the current snapshot
  to this query's newest snapshot, and, if batch N is not there, a fast append. The append is an optimistic commit
  that retries a conflict (``SnapshotProducer.commit``, ``commit.retry.num-retries``) on the newer metadata without
  looking for the batch again. A second driver that looked before the first one's commit landed commits batch N too.
* Delta 4.4 (``DeltaSink.addBatch``): ``txn.txnVersion(queryId)`` inside the transaction that commits the batch. The
  read is recorded, and a commit that lands first with a ``txn`` for the same query id fails the second one
  (``ConflictChecker.checkForUpdatedApplicationTransactionIdsThatCurrentTxnDependsOn``:
  ``ConcurrentTransactionException``).

``two_drivers(spark, lesson, kind)`` makes the race happen on every run. The notebook's Spark starts the query of a
crash-lab pipeline (``iceberg_sink`` or ``delta_sink``) on the pipeline's new checkpoint: it plans batch 0
(``offsets/0``), writes it, looks for it in the table, and a gate holds it before its commit: for Iceberg the
course's ``CommitGateFileSystem`` (crash hook jar) on a second catalog, which holds the creation of the next
metadata file under its temporary name; for Delta a Python UDF on the rows, which runs while the batch is written,
after ``txnVersion``. While the notebook's driver waits there, as a stalled old driver would, the pipeline's own
driver starts on the same checkpoint, finds ``offsets/0`` without ``commits/0``, and runs batch 0 to its end; then
the gate opens.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...crashlab import Pipeline
from ...stack.session import ICEBERG_CATALOG
from . import tables

GATED_CATALOG = "iceberg_gated"
GATE_CLASS = "deliverylab.crashhook.CommitGateFileSystem"
#: The temporary name of the Hadoop catalog's next metadata file: ``<uuid>.metadata.json`` (``<uuid>.gz.`` ...)
TEMP_METADATA = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}.*\.metadata\.json"
WAIT_S = 300


@dataclass
class TwoDrivers:
    kind: str                # "iceberg" or "delta"
    held_after_look: bool    # the notebook's driver reached the gate (it had looked for batch 0) before the other started
    other_finished: bool     # the pipeline's driver ran batch 0 to its commits/0 while the notebook's waited
    commits_of_batch: int    # Iceberg: snapshots of this query with epoch 0 among the ancestors;
                             # Delta: versions whose txn names the query with batch 0
    second_end: str          # how the notebook's query ended: "committed batch 0", or its error class
    ledger: object           # the table against the orders produced
    duplicates_are_batch_n: bool
    pipe: object = field(default=None, repr=False)  # the pipeline, still running when asked to keep it

    def lines(self) -> list[str]:
        name = "Iceberg's sink" if self.kind == "iceberg" else "Delta's sink"
        return [f"{name}: the notebook's driver looked for batch 0 before the other committed it: "
                f"{self.held_after_look and self.other_finished}",
                f"{name}: commits of batch 0 in the table: {self.commits_of_batch} | the notebook's query: "
                f"{self.second_end}",
                f"{name}: {self.ledger.verdict_line()}"
                + (" | the duplicates are batch 0's orders" if self.duplicates_are_batch_n else "")]


class Gate:
    """Three marker files in a folder: ``armed`` (the gate holds the next matching moment), ``arrived``, ``released``."""

    def __init__(self, folder: Path):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        self.folder = folder
        self.armed, self.arrived, self.released = folder / "armed", folder / "arrived", folder / "released"
        self.armed.touch()

    def wait_arrived(self, query) -> bool:
        deadline = time.monotonic() + WAIT_S
        while not self.arrived.exists() and query.isActive and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.arrived.exists()

    def release(self) -> None:
        self.released.touch()


def pass_gate(arrived: str, released: str, armed: str, limit_s: float = WAIT_S) -> None:
    """In a Python worker: the first row after ``armed`` was created removes it, creates ``arrived`` and waits for
    ``released``; every other row passes at once."""
    import os
    import time as clock

    try:
        os.remove(armed)
    except FileNotFoundError:
        return
    open(arrived, "w").close()
    deadline = clock.monotonic() + limit_s
    while not os.path.exists(released) and clock.monotonic() < deadline:
        clock.sleep(0.05)


def _gated_catalog(spark, gate: Gate) -> None:
    """A second Iceberg catalog on the course's warehouse whose file system is the gate (its Hadoop settings:
    Iceberg's ``spark.sql.catalog.<name>.hadoop.*``). Set once per session: a catalog is built on first use."""
    prefix = f"spark.sql.catalog.{GATED_CATALOG}"
    for key, value in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "hadoop",
                       ".warehouse": spark.conf.get(f"spark.sql.catalog.{ICEBERG_CATALOG}.warehouse"),
                       ".cache-enabled": "false",
                       ".hadoop.fs.file.impl": GATE_CLASS, ".hadoop.fs.file.impl.disable.cache": "true",
                       ".hadoop.deliverylab.gate.folder": str(gate.folder),
                       ".hadoop.deliverylab.gate.pattern": TEMP_METADATA}.items():
        spark.conf.set(prefix + key, value)


def _first_driver(spark, pipe, kind: str, gate: Gate):
    """The pipeline's query, started in the notebook's Spark on the pipeline's (new) checkpoint, behind the gate."""
    from pyspark.sql import functions as F

    from ...crashlab.variants import read_orders

    orders = read_orders(spark, pipe.lesson.bootstrap, pipe.topic, min_partitions=2)
    if kind == "iceberg":
        _gated_catalog(spark, gate)
        table = GATED_CATALOG + tables.iceberg_identifier(pipe.sink, spark).removeprefix(ICEBERG_CATALOG)
        return (orders.writeStream.format("iceberg").outputMode("append")
                .option("checkpointLocation", pipe.checkpoint).toTable(table))
    arrived, released, armed = str(gate.arrived), str(gate.released), str(gate.armed)

    def through(value):
        pass_gate(arrived, released, armed)
        return value

    held = F.udf(through, "string", useArrow=False).asNondeterministic()
    return (orders.withColumn("order_id", held(F.col("order_id"))).writeStream.format("delta")
            .option("checkpointLocation", pipe.checkpoint).start(pipe.sink))


def _end(query) -> str:
    from ... import sparkerrors, streams

    try:
        with sparkerrors.quiet_error_log():
            streams.await_termination(query, "the notebook's second driver", timeout_s=60)
    except Exception as error:  # noqa: BLE001 - how it ended is the answer
        return sparkerrors.cause_class(error) or type(error).__name__
    if query.isActive:
        query.stop()
        return "committed batch 0"
    return "ended"


def _delta_commits_of(table: str, query: str, batch: int) -> int:
    from ... import deltalog

    found = 0
    for _, path in deltalog.commit_files(table):
        for action in deltalog.read_actions(path):
            txn = action.get("txn")
            if txn and txn.get("appId") == query and txn.get("version") == batch:
                found += 1
    return found


def two_drivers(spark, lesson, kind: str = "iceberg", orders: int = 50, keep: bool = False) -> TwoDrivers:
    """The race of the module's docstring for ``kind`` ("iceberg" or "delta"). Returns what the table holds.
    ``keep``: the pipeline's driver keeps running afterwards (for a run that goes on with it, saving a start)."""
    from ... import ledger
    from ...crashlab import sinks
    from ...stack import kafka

    variant = "iceberg_sink" if kind == "iceberg" else "delta_sink"
    pipe = Pipeline(lesson, variant, name=f"two_drivers_{kind}", max_per_batch=orders)
    gate = Gate(Path(lesson.path("gates", f"two_drivers_{kind}")))
    kafka.delete_topics(lesson.bootstrap, [pipe.topic])           # a cell run again starts from nothing
    for folder in (pipe.checkpoint, pipe.sink):
        shutil.rmtree(folder, ignore_errors=True)
    kafka.ensure_topic(lesson.bootstrap, pipe.topic)
    pipe.produce(orders)
    sinks.sink(pipe.sink_kind, pipe.sink, lesson.bootstrap).prepare(spark, table_first=True)  # the table, empty
    try:
        first = _first_driver(spark, pipe, kind, gate)    # plans batch 0, looks for it, waits at the gate
        held = gate.wait_arrived(first)
        pipe.start()                                      # the pipeline's driver: offsets/0 and no commits/0
        pipe.drain()                                      # it runs batch 0 to its end
        finished = 0 in pipe.batch_ids()[1]
        gate.release()
        end = _end(first)
    except BaseException:
        pipe.stop()
        raise
    finally:
        gate.release()
    if not keep:
        pipe.stop()
    query = tables.query_id(pipe.checkpoint)
    if kind == "iceberg":
        found, count = ledger.reconcile(pipe.produced, tables.rows(pipe.sink)), tables.query_epochs(pipe.sink, query).count(0)
    else:
        found, count = pipe.ledger(), _delta_commits_of(pipe.sink, query, 0)
    batch = set(pipe.batch_orders(0))
    return TwoDrivers(kind, held, finished, count, end, found,
                      bool(found.duplicated_ids) and set(found.duplicated_ids) == batch, pipe)
