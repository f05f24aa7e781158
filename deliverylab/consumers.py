"""Module 01: one plain Kafka consumer, three delivery guarantees, and a real crash.

Every variant reads the lesson's orders topic in batches and writes each order as a row in
a SQLite database file. Handling a batch takes two steps, and the *order* of the two steps
is the whole difference between the guarantees:

    commit_then_write   at-most-once    commit offsets to Kafka, then write the rows
    write_then_commit   at-least-once   write the rows, then commit offsets to Kafka
    offsets_with_data   exactly-once    rows and offsets in ONE SQLite transaction
    upsert_by_id        exactly-once    write then commit, but order_id is a primary key
                        (effect)        so a replayed row is ignored (idempotent write)

A consumer runs in its own Python process, so a crash is a real process death: armed with
``crash_batch=N``, it kills itself with SIGKILL at the named moment of its N-th batch (the
default moment is ``between_steps``: after step 1, before step 2). Nothing gets a chance
to clean up, exactly as when a machine loses power under a consumer.

    >>> run = consumers.run_consumer("commit_then_write", lesson, crash_batch=2)
    >>> run = consumers.run_consumer("commit_then_write", lesson)      # restart, drain, exit
    >>> rows = consumers.delivered(lesson, "commit_then_write")

The child process is ``python -m deliverylab.consumers run --variant NAME ...``; it writes
one JSON line per event (batch polled, batch done, crash, end) to a run log, which the
parent reads back into a :class:`RunResult`.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Callable

from .config import CourseError

#: The variants, each with the guarantee it gives when it crashes between its two steps.
VARIANTS = {
    "commit_then_write": "at-most-once: commit offsets to Kafka, then write rows; a crash in between loses the batch",
    "write_then_commit": "at-least-once: write rows, then commit offsets to Kafka; a crash in between writes the batch twice",
    "offsets_with_data": "exactly-once: rows and offsets in one SQLite transaction; a crash in between leaves neither",
    "upsert_by_id": "exactly-once effect: write then commit, but order_id is a primary key, so a replayed row is ignored",
}

#: The guarantee each variant gives, spelled as the ledger's verdicts.
GUARANTEES = {
    "commit_then_write": "at-most-once",
    "write_then_commit": "at-least-once",
    "offsets_with_data": "exactly-once",
    "upsert_by_id": "exactly-once",
}

#: The moments at which a consumer can be killed, for the batch number given as crash_batch.
CRASH_MOMENTS = {
    "after_poll": "batch N is polled; neither step has run",
    "between_steps": "step 1 of batch N is done; step 2 is not",
    "after_batch": "both steps of batch N are done",
}

DEFAULT_BATCH_SIZE = 100
RUNS_FOLDER = "consumer-runs"


def check_variant(variant: str) -> str:
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise CourseError(f"Unknown consumer variant {variant!r}. Valid variants: {', '.join(VARIANTS)}.")
    return variant


def check_moment(moment: str) -> str:
    if not isinstance(moment, str) or moment not in CRASH_MOMENTS:
        raise CourseError(f"Unknown crash moment {moment!r}. Valid crash moments: {', '.join(CRASH_MOMENTS)}.")
    return moment


def expected_outcome(variant: str, crash: str = "between_steps") -> str:
    """The ledger verdict a crash at ``crash`` should give: only between the steps do the variants differ."""
    check_variant(variant)
    return GUARANTEES[variant] if check_moment(crash) == "between_steps" else "exactly-once"


# --------------------------------------------------------------------------- the crash hook


@dataclass
class CrashPoint:
    """Kills this process with SIGKILL when ``moment`` is reached in batch number ``batch``."""

    moment: str | None = None
    batch: int | None = None
    current_batch: int = 0
    log: Callable[[dict], None] = lambda event: None

    def maybe_crash(self, moment: str) -> None:
        if moment == self.moment and self.current_batch == self.batch:
            self.log({"event": "crash", "moment": moment, "batch": self.current_batch})
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no finally blocks: a real death


# --------------------------------------------------------------------------- the two steps


def insert_rows(db: sqlite3.Connection, batch: list) -> None:
    """A plain INSERT per record: the table has no key, so a second copy is a second row."""
    db.executemany(
        "INSERT INTO orders (order_id, customer_id, amount, status, event_time, kafka_partition, kafka_offset)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [_row(record) for record in batch],
    )


def upsert_rows(db: sqlite3.Connection, batch: list) -> None:
    """INSERT that ignores an order_id the table already holds (order_id is the primary key)."""
    db.executemany(
        "INSERT INTO orders (order_id, customer_id, amount, status, event_time, kafka_partition, kafka_offset)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (order_id) DO NOTHING",
        [_row(record) for record in batch],
    )


def commit_to_kafka(consumer, batch: list) -> None:
    """Store in Kafka, for this consumer group, the offset after the batch's last record."""
    from kafka.structs import OffsetAndMetadata

    consumer.commit({tp: OffsetAndMetadata(offset, "", -1) for tp, offset in next_offsets(batch).items()})


def save_offsets(db: sqlite3.Connection, batch: list) -> None:
    """Store in the database the offset after the batch's last record, per partition."""
    db.executemany(
        "INSERT INTO offsets (topic, partition, next_offset) VALUES (?, ?, ?)"
        " ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset",
        [(tp.topic, tp.partition, offset) for tp, offset in next_offsets(batch).items()],
    )


def next_offsets(batch: list) -> dict:
    """{TopicPartition: offset of the batch's last record in it + 1}: where to resume."""
    from kafka import TopicPartition

    ends = {}
    for record in batch:
        tp = TopicPartition(record.topic, record.partition)
        ends[tp] = max(ends.get(tp, 0), record.offset + 1)
    return ends


def _order(record) -> dict:
    """A record's value: the order as JSON."""
    return json.loads(record.value)


def _row(record) -> tuple:
    order = _order(record)
    return (order["order_id"], order["customer_id"], str(order["amount"]), order["status"],
            order["event_time"], record.partition, record.offset)


# --------------------------------------------------------------------------- the variants


def commit_then_write(consumer, db, batch, crash_point):
    """At-most-once: tell Kafka the batch is done, then write it."""
    commit_to_kafka(consumer, batch)           # step 1: the group's offsets move past the batch
    crash_point.maybe_crash("between_steps")
    with db:                                   # step 2: the rows are committed in SQLite
        insert_rows(db, batch)


def write_then_commit(consumer, db, batch, crash_point):
    """At-least-once: write the batch, then tell Kafka it is done."""
    with db:                                   # step 1: the rows are committed in SQLite
        insert_rows(db, batch)
    crash_point.maybe_crash("between_steps")
    commit_to_kafka(consumer, batch)           # step 2: the group's offsets move past the batch


def offsets_with_data(consumer, db, batch, crash_point):
    """Exactly-once: the rows and the offsets commit together, in one SQLite transaction."""
    with db:                                   # one transaction: both steps or neither
        insert_rows(db, batch)                 # step 1: the rows
        crash_point.maybe_crash("between_steps")
        save_offsets(db, batch)                # step 2: where to resume, next to the rows


def upsert_by_id(consumer, db, batch, crash_point):
    """Exactly-once effect: at-least-once delivery into a write that ignores repeats."""
    with db:                                   # step 1: one row per order_id, repeats ignored
        upsert_rows(db, batch)
    crash_point.maybe_crash("between_steps")
    commit_to_kafka(consumer, batch)           # step 2: the group's offsets move past the batch


# --------------------------------------------------------------------------- where to start


def start_from_group(consumer, db, topic):
    """commit_then_write, write_then_commit, upsert_by_id: Kafka's group offsets say where to resume."""
    consumer.subscribe([topic])


def start_from_database(consumer, db, topic):
    """offsets_with_data: the group is not used; the offsets stored with the rows say where to resume."""
    from kafka import TopicPartition

    partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
    consumer.assign(partitions)
    stored = dict(db.execute("SELECT partition, next_offset FROM offsets WHERE topic = ?", (topic,)))
    for tp in partitions:
        if tp.partition in stored:
            consumer.seek(tp, stored[tp.partition])
        else:
            consumer.seek_to_beginning(tp)


_ORDERS_TABLE = """CREATE TABLE IF NOT EXISTS orders (
    order_id TEXT{key}, customer_id TEXT, amount TEXT, status TEXT, event_time TEXT,
    kafka_partition INTEGER, kafka_offset INTEGER)"""
_OFFSETS_TABLE = """CREATE TABLE IF NOT EXISTS offsets (
    topic TEXT, partition INTEGER, next_offset INTEGER, PRIMARY KEY (topic, partition))"""


@dataclass(frozen=True)
class _Spec:
    handle: Callable
    start: Callable
    uses_group: bool
    tables: tuple


_SPECS = {
    "commit_then_write": _Spec(commit_then_write, start_from_group, True, (_ORDERS_TABLE.format(key=""),)),
    "write_then_commit": _Spec(write_then_commit, start_from_group, True, (_ORDERS_TABLE.format(key=""),)),
    "offsets_with_data": _Spec(offsets_with_data, start_from_database, False,
                               (_ORDERS_TABLE.format(key=""), _OFFSETS_TABLE)),
    "upsert_by_id": _Spec(upsert_by_id, start_from_group, True, (_ORDERS_TABLE.format(key=" PRIMARY KEY"),)),
}


def source(variant: str, start: bool = False) -> str:
    """The code of a variant's batch handler (or, with ``start=True``, of how it starts)."""
    spec = _SPECS[check_variant(variant)]
    return inspect.getsource(spec.start if start else spec.handle)


# --------------------------------------------------------------------------- the consumer process


def open_db(db_path: str | Path, variant: str) -> sqlite3.Connection:
    Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(db_path), timeout=30)
    with db:
        for ddl in _SPECS[variant].tables:
            db.execute(ddl)
    return db


def consume(variant: str, *, bootstrap: str, topic: str, group: str, db_path: str | Path,
            batch_size: int = DEFAULT_BATCH_SIZE, crash: str | None = None, crash_batch: int | None = None,
            until_drained: bool = False, max_records: int | None = None,
            log: Callable[[dict], None] = print) -> dict:
    """The consumer loop (runs in the child process). Returns the end event it logged."""
    from kafka import KafkaConsumer, TopicPartition

    spec = _SPECS[check_variant(variant)]
    if crash is not None:
        check_moment(crash)
    crash_point = CrashPoint(moment=crash, batch=crash_batch, log=log)
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(True))

    db = open_db(db_path, variant)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group if spec.uses_group else None,
        # static membership: a restarted consumer takes over the killed one's place at once
        # instead of waiting for the broker to notice that the dead one stopped heartbeating
        group_instance_id=f"{group}.consumer" if spec.uses_group else None,
        client_id=f"deliverylab-{variant}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=batch_size,
        allow_auto_create_topics=False,
    )
    batches = records = 0
    reason = "stopped"
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise CourseError(f"Topic {topic!r} does not exist yet. Produce orders first, e.g. lesson.produce_orders(600).")
        end = consumer.end_offsets([TopicPartition(topic, p) for p in sorted(partitions)])
        spec.start(consumer, db, topic)
        log({"event": "start", "variant": variant, "pid": os.getpid(), "group": group if spec.uses_group else None,
             "end_offsets": {str(tp.partition): o for tp, o in end.items()}})
        while not stopping:
            if max_records is not None and records >= max_records:
                reason = "max_records"
                break
            if until_drained and _caught_up(consumer, end):
                reason = "drained"
                break
            want = batch_size if max_records is None else min(batch_size, max_records - records)
            polled = consumer.poll(timeout_ms=200, max_records=want)
            batch = [record for tp in sorted(polled) for record in polled[tp]]
            if not batch:
                continue
            batches += 1
            crash_point.current_batch = batches
            log({"event": "batch", "batch": batches, "records": len(batch),
                 "offsets": {str(tp.partition): [rs[0].offset, rs[-1].offset] for tp, rs in sorted(polled.items()) if rs},
                 "order_ids": [_order(record)["order_id"] for record in batch]})
            crash_point.maybe_crash("after_poll")
            spec.handle(consumer, db, batch, crash_point)
            records += len(batch)
            log({"event": "batch_done", "batch": batches})
            crash_point.maybe_crash("after_batch")
    finally:
        consumer.close(autocommit=False)
        db.close()
    ended = {"event": "end", "reason": reason, "batches": batches, "records": records}
    log(ended)
    return ended


def _caught_up(consumer, end: dict) -> bool:
    """True once this consumer's position has reached the end offsets seen at start, everywhere."""
    assigned = consumer.assignment()
    for tp, last in end.items():
        if last == 0:
            continue
        if tp not in assigned or consumer.position(tp) < last:
            return False
    return True


# --------------------------------------------------------------------------- the parent side


def db_path(lesson, variant: str) -> str:
    """The SQLite file a variant writes to in this lesson."""
    return lesson.path(f"{check_variant(variant)}.db")


def group_id(lesson, variant: str) -> str:
    """The consumer group a variant commits to (offsets_with_data keeps its offsets in its db instead)."""
    return f"{lesson.topic_prefix}{check_variant(variant)}"


@dataclass
class RunResult:
    """What one consumer process did, read back from its run log after it ended."""

    variant: str
    returncode: int
    crash: str | None
    crash_batch: int | None
    seconds: float
    events: list = field(repr=False)
    log_path: str = field(repr=False)
    stderr: str = field(default="", repr=False)

    @property
    def killed_by_sigkill(self) -> bool:
        return self.returncode == -signal.SIGKILL

    @property
    def batches_done(self) -> int:
        return sum(1 for e in self.events if e["event"] == "batch_done")

    @property
    def records_done(self) -> int:
        done = {e["batch"] for e in self.events if e["event"] == "batch_done"}
        return sum(e["records"] for e in self.events if e["event"] == "batch" and e["batch"] in done)

    @property
    def ended(self) -> str | None:
        """How the run ended by itself: 'drained', 'max_records' or 'stopped' (None if it died)."""
        ends = [e["reason"] for e in self.events if e["event"] == "end"]
        return ends[-1] if ends else None

    @property
    def crashed_at(self) -> tuple[str, int] | None:
        crashes = [(e["moment"], e["batch"]) for e in self.events if e["event"] == "crash"]
        return crashes[-1] if crashes else None

    @property
    def in_flight_ids(self) -> list[str]:
        """Order ids of the batch that was being handled when the process died ([] if none)."""
        done = {e["batch"] for e in self.events if e["event"] == "batch_done"}
        open_batches = [e for e in self.events if e["event"] == "batch" and e["batch"] not in done]
        return open_batches[-1]["order_ids"] if open_batches and self.returncode != 0 else []

    @property
    def batches(self) -> list[dict]:
        """One dict per polled batch: number, record count, offsets [first, last] per partition."""
        return [{k: e[k] for k in ("batch", "records", "offsets")} for e in self.events if e["event"] == "batch"]

    def line(self) -> str:
        n = self.batches_done
        done = f"{n} batch{'' if n == 1 else 'es'} done ({self.records_done} records)"
        if self.killed_by_sigkill:
            where = f" {self.crashed_at[0]} of batch {self.crashed_at[1]}" if self.crashed_at else ""
            return f"{self.variant}: killed by SIGKILL{where} after {done}; {len(self.in_flight_ids)} records were in flight"
        if self.returncode == 0:
            return f"{self.variant}: {self.ended} after {done} in {self.seconds:.1f}s"
        return f"{self.variant}: exited with code {self.returncode} after {done}"

    def __str__(self) -> str:
        return self.line()

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython shows the one-line story
        printer.text(self.line())


class ConsumerProcess:
    """A running consumer process. ``wait()`` or ``stop()`` it to get its :class:`RunResult`."""

    def __init__(self, variant, popen, log_path, stderr_path, crash, crash_batch):
        self.variant = variant
        self.popen = popen
        self.pid = popen.pid
        self.log_path = log_path
        self._stderr_path = stderr_path
        self._crash = crash
        self._crash_batch = crash_batch
        self._started = time.monotonic()
        self._result: RunResult | None = None

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def wait(self, timeout_s: float = 60) -> RunResult:
        try:
            self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise CourseError(
                f"the {self.variant} consumer did not finish within {timeout_s:.0f}s and was stopped. "
                f"Check the broker (`python -m deliverylab stack status`) and the run log {self.log_path}."
            ) from None
        except KeyboardInterrupt:  # an interrupted notebook cell must not leave the consumer behind
            self.popen.kill()
            self.popen.wait()
            raise
        return self._finish()

    def stop(self, timeout_s: float = 15) -> RunResult:
        """Ask the consumer to finish its current batch and exit (SIGTERM); kill it if it does not."""
        if self.running:
            self.popen.send_signal(signal.SIGTERM)
        return self.wait(timeout_s)

    def _kill_if_running(self) -> None:
        """Lesson cleanup: a consumer left running must not outlive its lesson."""
        if self.running:
            self.popen.kill()
            self.popen.wait()

    def _finish(self) -> RunResult:
        if self._result is None:
            stderr = Path(self._stderr_path).read_text(errors="replace") if Path(self._stderr_path).exists() else ""
            self._result = RunResult(
                variant=self.variant, returncode=self.popen.returncode, crash=self._crash,
                crash_batch=self._crash_batch, seconds=time.monotonic() - self._started,
                events=_read_events(self.log_path), log_path=str(self.log_path), stderr=stderr,
            )
            if self._result.returncode not in (0, -signal.SIGKILL, -signal.SIGTERM):
                last = [line for line in stderr.splitlines() if line.strip()][-1:] or ["(no output)"]
                message = last[0].removeprefix("deliverylab.config.CourseError: ").removeprefix("CourseError: ")
                raise CourseError(f"the {self.variant} consumer failed (exit code {self._result.returncode}): {message}")
        return self._result


def _read_events(path) -> list[dict]:
    events = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:  # never expected: lines are written whole
                    pass
    except FileNotFoundError:
        pass
    return events


def start_consumer(variant: str, lesson, *, crash_batch: int | None = None, crash: str = "between_steps",
                   batch_size: int = DEFAULT_BATCH_SIZE, until_drained: bool = True,
                   max_records: int | None = None, topic: str = "orders") -> ConsumerProcess:
    """Start a consumer process for ``variant`` and return at once (see :func:`run_consumer`)."""
    check_variant(variant)
    check_moment(crash)
    if crash_batch is not None and (not isinstance(crash_batch, int) or crash_batch < 1):
        raise CourseError(f"crash_batch counts batches from 1; got {crash_batch!r}.")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise CourseError(f"batch_size must be a positive whole number; got {batch_size!r}.")
    runs = Path(lesson.path(RUNS_FOLDER))
    runs.mkdir(parents=True, exist_ok=True)
    number = len(list(runs.glob(f"{variant}-*.jsonl"))) + 1
    log_path = runs / f"{variant}-{number:03d}.jsonl"
    stderr_path = runs / f"{variant}-{number:03d}.stderr"
    cmd = [sys.executable, "-m", "deliverylab.consumers", "run", "--variant", variant,
           "--bootstrap", lesson.bootstrap, "--topic", lesson.topic(topic), "--group", group_id(lesson, variant),
           "--db", db_path(lesson, variant), "--batch-size", str(batch_size), "--log", str(log_path)]
    if crash_batch is not None:
        cmd += ["--crash", crash, "--crash-batch", str(crash_batch)]
    if until_drained:
        cmd.append("--until-drained")
    if max_records is not None:
        cmd += ["--max-records", str(max_records)]
    with open(stderr_path, "wb") as err:
        # a session of its own: a notebook interrupt reaches the kernel, not the consumer
        popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                 start_new_session=True)
    proc = ConsumerProcess(variant, popen, log_path, stderr_path, crash if crash_batch else None, crash_batch)
    lesson.on_cleanup(proc._kill_if_running)
    return proc


def run_consumer(variant: str, lesson, *, crash_batch: int | None = None, crash: str = "between_steps",
                 batch_size: int = DEFAULT_BATCH_SIZE, until_drained: bool = True,
                 max_records: int | None = None, timeout_s: float = 60, topic: str = "orders") -> RunResult:
    """Run ``variant`` in its own process until it has drained the topic (or crashed) and return what it did.

    ``crash_batch=N`` arms a crash: the process kills itself with SIGKILL at ``crash``
    (default ``"between_steps"``) of its N-th batch. Without it, the consumer resumes where
    its offsets say (group offsets, or for offsets_with_data its database), drains, exits.
    """
    proc = start_consumer(variant, lesson, crash_batch=crash_batch, crash=crash, batch_size=batch_size,
                          until_drained=until_drained, max_records=max_records, topic=topic)
    return proc.wait(timeout_s)


def delivered(lesson, variant: str) -> list[tuple[str, Decimal]]:
    """Every row in the variant's SQLite sink as ``(order_id, Decimal amount)``, duplicates included."""
    path = Path(db_path(lesson, variant))
    if not path.is_file():
        return []
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT order_id, amount FROM orders ORDER BY rowid").fetchall()
    except sqlite3.OperationalError:  # created but the orders table is not there yet
        rows = []
    finally:
        db.close()
    return [(order_id, Decimal(amount)) for order_id, amount in rows]


def resume_offsets(lesson, variant: str, topic: str = "orders") -> dict[int, int]:
    """Where the variant would resume, {partition: next offset}: Kafka's group offsets, or its database's."""
    if not _SPECS[check_variant(variant)].uses_group:
        path = Path(db_path(lesson, variant))
        if not path.is_file():
            return {}
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return dict(db.execute("SELECT partition, next_offset FROM offsets WHERE topic = ? ORDER BY partition",
                                   (lesson.topic(topic),)))
        except sqlite3.OperationalError:
            return {}
        finally:
            db.close()
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=lesson.bootstrap, client_id="deliverylab-admin")
    try:
        group = group_id(lesson, variant)
        offsets = admin.list_group_offsets({group: None}).get(group, {})
    finally:
        admin.close()
    return {tp.partition: meta.offset for tp, meta in sorted(offsets.items()) if tp.topic == lesson.topic(topic)}


def reset_variant(lesson, variant: str) -> None:
    """Forget everything a variant did in this lesson: its SQLite file and its consumer group."""
    check_variant(variant)
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(db_path(lesson, variant) + suffix).unlink(missing_ok=True)
    if not _SPECS[variant].uses_group:
        return
    from kafka import KafkaAdminClient
    from kafka.admin import MemberToRemove

    group = group_id(lesson, variant)
    admin = KafkaAdminClient(bootstrap_servers=lesson.bootstrap, client_id="deliverylab-admin")
    try:
        if group in {g["group_id"] if isinstance(g, dict) else g[0] for g in admin.list_groups()}:
            try:  # a killed static member stays registered until its session times out
                admin.remove_group_members(group, [MemberToRemove(group_instance_id=f"{group}.consumer")])
            except Exception:  # not a member (any more): nothing to remove
                pass
            admin.delete_groups([group])
    finally:
        admin.close()


def _count_records(lesson, topic: str) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=lesson.bootstrap, group_id=None, client_id="deliverylab-count",
                             allow_auto_create_topics=False)
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            return 0
        tps = [TopicPartition(topic, p) for p in partitions]
        begin, end = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        return sum(end[tp] - begin[tp] for tp in tps)
    finally:
        consumer.close()


@dataclass
class CrashReport:
    """One crash-and-recover experiment: the crashed run, the recovery run, and the ledger."""

    variant: str
    expected: str
    crash_run: RunResult
    recovery_run: RunResult
    rows: list = field(repr=False)
    ledger: object = field(repr=False)
    seconds: float

    @property
    def verdict(self) -> str:
        return self.ledger.verdict

    @property
    def lost_ids(self) -> tuple:
        return self.ledger.lost_ids

    @property
    def duplicated_ids(self) -> tuple:
        return self.ledger.duplicated_ids

    def summary(self) -> str:
        return "\n".join([
            f"variant   {self.variant}: {VARIANTS[self.variant]}",
            f"crash     {self.crash_run.line()}",
            f"restart   {self.recovery_run.line()}",
            f"sink      {len(self.rows)} rows for {self.ledger.produced} produced orders",
            f"{self.ledger.verdict_line()}   (expected for this crash: {self.expected})",
        ])

    def __str__(self) -> str:
        return self.summary()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.summary())


def crash_and_recover(variant: str, lesson, orders_total: int = 600, crash_batch: int = 2,
                      crash: str = "between_steps", batch_size: int = DEFAULT_BATCH_SIZE,
                      fresh: bool = True, timeout_s: float = 60) -> CrashReport:
    """Produce, run with a crash, restart, drain, and reconcile what reached the SQLite sink.

    The topic is topped up to ``orders_total`` orders (orders already there are reused, so
    every variant can be tried on the same topic). ``fresh=True`` first forgets the
    variant's earlier runs (database file and consumer group), so the cell can be re-run.
    """
    from . import ledger

    check_variant(variant)
    check_moment(crash)
    started = time.monotonic()
    topic = lesson.topic("orders")
    if fresh:
        reset_variant(lesson, variant)
    present = _count_records(lesson, topic)
    if present < orders_total:
        lesson.produce_orders(orders_total - present, start=present, progress=False)
    crash_run = run_consumer(variant, lesson, crash_batch=crash_batch, crash=crash, batch_size=batch_size,
                             timeout_s=timeout_s)
    if not crash_run.killed_by_sigkill:
        raise CourseError(
            f"the {variant} consumer finished without reaching batch {crash_batch} ({crash_run.line()}). "
            f"Use fresh=True, more orders (orders_total) or a smaller crash_batch / batch_size."
        )
    recovery_run = run_consumer(variant, lesson, batch_size=batch_size, timeout_s=timeout_s)
    rows = delivered(lesson, variant)
    produced = ledger.read_kafka_topic(lesson.bootstrap, topic)
    return CrashReport(
        variant=variant, expected=expected_outcome(variant, crash), crash_run=crash_run, recovery_run=recovery_run,
        rows=rows, ledger=ledger.reconcile(produced, rows, label=variant), seconds=time.monotonic() - started,
    )


# --------------------------------------------------------------------------- command line


def _json_log(path: str | None) -> Callable[[dict], None]:
    # line-buffered: each event reaches the file (the kernel) before the next step, so a
    # SIGKILL right after it cannot lose it
    stream = open(path, "a", buffering=1, encoding="utf-8") if path else sys.stdout

    def log(event: dict) -> None:
        stream.write(json.dumps(event) + "\n")
        stream.flush()

    return log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab.consumers",
                                     description="Run one consumer variant of module 01 (one JSON line per event).")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="consume the orders topic into a SQLite file")
    run.add_argument("--variant", required=True, choices=list(VARIANTS))
    run.add_argument("--bootstrap", required=True)
    run.add_argument("--topic", required=True)
    run.add_argument("--group", required=True, help="consumer group id (offsets_with_data does not use it)")
    run.add_argument("--db", required=True, help="SQLite file to write")
    run.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    run.add_argument("--crash", choices=list(CRASH_MOMENTS), default="between_steps",
                     help="moment of the crash (needs --crash-batch)")
    run.add_argument("--crash-batch", type=int, default=None, help="kill this process with SIGKILL in batch N (from 1)")
    run.add_argument("--until-drained", action="store_true", help="exit once the end offsets seen at start are reached")
    run.add_argument("--max-records", type=int, default=None)
    run.add_argument("--log", default=None, help="file for the JSON events (default: stdout)")
    sub.add_parser("variants", help="list the variants")
    args = parser.parse_args(argv)
    if args.command == "variants":
        for name, text in VARIANTS.items():
            print(f"{name:<18} {text}")
        return 0
    try:
        consume(args.variant, bootstrap=args.bootstrap, topic=args.topic, group=args.group, db_path=args.db,
                batch_size=args.batch_size, crash=args.crash if args.crash_batch else None,
                crash_batch=args.crash_batch, until_drained=args.until_drained, max_records=args.max_records,
                log=_json_log(args.log))
    except CourseError as error:
        print(f"CourseError: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
