"""Module 01's machinery: run a consumer variant in a process of its own, crash it, count.

A consumer runs in its own Python process, so a crash is a real process death: armed with
``crash_batch=N``, it kills itself with SIGKILL at the named moment of its N-th batch (the
default moment is ``between_steps``: after step 1, before step 2). Nothing gets a chance
to clean up, as when the process is killed by the OS (the machine itself lives on).

    >>> run = m01.run_consumer("commit_then_write", lesson, crash_batch=2)
    >>> run = m01.run_consumer("commit_then_write", lesson)      # restart, drain, exit
    >>> rows = m01.delivered(lesson, "commit_then_write")

The child process is ``python -m deliverylab.modules.m01.process run --variant NAME ...``
(process.py); it writes one JSON line per event (batch polled, batch done, crash, end) to
a run log, which the parent reads back into a :class:`RunResult`. The variants themselves,
the code the lesson shows, are in ``consumers.py``.
"""
from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from ...config import CourseError
from ...stack import kafka, processes
from .consumers import VARIANTS, check_moment, check_variant, expected_outcome
from .process import DEFAULT_BATCH_SIZE
RUNS_FOLDER = "consumer-runs"


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
        return processes.killed_by_sigkill(self.returncode)

    @property
    def batches_done(self) -> int:
        return sum(1 for e in self.events if e["event"] == "batch_done")

    def _live_batches(self) -> dict[int, dict]:
        """The last "batch" event per batch number. A batch the loop put back (its group was rebalancing,
        see process.py) is left out: it is read again under the same number."""
        live = {}
        for e in self.events:
            if e["event"] == "batch":
                live[e["batch"]] = e
            elif e["event"] == "put_back" and "batch" in e:
                live.pop(e["batch"], None)
        return live

    @property
    def records_done(self) -> int:
        done = {e["batch"] for e in self.events if e["event"] == "batch_done"}
        return sum(e["records"] for n, e in self._live_batches().items() if n in done)

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
        open_batches = [e for n, e in self._live_batches().items() if n not in done]
        return open_batches[-1]["order_ids"] if open_batches and self.returncode != 0 else []

    @property
    def batches(self) -> list[dict]:
        """One dict per polled batch: number, record count, offsets [first, last] per partition."""
        return [{k: e[k] for k in ("batch", "records", "offsets")} for e in self._live_batches().values()]

    @property
    def batches_put_back(self) -> int:
        """How many times a polled batch was put back to be read again (its consumer group was rebalancing)."""
        return sum(1 for e in self.events if e["event"] == "put_back")

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
                events=processes.read_jsonl(self.log_path), log_path=str(self.log_path), stderr=stderr,
            )
            if self._result.returncode not in (0, -signal.SIGKILL, -signal.SIGTERM):
                last = [line for line in stderr.splitlines() if line.strip()][-1:] or ["(no output)"]
                message = last[0].removeprefix("deliverylab.config.CourseError: ").removeprefix("CourseError: ")
                raise CourseError(f"the {self.variant} consumer failed (exit code {self._result.returncode}): {message}")
        return self._result


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
    args = ["run", "--variant", variant, "--bootstrap", lesson.bootstrap, "--topic", lesson.topic(topic),
            "--group", group_id(lesson, variant), "--db", db_path(lesson, variant), "--batch-size", str(batch_size),
            "--log", str(log_path)]
    if crash_batch is not None:
        args += ["--crash", crash, "--crash-batch", str(crash_batch)]
    if until_drained:
        args.append("--until-drained")
    if max_records is not None:
        args += ["--max-records", str(max_records)]
    popen = processes.spawn("deliverylab.modules.m01.process", *args, log=stderr_path)
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
    from ... import ledger

    path = Path(db_path(lesson, variant))
    if not path.is_file():
        return []
    try:
        return ledger.read_sqlite(path, "orders")
    except CourseError:  # created, but the orders table is not there yet
        return []


def resume_offsets(lesson, variant: str, topic: str = "orders") -> dict[int, int]:
    """Where the variant would resume, {partition: next offset}: Kafka's group offsets, or its database's."""
    if VARIANTS[check_variant(variant)].uses_group:
        return kafka.group_offsets(lesson.bootstrap, group_id(lesson, variant), lesson.topic(topic))
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


def reset_variant(lesson, variant: str) -> None:
    """Forget everything a variant did in this lesson: its SQLite file and its consumer group."""
    check_variant(variant)
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(db_path(lesson, variant) + suffix).unlink(missing_ok=True)
    if VARIANTS[variant].uses_group:
        group = group_id(lesson, variant)
        # a killed static member stays registered until its session times out
        kafka.delete_group(lesson.bootstrap, group, static_member=f"{group}.consumer")


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
            f"variant   {self.variant}: {VARIANTS[self.variant].guarantee}: {VARIANTS[self.variant].summary}",
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
    from ... import ledger

    check_variant(variant)
    check_moment(crash)
    started = time.monotonic()
    topic = lesson.topic("orders")
    if fresh:
        reset_variant(lesson, variant)
    present = kafka.count_records(lesson.bootstrap, topic)
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
