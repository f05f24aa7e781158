"""Run a pipeline in its own driver process, crash it at a named moment, restart it, count.

    pipe = crashlab.Pipeline(lesson, "at_least_once").start()
    pipe.produce(1000); pipe.drain()
    pipe.crash("after_sink_write")        # sends fresh orders so a batch runs, and dies there
    pipe.restart(); pipe.drain()
    print(pipe.ledger().verdict_line())

The driver runs in a process group of its own: a crash SIGKILLs the Python driver and
its JVM together, like a pulled plug, while the notebook keeps running. The pipeline
remembers every order it produced, so the ledger can reconcile what went into Kafka
with what reached the sink.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import crashpoints, pipelines
from .config import CourseError

READY_TIMEOUT_S = 90
CRASH_TIMEOUT_S = 120
DRAIN_TIMEOUT_S = 120
STOP_TIMEOUT_S = 60
#: Extra JVM options for pipeline drivers (through JAVA_TOOL_OPTIONS).
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


@dataclass(frozen=True)
class Crash:
    """What happened at one crash: where, in which batch of which run, and how the driver died."""
    point: str
    batch: int | None
    returncode: int
    run: int = 0

    @property
    def by_sigkill(self) -> bool:
        return self.returncode == -signal.SIGKILL

    @property
    def replayed(self) -> bool:
        """Did the crash leave batch N planned but uncommitted, so a restart runs it again?"""
        return self.point in crashpoints.REPLAYED_POINTS

    def line(self) -> str:
        where = f"batch {self.batch}" if self.batch is not None else "no batch in flight"
        how = "SIGKILL" if self.by_sigkill else f"exit code {self.returncode}"
        return f"driver killed at {self.point} in {where} ({how})"

    def to_dict(self) -> dict:
        return {**asdict(self), "by_sigkill": self.by_sigkill}


class Pipeline:
    """One pipeline variant of a lesson, with its topic, sink, checkpoint and driver process."""

    def __init__(self, lesson, variant: str, name: str | None = None, topic: str | None = None,
                 max_per_batch: int | None = 500, seed: int = 7):
        self.lesson = lesson
        self.variant = pipelines.variant(variant)
        self.name = name or variant
        # a topic per pipeline: each numbers its orders from 0, so two must never share one
        self.topic = lesson.topic(topic or f"{self.name}-orders")
        self.max_per_batch = max_per_batch
        self.seed = seed
        self.run_dir = Path(lesson.path("pipelines", self.name))
        self.sink_kind = self.variant.sink_kind
        if self.sink_kind == "kafka":
            self.sink = lesson.topic(f"{self.name}-out")
        elif self.sink_kind == "sqlite":
            self.sink = lesson.path("tables", f"{self.name}.db")
        else:
            self.sink = lesson.table(self.name)
        self.checkpoint_root = lesson.checkpoint(self.name)
        self.produced: list[dict] = []
        self.crashes: list[Crash] = []
        self.starts = 0
        self._proc: subprocess.Popen | None = None
        self._new_query = False
        self._started_at = 0.0
        self.run_dir.mkdir(parents=True, exist_ok=True)
        lesson.track(self)
        lesson.on_cleanup(self.stop)

    def __repr__(self) -> str:
        return f"<Pipeline {self.status_line()}>"

    # ---- where things are --------------------------------------------------
    def checkpoint_of(self, run: int) -> str:
        """The checkpoint run number ``run`` used (at-most-once takes a new one at every start)."""
        if self.variant.fresh_checkpoint_each_start:
            return f"{self.checkpoint_root}/start-{max(run, 1)}"
        return self.checkpoint_root

    @property
    def checkpoint(self) -> str:
        """The current checkpoint."""
        return self.checkpoint_of(self.starts)

    @property
    def crash_file(self) -> Path:
        return self.run_dir / "crash"

    # ---- process control ---------------------------------------------------
    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def isActive(self) -> bool:  # so lesson.cleanup() treats it like a query
        return self.running

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def start(self, wait: bool = True) -> "Pipeline":
        """Start the driver process; with ``wait``, return once its query runs and has fixed its start offsets."""
        if self.running:
            raise CourseError(f"Pipeline {self.name!r} is already running (pid {self._proc.pid}). "
                              "Crash it or call .stop() before starting it again.")
        from .orders import ensure_topic

        ensure_topic(self.lesson.bootstrap, self.topic)
        self.starts += 1
        for stale in ("stop", "error.txt", "crash", "crash.fired"):
            (self.run_dir / stale).unlink(missing_ok=True)
        spec = {
            "variant": self.variant.name, "run": self.starts, "topic": self.topic,
            "bootstrap": self.lesson.bootstrap, "sink": self.sink, "checkpoint": self.checkpoint,
            "app_id": f"{self.lesson.topic_prefix}{self.name}", "max_per_batch": self.max_per_batch,
        }
        (self.run_dir / "spec.json").write_text(json.dumps(spec, indent=1))
        log = open(self.run_dir / "driver.log", "ab")
        log.write(f"===== run {self.starts} =====\n".encode())
        log.flush()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # A driver's JVM lives for a few small batches: the quick JIT tier starts it faster.
        env["JAVA_TOOL_OPTIONS"] = f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} {DRIVER_JAVA_OPTIONS}".strip()
        # A session of its own: the driver leads a process group that holds its JVM too,
        # so one killpg stops both (and never reaches the notebook).
        # a new query's first batch (batch 0) always runs, even with no data; see _wait_ready
        self._new_query = not (Path(self.checkpoint) / "offsets").exists()
        self._started_at = time.time()
        self._proc = subprocess.Popen([sys.executable, "-m", "deliverylab.driver", str(self.run_dir)],
                                      stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      env=env, start_new_session=True)
        log.close()
        if wait:
            self._wait_ready()
        return self

    def restart(self, wait: bool = True) -> "Pipeline":
        """Start again after a crash or a stop, from the same checkpoint (at-most-once: a new one)."""
        if self.running:
            raise CourseError(f"Pipeline {self.name!r} is running; there is nothing to restart. "
                              "Crash it first (e.g. .crash('after_sink_write')) or .stop() it.")
        if self.starts == 0:
            raise CourseError(f"Pipeline {self.name!r} was never started; call .start() first.")
        return self.start(wait=wait)

    def _events(self, kind: str, run: int | None = None) -> list[dict]:
        f = self.run_dir / "progress.jsonl"
        if not f.exists():
            return []
        events = []
        for line in f.read_text().splitlines():
            try:
                e = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a SIGKILL
                continue
            if e.get("event") == kind and (run is None or e.get("run") == run):
                events.append(e)
        return events

    def _progress_events(self, run: int | None = None) -> list[dict]:
        return self._events("progress", run)

    def _wait_ready(self) -> None:
        """Wait for this run's query to start and for its source to have fixed where it starts.

        A new query (an empty checkpoint) is ready once its batch 0 is committed: before that,
        the id of the next batch is not settled, and a crash armed for it could land on the
        empty batch 0 instead of the batch that carries the next orders.
        """
        ready_marker = Path(self.checkpoint) / ("commits/0" if self._new_query else "sources/0/0")
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            self._raise_if_failed()
            if not self.running:
                raise CourseError(f"Pipeline {self.name!r} died while starting (exit {self._proc.returncode}).")
            if self._progress_events(run=self.starts) or (
                    ready_marker.exists() and self._events("started", run=self.starts)):
                return
            time.sleep(0.1)
        raise CourseError(f"Pipeline {self.name!r} did not start within {READY_TIMEOUT_S} s. "
                          f"Its log: {self.lesson.show_path(self.run_dir / 'driver.log')}")

    def _raise_if_failed(self) -> None:
        if self._proc is None or self._proc.poll() is None:
            return
        if self._proc.returncode in (0, -signal.SIGKILL):
            return
        raise CourseError(f"Pipeline {self.name!r} stopped with an error (exit {self._proc.returncode}):\n"
                          + self.error_tail())

    def error_tail(self, lines: int = 8) -> str:
        """The last lines of the driver's error (or of its log when it left no error)."""
        from .config import settings

        root = f"{settings().root}/"
        for name in ("error.txt", "driver.log"):
            f = self.run_dir / name
            if f.exists() and f.stat().st_size:
                text = [ln.replace(root, "") for ln in f.read_text(errors="replace").splitlines() if ln.strip()]
                return "\n".join(text[-lines:])
        return "(no error recorded)"

    def stop(self) -> None:
        """Ask the driver to stop its query cleanly, and wait for it."""
        if not self.running:
            return
        (self.run_dir / "stop").touch()
        try:
            self._proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            crashpoints.kill_driver(self._proc.pid)
            self._proc.wait()

    # ---- data ----------------------------------------------------------------
    def produce(self, n: int, progress: bool = False) -> list[dict]:
        """Write the next ``n`` orders (numbered after those already produced) to the pipeline's topic."""
        from .orders import produce_orders

        orders = produce_orders(self.lesson.bootstrap, self.topic, n, seed=self.seed,
                                start=len(self.produced), progress=progress)
        self.produced.extend(orders)
        return orders

    def _topic_end_offsets(self) -> dict[str, int]:
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=self.lesson.bootstrap, enable_auto_commit=False)
        try:
            parts = consumer.partitions_for_topic(self.topic) or set()
            ends = consumer.end_offsets([TopicPartition(self.topic, p) for p in parts])
            return {str(tp.partition): off for tp, off in ends.items()}
        finally:
            consumer.close()

    def committed_offsets(self) -> dict[int, int]:
        """Kafka partition -> offset up to which the current checkpoint has finished its batches.

        The end of the last batch with a commits file; before any batch, where the source
        started (``sources/0/0``): an at-most-once query starting at the latest offsets has
        nothing to do for orders older than that.
        """
        ckpt = Path(self.checkpoint)
        done = dict(_topic_offsets(ckpt / "sources" / "0" / "0", self.topic) or {})
        _, commits = self.batch_ids()
        if commits:
            for p, off in (_topic_offsets(ckpt / "offsets" / str(max(commits)), self.topic) or {}).items():
                done[p] = max(off, done.get(p, 0))
        return done

    def _wait_for_progress_record(self, grace_s: float = 5.0) -> None:
        """commits/N is written a moment before the listener records batch N's progress; wait
        (briefly) for that record so batches() is complete when drain() returns. A batch whose
        driver died right after its commit never gets one, hence the bounded wait."""
        _, commits = self.batch_ids()
        if not commits:
            return
        last = max(commits)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if any(e["batch"] == last for e in self._progress_events(run=self.starts)):
                return
            if any(e["batch"] == last for e in self._progress_events()) and not self._new_run_batch(last):
                return
            time.sleep(0.05)

    def _new_run_batch(self, batch: int) -> bool:
        """Whether ``batch`` was (re)planned by the current run (its offsets file is newer than the start)."""
        f = Path(self.checkpoint) / "offsets" / str(batch)
        return f.exists() and f.stat().st_mtime >= self._started_at

    def drain(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Wait until the running driver has committed batches covering everything in its topic so far."""
        target = self._topic_end_offsets()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._raise_if_failed()
            if not self.running:
                raise CourseError(f"Pipeline {self.name!r} is not running, so it cannot drain. "
                                  "Restart it first (.restart()).")
            done = self.committed_offsets()
            if all(done.get(int(p), -1) >= off for p, off in target.items()):
                self._wait_for_progress_record()
                return
            time.sleep(0.1)
        raise CourseError(f"Pipeline {self.name!r} did not catch up with its topic within {timeout_s:.0f} s.")

    # ---- batches -------------------------------------------------------------
    def batch_ids(self, run: int | None = None) -> tuple[set[int], set[int]]:
        """Batch ids with an offsets file and with a commits file in a run's checkpoint (default: current)."""
        ckpt = Path(self.checkpoint_of(self.starts if run is None else run))
        return _batch_ids(ckpt / "offsets"), _batch_ids(ckpt / "commits")

    def next_batch_id(self) -> int:
        """The id the current checkpoint gives the next new batch."""
        offsets, _ = self.batch_ids()
        return max(offsets) + 1 if offsets else 0

    def batch_range(self, batch: int, run: int | None = None) -> dict[int, tuple[int, int]]:
        """Kafka partition -> (start, end) offsets of one planned batch, read from the checkpoint."""
        ckpt = Path(self.checkpoint_of(self.starts if run is None else run))
        end = _topic_offsets(ckpt / "offsets" / str(batch), self.topic)
        if end is None:
            raise CourseError(f"batch {batch} has no offsets file in {self.lesson.show_path(ckpt)}.")
        start = (_topic_offsets(ckpt / "offsets" / str(batch - 1), self.topic) if batch > 0
                 else _topic_offsets(ckpt / "sources" / "0" / "0", self.topic)) or {}
        return {p: (start.get(p, 0), e) for p, e in sorted(end.items())}

    def batch_rows(self, batch: int, run: int | None = None) -> int:
        """How many records a planned batch covers (from its offset range)."""
        return sum(e - s for s, e in self.batch_range(batch, run).values())

    def batch_orders(self, batch: int, run: int | None = None) -> list[str]:
        """The order ids a planned batch covers, read back from Kafka through its offset range."""
        from kafka import KafkaConsumer, TopicPartition

        ranges = {p: r for p, r in self.batch_range(batch, run).items() if r[1] > r[0]}
        consumer = KafkaConsumer(bootstrap_servers=self.lesson.bootstrap, enable_auto_commit=False,
                                 group_id=None, consumer_timeout_ms=10_000)
        ids = []
        try:
            tps = {TopicPartition(self.topic, p): r for p, r in ranges.items()}
            consumer.assign(list(tps))
            for tp, (s, _) in tps.items():
                consumer.seek(tp, s)
            remaining = dict(tps)
            deadline = time.monotonic() + 30
            while remaining and time.monotonic() < deadline:
                for tp, records in consumer.poll(timeout_ms=500).items():
                    for rec in records:
                        if rec.offset < tps[tp][1]:
                            ids.append(json.loads(rec.value)["order_id"])
                for tp in list(remaining):
                    if consumer.position(tp) >= tps[tp][1]:
                        del remaining[tp]
        finally:
            consumer.close()
        return sorted(ids)

    def batches(self) -> list[dict]:
        """Every attempt of a micro-batch that processed rows, in order, over every run.

        Each is ``{"run", "batch_id", "rows", "replay", "crashed"}``. ``replay`` is True when
        an earlier run had already started that batch in the same checkpoint and crashed
        before commits/N: the restart runs it again with the same offsets. A crashed attempt
        is listed (``crashed=True``) when the crash left its rows in the sink's hands:
        ``after_sink_write`` and ``after_commit`` (rows from its offset range). A
        ``before_sink_write`` attempt wrote nothing, and a ``mid_sink_write`` attempt an
        unknown part, so those are not listed. ``rows`` counts the batch's input rows: on
        an idempotent sink a replay processes them but does not add them again.
        """
        fresh = self.variant.fresh_checkpoint_each_start
        crashes = {(c.run, c.batch): c for c in self.crashes if c.batch is not None}
        started: set[tuple[str, int]] = set()   # (checkpoint, batch) attempts seen so far
        out: list[dict] = []

        def add(run: int, batch: int, rows: int, crashed: bool) -> None:
            key = (self.checkpoint_of(run), batch)
            replay = not fresh and key in started
            out.append({"run": run, "batch_id": batch, "rows": rows, "replay": replay, "crashed": crashed})
            started.add(key)

        for run in range(1, self.starts + 1):
            reported = set()
            for e in self._progress_events(run=run):
                if e["rows"] and e["batch"] not in reported:
                    reported.add(e["batch"])
                    add(run, e["batch"], e["rows"], False)
            for (crun, batch), crash in sorted(crashes.items(), key=lambda kv: kv[0]):
                if crun != run or batch in reported:
                    continue
                # the crashed attempt started this batch, whatever it got to write
                key = (self.checkpoint_of(run), batch)
                if crash.point in ("after_sink_write", "after_commit"):
                    try:
                        rows = self.batch_rows(batch, run)
                    except CourseError:
                        rows = 0
                    if rows:
                        add(run, batch, rows, True)
                        continue
                started.add(key)
        return out

    def crash_marks(self) -> list[dict]:
        """The crashes as ``{"batch_id", "point"}`` for charts.batch_timeline (crashes with a batch)."""
        return [{"batch_id": c.batch, "point": c.point} for c in self.crashes if c.batch is not None]

    # ---- crashes -------------------------------------------------------------
    def arm(self, point: str, batch: int | None = None) -> None:
        """Arm a crash at ``point`` for batch ``batch`` (None: the next batch to get there)."""
        crashpoints.arm(self.crash_file, point, batch)

    def crash(self, point: str, batch: int | None = None, orders: int = 500) -> Crash:
        """Crash the driver at ``point`` and return what happened.

        The crash is armed for ``batch`` (None: the next batch that reaches the point),
        then ``orders`` fresh orders are produced so that a batch runs, and the call waits
        for the driver to die. ``point="now"`` kills the driver and its JVM at once,
        wherever they are; its ``batch`` is the batch left planned but uncommitted, if any.
        """
        crashpoints.check_point(point, allow_now=True)
        if not self.running:
            raise CourseError(f"Pipeline {self.name!r} is not running; start or restart it before crashing it.")
        if point == crashpoints.CRASH_NOW:
            crashpoints.kill_driver(self._proc.pid)
            self._proc.wait()
            offsets, commits = self.batch_ids()
            open_batches = sorted(offsets - commits)
            crash = Crash(point, open_batches[-1] if open_batches else None, self._proc.returncode, self.starts)
        else:
            self.arm(point, batch)
            if orders:
                self.produce(orders)
            crash = self.wait_for_crash(point)
        self.crashes.append(crash)
        return crash

    def wait_for_crash(self, point: str = "", timeout_s: float = CRASH_TIMEOUT_S) -> Crash:
        """Wait for the armed crash to fire; a CourseError if it does not within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while self._proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if self._proc.poll() is None:
            crashpoints.disarm(self.crash_file)
            raise CourseError(f"No batch reached {point or 'the armed point'} within {timeout_s:.0f} s, so the "
                              "driver is still running and the crash was disarmed. Produce some orders and try again.")
        fired = crashpoints.fired(self.crash_file)
        if fired is None:
            self._raise_if_failed()
            raise CourseError(f"Pipeline {self.name!r} exited ({self._proc.returncode}) without the crash firing.")
        return Crash(fired[0], fired[1], self._proc.returncode, self.starts)

    # ---- what reached the sink ----------------------------------------------
    def delivered(self, spark=None) -> list[tuple]:
        """(order_id, amount) of every row in the sink, duplicates included, as its readers see it."""
        from . import ledger

        if self.sink_kind == "sqlite":
            return ledger.read_sqlite(self.sink, "orders") if Path(self.sink).exists() else []
        if self.sink_kind == "kafka":
            from .orders import ensure_topic

            ensure_topic(self.lesson.bootstrap, self.sink)
            return ledger.read_kafka_topic(self.lesson.bootstrap, self.sink)
        if not _has_data(Path(self.sink), self.sink_kind):
            return []
        from .session import get_spark

        spark = spark or get_spark()
        if self.sink_kind == "delta":
            return ledger.read_delta(spark, self.sink)
        return ledger.read_parquet(spark, self.sink)

    def ledger(self, spark=None):
        """Reconcile every produced order with the sink: lost, duplicated, revenue, verdict."""
        from . import ledger

        return ledger.reconcile(self.produced, self.delivered(spark), label=self.name)

    def sink_files(self) -> dict:
        """Data files in the sink: those its readers see, and leftovers of attempts that never committed.

        ``{"committed": n, "leftovers": [relative paths], "note": text}``. Leftovers are
        files on disk that no commit published: Parquet under ``_temporary`` (a job that
        never committed), files missing from ``_spark_metadata`` (file sink) or from every
        Delta commit, a SQLite ``-journal`` (a transaction that never committed).
        """
        sink = Path(self.sink)
        if self.sink_kind == "kafka":
            return {"committed": None, "leftovers": [], "note": "a Kafka topic keeps every record it was sent"}
        if self.sink_kind == "sqlite":
            journal = Path(f"{sink}-journal")
            left = [journal.name] if journal.exists() and journal.stat().st_size else []
            return {"committed": None, "leftovers": left,
                    "note": "a hot journal is rolled back the next time the database is opened" if left else ""}
        if not sink.is_dir():
            return {"committed": 0, "leftovers": [], "note": ""}
        data = sorted(p.relative_to(sink).as_posix() for p in sink.rglob("*.parquet")
                      if not p.name.startswith(".") and "_delta_log" not in p.parts)
        if self.sink_kind == "delta":
            from . import inspector

            left = inspector.orphan_files(sink)
            return {"committed": len(data) - len(left), "leftovers": left,
                    "note": "in no Delta commit: no Delta reader sees them" if left else ""}
        if self.sink_kind == "parquet-log":
            listed = _file_sink_log_files(sink)
            left = [f for f in data if f not in listed]
            return {"committed": len(data) - len(left), "leftovers": left,
                    "note": "not in _spark_metadata: hidden from Spark, visible to a plain folder listing" if left else ""}
        left = [f for f in data if f.startswith("_temporary/")]
        return {"committed": len(data) - len(left), "leftovers": left,
                "note": "under _temporary: a write job that never committed" if left else ""}

    # ---- status ----------------------------------------------------------------
    def status(self, rows: bool = False) -> dict:
        """Running or crashed, last batch id, whether offsets/N and commits/N exist; with ``rows``, rows in the sink."""
        offsets, commits = self.batch_ids()
        last = max(offsets) if offsets else None
        if self.running:
            state = "running"
        elif self._proc is None:
            state = "not started"
        elif self._proc.returncode == -signal.SIGKILL:
            state = "crashed (SIGKILL)"
        elif self._proc.returncode == 0:
            state = "stopped"
        else:
            state = f"failed (exit {self._proc.returncode})"
        failed = state.startswith("failed")
        return {
            "pipeline": self.name, "state": state, "run": self.starts, "last_batch": last,
            "offsets_written": last is not None, "commit_written": last in commits if last is not None else False,
            "crashes": len(self.crashes), "last_crash": self.crashes[-1].line() if self.crashes else None,
            "rows_in_sink": len(self.delivered()) if rows else None,
            "error": self.error_tail() if failed else None,
        }

    def status_line(self, rows: bool = False) -> str:
        """One line (plus the error's last lines if the driver failed), e.g.
        ``at_least_once: crashed (SIGKILL), last batch 3: offsets/3 written, commits/3 missing``."""
        st = self.status(rows=rows)
        if st["last_batch"] is None:
            line = f"{st['pipeline']}: {st['state']}, no batch yet"
        else:
            n = st["last_batch"]
            line = (f"{st['pipeline']}: {st['state']}, last batch {n}: offsets/{n} written, "
                    f"commits/{n} {'written' if st['commit_written'] else 'missing'}")
        if st["rows_in_sink"] is not None:
            line += f", {st['rows_in_sink']} rows in sink"
        return line + (f"\n{st['error']}" if st["error"] else "")


def _batch_ids(folder: Path) -> set[int]:
    if not folder.exists():
        return set()
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()}


def _topic_offsets(path: Path, topic: str) -> dict[int, int] | None:
    """``{partition: offset}`` for ``topic`` from a checkpoint offsets (or sources) file."""
    if not path.is_file():
        return None
    for line in path.read_bytes().decode("utf-8", errors="replace").splitlines():
        line = line.strip("\x00 \t")
        if not line.startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get(topic), dict):
            return {int(p): int(o) for p, o in doc[topic].items()}
    return None


def _has_data(path: Path, kind: str) -> bool:
    """Is there anything a reader of this sink could read yet?"""
    if kind == "delta":
        return (path / "_delta_log").is_dir()
    if kind == "parquet-log" and (path / "_spark_metadata").is_dir():
        return True
    return path.is_dir() and any(p.suffix == ".parquet" and not p.name.startswith((".", "_")) for p in path.iterdir())


def _file_sink_log_files(sink: Path) -> set[str]:
    """Files the file sink's ``_spark_metadata`` log lists, relative to the sink folder."""
    from urllib.parse import unquote, urlparse

    log = sink / "_spark_metadata"
    listed = set()
    if not log.is_dir():
        return listed
    for f in log.iterdir():
        if f.name.startswith(".") or not (f.name.isdigit() or f.name.endswith(".compact")):
            continue
        for line in f.read_text(errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            try:
                path = json.loads(line).get("path", "")
            except json.JSONDecodeError:
                continue
            local = Path(unquote(urlparse(path).path))
            try:
                listed.add(local.relative_to(sink.resolve()).as_posix())
            except ValueError:
                listed.add(local.name)
    return listed
