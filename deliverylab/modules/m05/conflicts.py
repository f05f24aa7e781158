"""Another writer commits first: Delta's conflict check under a ``foreachBatch`` batch (lesson 05, section 5).

Delta commits optimistically. A transaction reads a snapshot of the table, writes its files, and at commit
time checks what others committed since that snapshot (Delta 4.4, ``ConflictChecker``). Open-source Delta 4.4
runs every data commit at the ``Serializable`` isolation level: the table property ``delta.isolationLevel``
defaults to it and accepts no other value (``DeltaConfigs.ISOLATION_LEVEL``, "must be Serializable"); a commit
that changes no data, such as a compaction's, is downgraded to snapshot isolation. A blind append reads nothing,
so it conflicts with no one's data. A MERGE, UPDATE or DELETE read the table: Delta fails its commit with
``ConcurrentAppendException`` (``DELTA_CONCURRENT_APPEND``) when a commit since its snapshot added a file where
it read, a plain blind append included at this level (``checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn``),
and with ``ConcurrentDeleteReadException`` when one removed a file it read. A compaction (``OPTIMIZE``) does
both, though it changes no row.

    race_with_compaction(spark, lesson)  three races: an append and a foreachBatch MERGE, each against a
                                         compaction, then a MERGE against another writer's plain append; each
                                         write's rows pass through a gate (a Python UDF) that, on its first call,
                                         waits while a thread of the notebook runs the other writer; the failed
                                         query is then restarted from its checkpoint
    retry_after_commit(...)              a retry inside the batch function after an attempt that did commit,
                                         with the same ``txnVersion`` or a new one

The gate meets the notebook through two marker files, so nothing depends on timing: a write has taken its
snapshot before any of its source rows is computed, and the other writer commits while the gate holds it.
"""
from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ... import checkpoint, ledger, sparkerrors, streams
from ...config import CourseError
from ...crashlab.variants import read_orders
from .merges import events

GATE_TIMEOUT_S = 300


@dataclass
class ConflictRun:
    """What the race showed: how the append and the MERGE ended, batch 0 in the checkpoint, the table after."""
    append: str             # "committed", or the error class that stopped it
    first_run: str          # the MERGE query's first run: "finished", or the error class that stopped it
    offsets_written: bool   # offsets/0 after that run
    commit_written: bool    # commits/0 after that run
    second_run: str         # the restart from the same checkpoint
    after: ledger.Ledger    # the MERGE's table against the orders produced, after the restart
    merge_vs_append: str    # a MERGE while another writer appends a row: "committed", or the error class
    isolation: str          # the isolation level Delta recorded in the restart's MERGE commit
    other_level: str        # what ALTER TABLE ... SET TBLPROPERTIES ('delta.isolationLevel' = 'WriteSerializable') gives

    def lines(self) -> list[str]:
        return [f"append with txnAppId while a compaction commits: {self.append}",
                f"foreachBatch MERGE while a compaction commits: {self.first_run}",
                f"batch 0 in the checkpoint: offsets/0 {'written' if self.offsets_written else 'missing'}, "
                f"commits/0 {'written' if self.commit_written else 'missing'}",
                f"restart from the same checkpoint: {self.second_run} | {self.after.verdict_line()}",
                f"MERGE while another writer appends a row: {self.merge_vs_append}",
                f"isolation level in the MERGE's commit: {self.isolation} | "
                f"delta.isolationLevel = WriteSerializable: {self.other_level}"]


def pass_gate(arrived: str, released: str, limit_s: float = GATE_TIMEOUT_S) -> None:
    """The first caller anywhere creates ``arrived`` and waits (at most ``limit_s``) for ``released``; later ones
    pass at once."""
    import os
    import time as clock

    if os.path.exists(arrived):
        return
    open(arrived, "w").close()
    deadline = clock.monotonic() + limit_s
    while not os.path.exists(released) and clock.monotonic() < deadline:
        clock.sleep(0.05)


class Gate:
    """Two marker files in ``folder``: the first row through :meth:`udf` creates ``arrived`` and waits for
    ``released``; :meth:`compact_when_reached` (or :meth:`append_when_reached`) runs the other writer in between."""

    def __init__(self, folder: Path):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        self.arrived, self.released = folder / "arrived", folder / "released"
        self.removed: int | None = None   # files the compaction removed; the append sets it to 1 when it committed
        self.error: BaseException | None = None
        self.what = "other writer"
        self._thread: threading.Thread | None = None

    def udf(self):
        """A UDF that returns its argument after :func:`pass_gate` (Spark runs it in a Python worker: only the
        marker files cross over)."""
        from pyspark.sql import functions as F

        arrived, released = str(self.arrived), str(self.released)

        def through(value):
            pass_gate(arrived, released)
            return value

        return F.udf(through, "string", useArrow=False).asNondeterministic()  # a plain Python UDF

    def compact_when_reached(self, spark, table: str) -> None:
        """In a thread: once a row reaches the gate, OPTIMIZE ``table`` (it commits), then open the gate."""
        def compact() -> int:
            from delta.tables import DeltaTable

            return DeltaTable.forPath(spark, table).optimize().executeCompaction().collect()[0].metrics.numFilesRemoved
        self._other_writer(compact, "compaction")

    def append_when_reached(self, spark, table: str, rows: list[tuple]) -> None:
        """In a thread: once a row reaches the gate, append ``rows`` (event tuples) to ``table`` as a plain blind
        append (it commits), then open the gate."""
        def append() -> int:
            events(spark, rows).coalesce(1).write.format("delta").mode("append").save(table)
            return 1
        self._other_writer(append, "append")

    def _other_writer(self, write, what: str) -> None:
        self.what = what

        def run():
            try:
                deadline = time.monotonic() + GATE_TIMEOUT_S
                while not self.arrived.exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
                if self.arrived.exists():
                    self.removed = write()
            except Exception as error:  # noqa: BLE001 - raised again by wait(), never lost in a thread
                self.error = error
            finally:
                self.released.touch()

        self._thread = threading.Thread(target=run, name="the other writer", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        self._thread.join(GATE_TIMEOUT_S)
        if self.error is not None or not self.removed:
            raise CourseError(f"The {self.what} that should have committed during the write did not: "
                              f"{self.error or 'it changed no file'}. Run the cell again.")


def _two_small_files(spark, table: str, orders: list[dict]) -> None:
    """A fresh table holding ``orders`` in two commits of one file each: something for OPTIMIZE to compact."""
    shutil.rmtree(table, ignore_errors=True)
    half = len(orders) // 2
    for part in (orders[:half], orders[half:]):
        rows = [(o["order_id"], o["customer_id"], o["amount"], o["status"], o["event_time"]) for o in part]
        events(spark, rows).coalesce(1).write.format("delta").mode("append").save(table)


def _gated_append(spark, table: str, orders: list[dict], gate) -> str:
    """Append ``orders`` with a txnAppId, as section 3's writer does, through the gate."""
    from pyspark.sql import functions as F

    rows = [(o["order_id"], o["customer_id"], o["amount"], o["status"], o["event_time"]) for o in orders]
    try:
        with sparkerrors.quiet_error_log():
            (events(spark, rows).coalesce(1).withColumn("order_id", gate(F.col("order_id")))
                .write.format("delta").mode("append").option("txnAppId", "race-demo").option("txnVersion", 0)
                .save(table))
    except Exception as error:  # noqa: BLE001 - the lesson prints which error stopped it
        return sparkerrors.cause_class(error) or "an error without a class"
    return "committed"


def merge_batch(table: str, gate):
    """The ``foreachBatch`` function of the demo: MERGE the batch into ``table`` on order_id, through the gate."""
    def write(batch, batch_id):
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F

        source = batch.coalesce(1).withColumn("order_id", gate(F.col("order_id")))
        (DeltaTable.forPath(batch.sparkSession, table).alias("t")
            .merge(source.alias("s"), "t.order_id = s.order_id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute())
    return write


def _gated_merge(spark, table: str, rows: list[tuple], gate) -> str:
    """A MERGE of ``rows`` (event tuples) on order_id into ``table``, its source through the gate: "committed", or
    the error class that stopped it."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    source = events(spark, rows).coalesce(1).withColumn("order_id", gate(F.col("order_id")))
    try:
        with sparkerrors.quiet_error_log():
            (DeltaTable.forPath(spark, table).alias("t")
                .merge(source.alias("s"), "t.order_id = s.order_id")
                .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    except Exception as error:  # noqa: BLE001 - the lesson prints which error stopped it
        return sparkerrors.cause_class(error) or "an error without a class"
    return "committed"


def recorded_isolation(table: str, operation: str = "MERGE") -> str:
    """The ``isolationLevel`` in the ``commitInfo`` of the table's newest commit of ``operation`` ("none" if none)."""
    from ... import deltalog

    for _, path in reversed(deltalog.commit_files(table)):
        for action in deltalog.read_actions(path):
            info = action.get("commitInfo")
            if info and info.get("operation") == operation:
                return str(info.get("isolationLevel"))
    return "none"


def other_isolation_level(spark, table: str, level: str = "WriteSerializable") -> str:
    """What Delta answers to ``delta.isolationLevel = <level>`` on ``table``: "accepted", or its error class."""
    try:
        with sparkerrors.quiet_error_log():
            spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('delta.isolationLevel' = '{level}')")
    except Exception as error:  # noqa: BLE001 - the refusal is the answer
        import re

        reason = re.search(r"delta\.isolationLevel must be \w+", str(error))
        return "refused, " + (reason.group(0) if reason else sparkerrors.cause_class(error) or type(error).__name__)
    return "accepted"


def _run_to_end(spark, bootstrap: str, topic: str, ckpt: str, write) -> str:
    """One availableNow run of ``foreachBatch(write)`` over the topic: "finished", or the error class that stopped it."""
    query = (read_orders(spark, bootstrap, topic).writeStream.foreachBatch(write)
             .option("checkpointLocation", ckpt).trigger(availableNow=True).start())
    try:
        with sparkerrors.quiet_error_log():
            streams.await_termination(query, "the foreachBatch MERGE")
    except Exception as error:  # noqa: BLE001 - the lesson prints which error stopped it
        return sparkerrors.cause_class(error) or "an error without a class"
    return "finished"


def race_with_compaction(spark, lesson, orders: int = 20, name: str = "conflict") -> ConflictRun:
    """Produce ``orders`` orders; seed a table with the first four in two files. An append of the next four races
    a compaction of it; then a ``foreachBatch`` MERGE of the whole topic races a second one, and restarts."""
    produced = lesson.produce_orders(orders, topic=name, progress=False)
    table, ckpt, topic = lesson.table(name), lesson.checkpoint(name), lesson.topic(name)
    _two_small_files(spark, table, produced[:4])

    gate = Gate(Path(lesson.path("gates", f"{name}_append")))
    gate.compact_when_reached(spark, table)
    append = _gated_append(spark, table, produced[4:8], gate.udf())
    gate.wait()  # the table: the compacted file and the appended one, two files for the next compaction

    shutil.rmtree(ckpt, ignore_errors=True)
    gate = Gate(Path(lesson.path("gates", f"{name}_merge")))
    gate.compact_when_reached(spark, table)
    first = _run_to_end(spark, lesson.bootstrap, topic, ckpt, merge_batch(table, gate.udf()))
    gate.wait()
    written, committed = checkpoint.batch_ids(ckpt)
    second = _run_to_end(spark, lesson.bootstrap, topic, ckpt, merge_batch(table, gate.udf()))
    after = ledger.reconcile([(o["order_id"], o["amount"]) for o in produced], ledger.read_delta(spark, table))
    isolation = recorded_isolation(table)

    gate = Gate(Path(lesson.path("gates", f"{name}_merge_append")))   # the other writer only appends a new row
    gate.append_when_reached(spark, table, [("o-other", "c-other", "1.00", "placed", "2026-01-01T00:00:00")])
    merge_vs_append = _gated_merge(spark, table, [(o["order_id"], o["customer_id"], o["amount"], o["status"],
                                                   o["event_time"]) for o in produced[:2]], gate.udf())
    gate.wait()
    return ConflictRun(append, first, 0 in written, 0 in committed, second, after, merge_vs_append, isolation,
                       other_isolation_level(spark, table))


class AfterCommit(RuntimeError):
    """Raised by the retry demo after a write that committed: the attempt failed, its write did not."""


def retry_after_commit(spark, table: str, batch, batch_id: int, same_version: bool, app_id: str) -> int:
    """A batch function with a retry loop, called once for ``batch_id``: its first attempt appends the batch with
    (``app_id``, version) and then fails in a step after the write; the second attempt appends again, with the
    same version (``same_version``) or a new one (``batch_id * 10 + attempt``). Returns the rows it added."""
    before = spark.read.format("delta").load(table).count()
    for attempt in (1, 2):
        version = batch_id if same_version else batch_id * 10 + attempt
        try:
            (batch.write.format("delta").mode("append")
                .option("txnAppId", app_id).option("txnVersion", version).save(table))
            if attempt == 1:
                raise AfterCommit("the step after the write failed")  # say, a notification or a second table
            break
        except AfterCommit:
            continue
    return spark.read.format("delta").load(table).count() - before
