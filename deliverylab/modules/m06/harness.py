"""Module 06's notebook side of the relay: run it in a process, crash it, restart it, reconcile.

    >>> report = m06.crash_and_restart(lesson, crash_transaction=3)
    >>> print(report.summary())

The relay process (relay.py) logs one JSON line per event; :class:`RelayRun` reads them
back once the process has ended. Its output topic is reconciled against the orders it
read, once as a ``read_committed`` consumer sees it and once as a ``read_uncommitted``
consumer (the default of Kafka's Java client and of kafka-python) does.
"""
from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...config import CourseError
from ...stack import kafka, processes
from .relay import DEFAULT_BATCH_SIZE, check_moment

RUNS_FOLDER = "relay-runs"
SOURCE, SINK = "relay-orders", "relay-enriched"


def names(lesson) -> dict:
    """The relay's topics, consumer group and transactional id in this lesson."""
    return {"source": lesson.topic(SOURCE), "sink": lesson.topic(SINK),
            "group": f"{lesson.topic_prefix}relay", "transactional_id": f"{lesson.topic_prefix}relay"}


@dataclass
class RelayRun:
    """What one relay process did, read back from its event log after it ended."""

    returncode: int
    events: list = field(repr=False)
    log_path: str = field(repr=False)

    @property
    def killed_by_sigkill(self) -> bool:
        return processes.killed_by_sigkill(self.returncode)

    def _numbers(self, kind: str) -> list[int]:
        return [e["transaction"] for e in self.events if e["event"] == kind]

    @property
    def committed(self) -> int:
        """Transactions this run committed."""
        return len(self._numbers("committed"))

    @property
    def crashed_at(self) -> tuple[str, int] | None:
        crashes = [(e["moment"], e["transaction"]) for e in self.events if e["event"] == "crash"]
        return crashes[-1] if crashes else None

    @property
    def open_ids(self) -> list[str]:
        """Order ids of the transaction that was open when the process died ([] if none)."""
        done = set(self._numbers("committed"))
        open_ = [e for e in self.events if e["event"] == "transaction" and e["transaction"] not in done]
        return open_[-1]["order_ids"] if open_ and self.returncode != 0 else []

    @property
    def ended(self) -> str | None:
        ends = [e["reason"] for e in self.events if e["event"] == "end"]
        return ends[-1] if ends else None

    def line(self) -> str:
        done = f"{self.committed} transaction{'' if self.committed == 1 else 's'} committed"
        if self.killed_by_sigkill:
            where = f" at {self.crashed_at[0]} of transaction {self.crashed_at[1]}" if self.crashed_at else ""
            return f"relay killed by SIGKILL{where}; {done}; {len(self.open_ids)} records in the open transaction"
        if self.returncode == 0:
            return f"relay {self.ended}: {done}"
        return f"relay exited with code {self.returncode}; {done}"

    def __str__(self) -> str:
        return self.line()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.line())


class RelayProcess:
    """A running relay process; ``wait()`` for its :class:`RelayRun`."""

    def __init__(self, popen: subprocess.Popen, log_path: Path, stderr_path: Path):
        self.popen, self.log_path, self.stderr_path = popen, log_path, stderr_path
        self.pid = popen.pid

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def wait(self, timeout_s: float = 60) -> RelayRun:
        try:
            self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise CourseError(f"the relay did not finish within {timeout_s:.0f}s and was stopped. Check the broker "
                              f"(`python -m deliverylab stack status`) and the run log {self.log_path}.") from None
        except KeyboardInterrupt:
            self.kill()
            raise
        code = self.popen.returncode
        if code not in (0, -signal.SIGKILL, -signal.SIGTERM):
            text = self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""
            last = ([line for line in text.splitlines() if line.strip()][-1:] or ["(no output)"])[0]
            raise CourseError(f"the relay failed (exit code {code}): {last.removeprefix('CourseError: ')}")
        return RelayRun(code, processes.read_jsonl(self.log_path), str(self.log_path))

    def kill(self) -> None:
        if self.running:
            processes.kill_group(self.pid)
            self.popen.wait()


def start_relay(lesson, *, crash_transaction: int | None = None, crash: str = "before_commit",
                batch_size: int = DEFAULT_BATCH_SIZE, transactional_id: str | None = None) -> RelayProcess:
    """Start a relay process and return at once (see :func:`run_relay`)."""
    check_moment(crash)
    if crash_transaction is not None and (not isinstance(crash_transaction, int) or crash_transaction < 1):
        raise CourseError(f"crash_transaction counts transactions from 1; got {crash_transaction!r}.")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise CourseError(f"batch_size must be a positive whole number; got {batch_size!r}.")
    n = names(lesson)
    kafka.ensure_topic(lesson.bootstrap, n["sink"])
    runs = Path(lesson.path(RUNS_FOLDER))
    runs.mkdir(parents=True, exist_ok=True)
    number = len(list(runs.glob("relay-*.jsonl"))) + 1
    log_path, stderr_path = runs / f"relay-{number:03d}.jsonl", runs / f"relay-{number:03d}.stderr"
    args = ["run", "--bootstrap", lesson.bootstrap, "--source", n["source"], "--sink", n["sink"],
            "--group", n["group"], "--transactional-id", transactional_id or n["transactional_id"],
            "--batch-size", str(batch_size), "--log", str(log_path)]
    if crash_transaction is not None:
        args += ["--crash", crash, "--crash-transaction", str(crash_transaction)]
    popen = processes.spawn("deliverylab.modules.m06.relay", *args, log=stderr_path)
    proc = RelayProcess(popen, log_path, stderr_path)
    lesson.on_cleanup(proc.kill)
    return proc


def run_relay(lesson, *, crash_transaction: int | None = None, crash: str = "before_commit",
              batch_size: int = DEFAULT_BATCH_SIZE, transactional_id: str | None = None,
              timeout_s: float = 60) -> RelayRun:
    """Run the relay until it has drained its source topic, or until its armed crash kills it.

    ``crash_transaction=N`` arms a SIGKILL at ``crash`` of the N-th transaction. The relay
    resumes from the offsets its committed transactions recorded for the consumer group.
    """
    return start_relay(lesson, crash_transaction=crash_transaction, crash=crash, batch_size=batch_size,
                       transactional_id=transactional_id).wait(timeout_s)


def output(lesson, isolation_level: str = "read_committed") -> list[tuple]:
    """``(order_id, amount)`` of every record in the relay's output topic, as a consumer at that level sees it."""
    from ... import ledger

    return ledger.read_kafka_topic(lesson.bootstrap, names(lesson)["sink"], isolation_level=isolation_level)


@dataclass
class RelayReport:
    """One crash-and-restart experiment: the two runs and the output as each kind of reader sees it."""

    crash_run: RelayRun
    restart_run: RelayRun
    produced: list = field(repr=False)       # (order_id, amount) of every order in the source topic
    committed: object = field(repr=False)    # Ledger, read_committed
    uncommitted: object = field(repr=False)  # Ledger, read_uncommitted
    seconds: float = 0.0

    def summary(self) -> str:
        return "\n".join([
            f"crash     {self.crash_run.line()}",
            f"restart   {self.restart_run.line()}",
            f"read_committed    {self.committed.verdict_line()}",
            f"read_uncommitted  {self.uncommitted.verdict_line()}",
        ])

    def __str__(self) -> str:
        return self.summary()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.summary())


def reset(lesson) -> None:
    """Forget the relay's earlier runs: its output topic and its consumer group's offsets."""
    n = names(lesson)
    kafka.delete_topics(lesson.bootstrap, [n["sink"]])
    kafka.delete_group(lesson.bootstrap, n["group"])


def fill_source(lesson, orders: int) -> None:
    """Top the relay's source topic up to ``orders`` seeded orders (one partition: batches of exactly batch_size)."""
    source = names(lesson)["source"]
    kafka.ensure_topic(lesson.bootstrap, source, partitions=1)
    present = kafka.count_records(lesson.bootstrap, source)
    if present < orders:
        lesson.produce_orders(orders - present, topic=SOURCE, start=present, progress=False)


def crash_relay(lesson, orders: int = 300, crash_transaction: int = 3, crash: str = "before_commit",
                batch_size: int = DEFAULT_BATCH_SIZE, fresh: bool = True, timeout_s: float = 60) -> RelayRun:
    """Top the source up to ``orders``, then run the relay until its armed SIGKILL fires.

    ``fresh=True`` first forgets earlier runs (output topic, group offsets), so the cell can be re-run.
    """
    if fresh:
        reset(lesson)
    fill_source(lesson, orders)
    run = run_relay(lesson, crash_transaction=crash_transaction, crash=crash, batch_size=batch_size,
                    timeout_s=timeout_s)
    if not run.killed_by_sigkill:
        raise CourseError(f"the relay finished without reaching transaction {crash_transaction} ({run.line()}). "
                          "Use more orders, a smaller batch_size or an earlier crash_transaction.")
    return run


def reconcile(lesson, crash_run: RelayRun, restart_run: RelayRun) -> RelayReport:
    """Reconcile the source topic against the output topic, as each kind of reader sees it."""
    from ... import ledger

    produced = ledger.read_kafka_topic(lesson.bootstrap, names(lesson)["source"])
    return RelayReport(
        crash_run=crash_run, restart_run=restart_run, produced=produced,
        committed=ledger.reconcile(produced, output(lesson, "read_committed"), label="read_committed"),
        uncommitted=ledger.reconcile(produced, output(lesson, "read_uncommitted"), label="read_uncommitted"))


def crash_and_restart(lesson, orders: int = 300, crash_transaction: int = 3, crash: str = "before_commit",
                      batch_size: int = DEFAULT_BATCH_SIZE, fresh: bool = True, timeout_s: float = 60) -> RelayReport:
    """Crash the relay (:func:`crash_relay`), restart it with the same transactional id, reconcile."""
    started = time.monotonic()
    crash_run = crash_relay(lesson, orders, crash_transaction, crash, batch_size, fresh, timeout_s)
    report = reconcile(lesson, crash_run, run_relay(lesson, batch_size=batch_size, timeout_s=timeout_s))
    report.seconds = time.monotonic() - started
    return report
