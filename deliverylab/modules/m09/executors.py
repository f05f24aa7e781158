"""An executor killed in the middle of a micro-batch (lesson 09 section 2, lab 09 exercise 1).

The query runs in the notebook's own SparkSession, on the Spark cluster: the lesson's orders from
Kafka, each row passed through ``notify`` (a Python UDF, so a side effect that runs *inside the
task*, on an executor), then appended to a Delta table. While the first task of the batch is
sending its notifications, every executor of the application is SIGKILLed. The master starts a
new executor, and Spark runs the lost task again from the start.

What the retry leaves is then counted twice, with the same ledger as the crash lab:

* the Delta table: the commit protocol publishes the files of one successful attempt per task
  (the killed attempt's file, if it had opened one, is an orphan no Delta reader sees, though a
  plain listing of the folder finds it);
* the notifications the :class:`Outbox` delivered: the killed attempt's were already out.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ... import deltalog, ledger
from ...config import CourseError
from ...stack import cluster, kafka

#: seconds each notification takes (the stand-in service is slow, like a real one): 200 orders in two
#: tasks of about 100 rows take a few seconds, long enough to kill the executor in the middle of one
PAUSE_S = 0.03
#: kill once this many notifications went out in the first attempt of a task
KILL_AFTER_CALLS = 25
RUN_TIMEOUT_S = 240


def _quiet(message: str) -> None:
    """The default log: the lesson prints stable lines itself (pids and app ids differ every run)."""


class Outbox:
    """A stand-in for a notification service (e-mail, SMS, a webhook), kept in a folder on the local
    disk, which every executor of this one-machine cluster shares.

    * ``calls.log``: one line per call, ``<task attempt> <order id>`` (then ``<task>``, the task's
      partition index, when the caller names it): what the tasks did;
    * ``delivered.log``: one line per message the service delivered, ``<order id>``;
    * ``keys/``: an empty file per idempotency key it has seen. Like real services (payment and
      messaging APIs), it delivers a message whose key it has already seen only once. Unlike them
      it never forgets a key: a real provider drops keys after a while (Stripe may drop one once it
      is 24 hours old).

    Lines are appended with one ``write`` on a file opened in append mode, and a key is taken by
    creating its file exclusively, so tasks running at once never interleave or both win.
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def _append(self, name: str, line: str) -> None:
        fd = os.open(self.folder / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def send(self, order_id: str, attempt: int = 0, key: str | None = None, task: int | None = None) -> bool:
        """Send the notification of ``order_id``; False when ``key`` was seen before (nothing delivered)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self._append("calls.log", f"{attempt} {order_id}" + ("" if task is None else f" {task}") + "\n")
        if key is not None:
            keys = self.folder / "keys"
            keys.mkdir(exist_ok=True)
            try:
                os.close(os.open(keys / _key_file(key), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except FileExistsError:
                return False
        self._append("delivered.log", f"{order_id}\n")
        return True

    def _lines(self, name: str) -> list[str]:
        try:
            return (self.folder / name).read_text().splitlines()
        except FileNotFoundError:
            return []

    def calls(self) -> list[tuple[int, str]]:
        """Every call, in order, as ``(task attempt, order id)``."""
        return [(int(fields[0]), fields[1]) for fields in (line.split() for line in self._lines("calls.log"))]

    def attempts_per_task(self) -> dict[int, set[int]]:
        """``{task: {attempt numbers seen}}``, from the calls that named their task."""
        found: dict[int, set[int]] = {}
        for fields in (line.split() for line in self._lines("calls.log")):
            if len(fields) > 2:
                found.setdefault(int(fields[2]), set()).add(int(fields[0]))
        return dict(sorted(found.items()))

    def delivered(self) -> list[str]:
        """The order id of every message delivered, repeats included."""
        return self._lines("delivered.log")


def reconcile_outbox(produced: list[dict], outbox: Outbox) -> ledger.Ledger:
    """The messages ``outbox`` delivered, reconciled against the orders: one message per order is exactly-once."""
    amounts = {o["order_id"]: o["amount"] for o in produced}
    return ledger.reconcile(produced, [(i, amounts.get(i, 0)) for i in outbox.delivered()], label="notifications")


def _key_file(key) -> str:
    """A key as a file name: any text, so it is hex-encoded."""
    return str(key).encode().hex()[:200] or "empty"


def notify_udf(outbox_folder: str, key: Callable | None = None, pause_s: float = PAUSE_S):
    """The UDF of the lesson: send each row's notification, then pass its order id on unchanged.

    ``key(call)`` (optional) gets a dict with ``order_id``, ``partition``, ``offset`` and ``attempt``
    (the task attempt: 0 first, 1 for Spark's retry) and returns the idempotency key to send with it.
    """
    from pyspark.sql import functions as F

    def notify(order_id, partition, offset):
        from pyspark import TaskContext

        context = TaskContext.get()
        attempt = context.attemptNumber() if context is not None else 0
        task = context.partitionId() if context is not None else None
        call = {"order_id": order_id, "partition": partition, "offset": offset, "attempt": attempt}
        Outbox(outbox_folder).send(order_id, attempt, key(call) if key else None, task=task)
        time.sleep(pause_s)
        return order_id

    # useArrow=False: Spark 4.2 turns Arrow-optimized Python UDFs on by default
    # (spark.sql.execution.pythonUDF.arrow.enabled); without pyarrow it warns and falls back.
    return F.udf(notify, "string", useArrow=False)


def orders_with_positions(spark, bootstrap: str, topic: str):
    """The topic's orders with the Kafka partition and offset of each record."""
    from pyspark.sql import functions as F

    from ...orders import ORDER_SCHEMA

    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").load()
            .select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("order"), "partition", "offset")
            .select("order.*", "partition", "offset"))


@dataclass
class ExecutorKill:
    """What one run with an executor killed mid-task left behind."""

    produced: list = field(default_factory=list)
    table: ledger.Ledger | None = None          # the Delta table, reconciled
    notified: ledger.Ledger | None = None       # the messages the outbox delivered, reconciled
    calls: list = field(default_factory=list)   # (attempt, order id) of every call
    killed: list = field(default_factory=list)  # pids of the executors killed
    orphans: list = field(default_factory=list)  # data files in the table folder its log does not name
    on_cluster: bool = False
    attempts_per_task: dict = field(default_factory=dict)  # task (partition index) -> attempt numbers seen

    @property
    def retried(self) -> bool:
        """Did a task run a second attempt (the retry after the kill)?"""
        return any(attempt > 0 for attempt, _ in self.calls)

    @property
    def calls_per_attempt(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for attempt, _ in self.calls:
            counts[attempt] = counts.get(attempt, 0) + 1
        return dict(sorted(counts.items()))

    def task_line(self) -> str:
        """How many of the batch's tasks ran more than one attempt (the killed one), and how many ran once."""
        again = sum(1 for attempts in self.attempts_per_task.values() if len(attempts) > 1)
        return (f"tasks of the batch: {len(self.attempts_per_task)} | ran a second attempt: {again} | "
                f"ran once: {len(self.attempts_per_task) - again}")

    @property
    def twice_from_killed_attempt(self) -> bool:
        """Is every order notified twice one that a killed (first) attempt had already notified?"""
        first = {order_id for attempt, order_id in self.calls if attempt == 0}
        return bool(self.notified) and set(self.notified.duplicated_ids) <= first

    def lines(self) -> list[str]:
        """Stable lines for a checked cell."""
        return [f"ran on the Spark cluster: {self.on_cluster}",
                f"executors killed mid-task: {len(self.killed) > 0}",
                f"the killed task ran again (a second attempt): {self.retried}",
                f"delta table:   {self.table.verdict_line()}",
                f"notifications: {self.notified.verdict} (lost={self.notified.lost}, "
                f"duplicated: {'some' if self.notified.duplicated else 'none'})"]


def _raised(error) -> str:
    """The line of a query's error that names what was raised (a Python UDF's own exception, such as the key
    function's, comes last in the stack Spark reports), never cut before it."""
    from ...crashlab.record import failure_line

    return failure_line(str(error))


def clear_run(lesson, name: str) -> str:
    """Forget an earlier run called ``name``, so running a cell again starts clean: its topic is deleted
    (and created anew), its table, checkpoint and outbox folder removed. Returns the topic's name."""
    import shutil

    topic = lesson.topic(name)
    kafka.delete_topics(lesson.bootstrap, [topic])
    for folder in (lesson.table(name), lesson.checkpoint(name), lesson.path(name)):
        shutil.rmtree(folder, ignore_errors=True)
    return topic


def kill_an_executor_mid_batch(spark, lesson, name: str = "executor-kill", orders: int = 200,
                               key: Callable | None = None, kill_after_calls: int = KILL_AFTER_CALLS,
                               pause_s: float = PAUSE_S, log=_quiet) -> ExecutorKill:
    """Produce ``orders`` orders to the lesson's topic ``name``, run the notify-then-Delta query over them
    (one ``availableNow`` run) and kill the application's executors once ``kill_after_calls``
    notifications went out. ``key``: the idempotency key function (see :func:`notify_udf`)."""
    if key is not None:  # a trial call here, so an unfinished TODO or a bug shows in the notebook, not in a task
        key({"order_id": "o-000000", "partition": 0, "offset": 0, "attempt": 0})
    topic = clear_run(lesson, name)
    kafka.ensure_topic(lesson.bootstrap, topic)
    produced = lesson.produce_orders(orders, topic=name, progress=False)
    outbox, table = Outbox(lesson.path(name, "outbox")), lesson.table(name)
    notify = notify_udf(str(outbox.folder), key, pause_s)
    rows = (orders_with_positions(spark, lesson.bootstrap, topic)
            .select(notify("order_id", "partition", "offset").alias("order_id"),
                    "customer_id", "amount", "status", "event_time"))
    query = (rows.writeStream.format("delta").option("checkpointLocation", lesson.checkpoint(name))
             .trigger(availableNow=True).start(table))
    lesson.track(query)
    result = ExecutorKill(produced=produced, on_cluster=spark.sparkContext.master.startswith("spark://"))
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while query.isActive and time.monotonic() < deadline:
        if sum(1 for attempt, _ in outbox.calls() if attempt == 0) >= kill_after_calls:
            result.killed = cluster.kill_executors(spark.sparkContext.applicationId, log=log)
            break
        time.sleep(0.05)
    if not result.killed:
        failed = query.exception() if not query.isActive else None
        query.stop()
        if failed is not None:  # the query ended by itself: say why first (a key that raised in a task, say)
            raise CourseError(f"The query failed before an executor was killed: {_raised(failed)}")
        raise CourseError(f"The run ended before {kill_after_calls} notifications went out, so no executor was "
                          "killed mid-task. Is this kernel on the cluster (run use_the_clusters() first, then "
                          "restart the kernel if it already had a local SparkSession)?")
    if not query.awaitTermination(max(1.0, deadline - time.monotonic())):
        query.stop()
        raise CourseError(f"The query did not finish within {RUN_TIMEOUT_S} s after the executor was killed. "
                          "`python -m deliverylab cluster status` shows whether both workers are alive.")
    if query.exception() is not None:
        raise CourseError(f"The query failed after the executor was killed: {_raised(query.exception())}")
    result.table = ledger.reconcile(produced, ledger.read_delta(spark, table), label="delta table")
    result.notified = reconcile_outbox(produced, outbox)
    result.calls = outbox.calls()
    result.attempts_per_task = outbox.attempts_per_task()
    result.orphans = deltalog.orphan_files(table)
    return result
