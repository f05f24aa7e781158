"""Lab 10's runs in one call each, and what they share: a query run in the notebook's Spark until it has
read its topic, a crash made inside a batch, another writer's commit, the table's snapshots read from its
metadata file (no JVM), and the ledger.

How a crash is made here. The lab runs your query in the notebook's own Spark and stops it *inside* a
batch: the function you gave ``foreachBatch`` is wrapped, and in the batch the crash is armed for, the
wrapper (``after_write``) raises once your function has returned, or (``after_first_commit``) the first
call from your function into Spark that returns after an Iceberg commit raises instead of returning, so
nothing your function would do next happens. The query dies with that error: Spark has written
``offsets/N`` and not ``commits/N``, and the table holds exactly the commits made so far, which is what a
SIGKILL at that moment leaves on disk. The restart replays batch N. A SIGKILL also takes the driver's
memory: at each start your function is made again from its source in a module of its own (``fresh``), so
nothing it kept in Python outlives the crash. (What this crash keeps and a real one would not: the Spark
application id, and objects a learner hangs on a module the course imported. Lesson 10 kills real
drivers.) A query written by Iceberg's own streaming sink is crashed as lab 05 does it: stopped after its
last batch, whose ``commits/N`` is then deleted.
"""
from __future__ import annotations

import itertools
import re
import secrets
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ... import checkpoint
from ...orders import ORDER_SCHEMA
from . import tables

#: The text the lab's crash raises with, so a query that died of it is told from one that failed.
CRASH_MARK = "deliverylab: the lab crashed your query here"
POINTS = {"after_write": "after your function returned for batch {n}, before Spark wrote commits/{n}",
          "after_first_commit": "right after the first Iceberg commit your function made in batch {n}"}
#: Rows another writer commits; the ledger leaves them out.
FOREIGN = "foreign-"
#: How long one run of a query may take to read its topic.
TIMEOUT_S = 120
_names = itertools.count(1)
_state = threading.local()


@dataclass(frozen=True)
class Outputs:
    """Where your writer writes: ``table`` (``iceberg.<namespace>.<name>``) and ``checkpoint`` (a folder)."""
    table: str
    checkpoint: str

    def query_id(self) -> str | None:
        """The query id Spark keeps in ``<checkpoint>/metadata``: the same across restarts of this checkpoint,
        a new one for a new checkpoint (None before the query first started)."""
        return checkpoint.query_id(self.checkpoint)


# --------------------------------------------------------------------------- tables and their metadata


def new_table(spark, lesson, base: str) -> tuple[str, Path]:
    """A new, empty orders table (format v2) in the lesson's folder: its catalog name and its folder."""
    folder = Path(lesson.table(f"{base}_{next(_names)}_{secrets.token_hex(3)}"))
    table = tables.iceberg_identifier(folder, spark)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {table.rsplit('.', 1)[0]}")
    spark.sql(f"CREATE TABLE {table} ({ORDER_SCHEMA}) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    return table, folder


def snapshot_ids(folder: Path) -> set:
    return {snapshot.id for snapshot in tables.snapshots(folder)}


def ancestor_ids(folder: Path) -> list:
    return [snapshot.id for snapshot in tables.ancestors(folder)]


def versions(folder: Path) -> tuple:
    """(table, number of metadata versions) of every table in a namespace folder: one more after any commit."""
    return tuple(sorted((t.name, sum(1 for f in (t / "metadata").glob("v*.metadata.json")))
                        for t in Path(folder).iterdir() if (t / "metadata").is_dir()))


_STANDARD = ("operation", "spark.app.id", "app-", "engine-", "iceberg-", "added-", "deleted-", "removed-",
             "total-", "changed-", "manifests-", "entries-", "partition", "replace-", "kept-")


def marks(snapshot) -> dict:
    """The summary entries a writer added of its own (snapshot-property.*): not Iceberg's or Spark's counters."""
    return {k: v for k, v in snapshot.summary.items() if not k.startswith(_STANDARD)}


def foreign_commit(spark, table: str, n: int) -> None:
    """Another writer's commit: one order of its own, a snapshot on top of the table."""
    spark.sql(f"INSERT INTO {table} (order_id, customer_id, amount, status, event_time) "
              f"VALUES ('{FOREIGN}{n}', 'c-foreign', 1.00, 'placed', TIMESTAMP '2026-01-01 00:00:00')")


def rows(folder: Path) -> list[tuple]:
    """(order_id, amount) of every row but another writer's, read without a JVM (tables.rows)."""
    return [row for row in tables.rows(folder) if not str(row[0]).startswith(FOREIGN)]


def unfinished(function: Callable, *args) -> None:
    """A lab's function whose body is only its todo() raises its LabTodo now, before a run is set up for it."""
    if getattr(getattr(function, "__code__", None), "co_names", None) == ("todo",):
        function(*args)


def one_line(message: str) -> str:
    """The line that names why your code failed: crashlab's failure_line, except that for an error py4j relays
    ("An error occurred while calling o12.append.") it is the Java exception's own line below it."""
    from ...crashlab.record import failure_line

    line = failure_line(message)
    if "An error occurred while calling" in line:
        java = [ln.strip()[2:] for ln in message.splitlines() if re.match(r"^\s*: [\w.$]+(Exception|Error)\b", ln)]
        line = java[0][:300] if java else line
    return line


def ledger_of(produced, found, label: str):
    from ... import ledger

    return ledger.reconcile(produced, found, label=label)


# --------------------------------------------------------------------------- running a query, crashing it


class _Crash(BaseException):
    """Raised inside your function by the lab's crash: not an Exception, so an except Exception lets it by."""


class Trap:
    """A crash armed for one batch of a foreachBatch query, at one of POINTS; ``fired``: the point it hit."""

    def __init__(self, batch: int, point: str, namespace_dir: Path, table_folder: Path | None = None):
        self.batch, self.point, self.namespace_dir, self.table_folder = batch, point, namespace_dir, table_folder
        self.fired: str | None = None
        self.used = False
        self.before: set = set()  # the table's snapshot ids when the trapped batch began

    def wrap(self, function: Callable) -> Callable:
        self.used = True

        def batch_function(df, batch_id):
            if self.fired is not None or batch_id != self.batch:
                return function(df, batch_id)
            if self.table_folder is not None:
                self.before = snapshot_ids(self.table_folder)
            _state.watch = (self, versions(self.namespace_dir))
            try:
                function(df, batch_id)
            except _Crash:
                pass
            finally:
                _state.watch = None
            self.fired = self.fired or "after_write"
            raise RuntimeError(f"{CRASH_MARK}: {POINTS[self.fired].format(n=batch_id)}")

        return batch_function


@contextmanager
def _trapped(spark, trap: Trap | None):
    """While your query starts, foreachBatch wraps its function in ``trap``; while it runs, every call into
    Spark from the trapped batch is watched for a commit."""
    if trap is None:
        yield
        return
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    client = spark.sparkContext._gateway._gateway_client
    send = client.send_command
    original = DataStreamWriter.foreachBatch

    def send_command(*args, **kwargs):
        watch = getattr(_state, "watch", None)
        if watch is None or str(args[0] if args else "").startswith("m\n"):  # py4j's own memory commands
            return send(*args, **kwargs)
        if watch[0].fired:
            raise _Crash()
        answer = send(*args, **kwargs)
        if watch[0].point == "after_first_commit" and versions(watch[0].namespace_dir) != watch[1]:
            watch[0].fired = "after_first_commit"
            raise _Crash()
        return answer

    client.send_command = send_command
    DataStreamWriter.foreachBatch = lambda self, func: original(self, trap.wrap(func))
    try:
        yield
    finally:
        DataStreamWriter.foreachBatch = original
        client.__dict__.pop("send_command", None)


def fresh(function: Callable) -> Callable:
    """Your function as a new driver would have it: made again from its source, in a module of its own, so nothing
    it kept in Python (a variable of the notebook, an attribute, a closure's state) outlives the crash. The lab's
    own functions, and one whose source cannot be read, are used as they are."""
    import inspect
    import textwrap

    code = getattr(function, "__code__", None)
    if getattr(function, "__module__", "").startswith("deliverylab.") or code is None or code.co_freevars:
        return function
    try:
        code = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return function
    module = {"__name__": f"deliverylab_lab10_{function.__name__}"}
    exec(compile(code, f"<your {function.__name__}>", "exec"), module)  # noqa: S102 - the learner's own code
    return module[function.__name__]


def orders_stream(spark, lesson, topic: str, per_batch: int):
    from ...crashlab.variants import read_orders

    return read_orders(spark, lesson.bootstrap, topic, max_per_batch=per_batch)


def run(spark, lesson, start: Callable, out, topic: str, per_batch: int, trap: Trap | None = None) -> str | None:
    """Start ``start(orders, out)`` on ``topic``, wait until its commits cover the topic or the trap fired,
    stop it. None, "crashed", or why it failed, in one line. An unfinished TODO is raised."""
    from ...checks import _is_todo_error
    from ...sparkerrors import quiet_error_log
    from ...stack import kafka

    end = kafka.end_offsets(lesson.bootstrap, topic)
    with quiet_error_log(), _quiet_py4j(), _trapped(spark, trap):
        try:
            query = fresh(start)(orders_stream(spark, lesson, topic, per_batch), out)
        except Exception as error:  # noqa: BLE001 - the learner's code: any error is the answer to report
            if _is_todo_error(error):
                raise
            return one_line(f"{type(error).__name__}: {error}")
        if not hasattr(query, "isActive"):
            return f"your function returned {type(query).__name__}, not the started query"
        lesson.track(query)
        deadline = time.monotonic() + TIMEOUT_S
        try:
            while time.monotonic() < deadline:
                if trap is not None and trap.fired and not query.isActive:
                    return "crashed"
                done = checkpoint.done_offsets(out.checkpoint, topic)
                if all(done.get(p, -1) >= e for p, e in end.items()):
                    return None
                if not query.isActive:
                    error = query.exception()
                    if trap is not None and trap.fired:
                        return "crashed"
                    return one_line(str(error)) if error is not None else "your query ended by itself"
                time.sleep(0.05)
            return f"your query did not commit its topic's orders within {TIMEOUT_S} s (is it checkpointed at out.checkpoint?)"
        finally:
            query.stop()


@contextmanager
def _quiet_py4j():
    import logging

    logger = logging.getLogger("py4j")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def new_topic(lesson, name: str, orders: int, seed: int, start: int = 0) -> tuple[str, list]:
    from ...orders import produce_orders
    from ...stack import kafka

    topic = lesson.topic(name)
    kafka.ensure_topic(lesson.bootstrap, topic)
    return topic, produce_orders(lesson.bootstrap, topic, orders, seed=seed, start=start, progress=False)


def uncommit_last(ckpt: str) -> int:
    """Delete the last batch's commits/N (and its checksum), as a crash after the sink's commit leaves it."""
    last = max(checkpoint.batch_ids(ckpt)[1])
    for f in (Path(ckpt) / "commits" / str(last), Path(ckpt) / "commits" / f".{last}.crc"):
        f.unlink(missing_ok=True)
    return last


# --------------------------------------------------------------------------- exercise 1: your writer


@dataclass
class WriterRun:
    """Your writer crashed in batch ``batch`` at ``point`` and replayed; ``failure``: why it stopped, or None."""
    lesson: object
    writer: Callable
    out: Outputs
    folder: Path
    produced: list
    batch: int
    point: str | None = None
    failure: str | None = None
    ledger: object = None

    def line(self) -> str:
        crash = (f"crash: {POINTS[self.point].format(n=self.batch)}" if self.point
                 else "crash: none (your query never reached it)")
        return crash + ("\n" + self.ledger.verdict_line() if self.ledger is not None else
                        f"\nyour query stopped: {self.failure}")


def crash_and_replay(lesson, writer: Callable, orders: int = 120, per_batch: int = 40, batch: int = 1,
                     point: str = "after_write", spark=None) -> WriterRun:
    """Run your ``writer(orders, out)`` on a topic of ``orders`` orders (``per_batch`` a batch) into a new table,
    crash it in batch ``batch`` at ``point``, restart it from its checkpoint, and reconcile the table."""
    from ...stack.session import get_spark

    unfinished(writer, None, None)
    spark = spark or get_spark()
    table, folder = new_table(spark, lesson, "my_writer")
    topic, produced = new_topic(lesson, folder.name, orders, seed=10)
    out = Outputs(table, lesson.checkpoint(folder.name))
    result = WriterRun(lesson, writer, out, folder, produced, batch)
    trap = Trap(batch, point, folder.parent)
    outcome = run(spark, lesson, writer, out, topic, per_batch, trap)
    result.point = trap.fired
    if outcome not in (None, "crashed"):
        result.failure = outcome
        return result
    if not trap.used:
        result.failure = "your query does not write through foreachBatch (the exercise asks for a foreachBatch writer)"
        return result
    outcome = run(spark, lesson, writer, out, topic, per_batch)
    if outcome is not None:
        result.failure = outcome
        return result
    result.ledger = ledger_of(produced, rows(folder), "your writer")
    return result


# --------------------------------------------------------------------------- exercise 2: your maintenance plan


def sink_query(orders, out: Outputs):
    """Iceberg's own streaming sink: each batch one commit whose summary carries the query id and batch id."""
    return (orders.writeStream.format("iceberg").outputMode("append")
            .option("checkpointLocation", out.checkpoint).toTable(out.table))


@dataclass
class PlanRun:
    """Iceberg's sink crashed after its commit of its last batch, other commits, your plan, the replay."""
    lesson: object = None
    plan: Callable | None = None
    failure: str | None = None
    kept: bool | None = None          # the query's last commit still an ancestor of the current snapshot
    older_before: int = 0             # snapshots older than it before your plan
    older_left: int = 0               # ... and after
    ledger: object = None

    def line(self) -> str:
        if self.failure is not None:
            return f"your plan stopped: {self.failure}"
        return (f"the query's last commit is still an ancestor of the current snapshot: {self.kept}\n"
                f"every snapshot older than it expired: {self.older_left == 0}\n" + self.ledger.verdict_line())


def expire_and_replay(lesson, plan: Callable, orders: int = 90, per_batch: int = 30, steps=("insert",),
                      seed: int = 20, spark=None) -> PlanRun:
    """Iceberg's streaming sink writes ``orders`` orders (``per_batch`` a batch) into a new table and is crashed
    after its commit of its last batch; then ``steps`` run, in order ("insert": another writer's commit; "query":
    another streaming query writes a few orders of its own); then your ``plan(spark, table, checkpoint)``; then
    the sink restarts from its checkpoint and replays its last batch."""
    from ...stack.session import get_spark

    unfinished(plan, None, None, None)
    spark = spark or get_spark()
    table, folder = new_table(spark, lesson, "my_plan")
    name = folder.name
    topic, produced = new_topic(lesson, name, orders, seed=seed)
    out = Outputs(table, lesson.checkpoint(name))
    result = PlanRun(lesson, plan)
    if (failure := run(spark, lesson, sink_query, out, topic, per_batch)) is not None:
        raise RuntimeError(f"Iceberg's sink failed: {failure}")  # the lab's own query: a course bug, not yours
    uncommit_last(out.checkpoint)
    for n, step in enumerate(steps):
        if step == "insert":
            foreign_commit(spark, table, n)
        else:
            other = Outputs(table, lesson.checkpoint(f"{name}_other{n}"))
            other_topic, other_orders = new_topic(lesson, f"{name}-other{n}", 5 + 3 * n, seed=seed + n,
                                                  start=100_000 * (n + 1))
            if (failure := run(spark, lesson, sink_query, other, other_topic, per_batch)) is not None:
                raise RuntimeError(f"Iceberg's sink failed: {failure}")
            produced = produced + other_orders
    last = _last_commit(folder, out.query_id())
    result.older_before = _older(folder, last)
    from ...checks import _is_todo_error

    try:
        with _quiet_py4j():
            plan(spark, table, out.checkpoint)
    except Exception as error:  # noqa: BLE001 - the learner's code
        if _is_todo_error(error):
            raise
        result.failure = one_line(f"{type(error).__name__}: {error}")
        return result
    result.kept = last.id in ancestor_ids(folder)
    result.older_left = _older(folder, last)
    if (failure := run(spark, lesson, sink_query, out, topic, per_batch)) is not None:
        raise RuntimeError(f"Iceberg's sink failed: {failure}")
    result.ledger = ledger_of(produced, rows(folder), "after your plan")
    return result


def _last_commit(folder: Path, query_id: str):
    """The newest ancestor whose summary carries ``query_id``: where the sink's walk stops."""
    return next(s for s in tables.ancestors(folder) if s.query == query_id)


def _older(folder: Path, last) -> int:
    return sum(1 for s in tables.snapshots(folder) if s.timestamp_ms < last.timestamp_ms)
