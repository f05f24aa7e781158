"""Run a pipeline in its own driver process, crash it at a named moment, restart it, count.

    pipe = crashlab.Pipeline(lesson, "at_least_once").start()
    pipe.produce(1000); pipe.drain()
    pipe.crash("after_sink_write")        # sends fresh orders so a batch runs, and dies there
    pipe.restart(); pipe.drain()
    print(pipe.ledger().verdict_line())

Every restart is a new driver process (see drivers.py), in a process group of its own: a
crash SIGKILLs the Python driver and its JVM together, a process crash (the machine and its
page cache live on), while the notebook keeps running. A pipeline's first start may take a
driver that ran another pipeline of the lesson and was stopped cleanly (its JVM is warm), never
one that touched this pipeline's checkpoint or sink. The pipeline
remembers every order it produced, so the ledger can reconcile what went into Kafka with
what reached the sink.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import statusline
from ..todos import raise_if_todo
from ..config import CourseError
from ..stack import idlesession, kafka, processes
from . import crashpoints, drivers, sinks, variants
from .files import PipelineFolder
from .record import CHECKPOINT_UNUSED, PipelineRecord

READY_TIMEOUT_S = 90
CRASH_TIMEOUT_S = 120
DRAIN_TIMEOUT_S = 120


@dataclass(frozen=True)
class Crash:
    """What happened at one crash: where, in which batch of which run, and how the driver died."""
    point: str
    batch: int | None
    returncode: int
    run: int = 0

    @property
    def by_sigkill(self) -> bool:
        return processes.killed_by_sigkill(self.returncode)

    @property
    def replayed(self) -> bool:
        """Did the crash leave batch N planned but uncommitted, so a restart runs it again?"""
        return self.point in crashpoints.REPLAYED_POINTS

    def line(self) -> str:
        how = "SIGKILL" if self.by_sigkill else f"exit code {self.returncode}"
        if self.point == crashpoints.CRASH_NOW:
            where = f"while batch {self.batch} was in flight" if self.batch is not None else "between batches"
            return f"driver killed at a random moment ('now'), {where} ({how})"
        return f"driver killed at {self.point} in batch {self.batch} ({how})"

    def to_dict(self) -> dict:
        return {**asdict(self), "by_sigkill": self.by_sigkill}


SECOND_DRIVER = ("Pipeline {name!r} is already running in this lesson (driver pid {holder}), started by another "
                 "Pipeline object, perhaps by running its cell twice. Two drivers must never share one checkpoint. "
                 "Stop it first: lesson.cleanup() stops every pipeline of the lesson (or call .stop() on the "
                 "Pipeline you created first), then create this one again.")


class Pipeline(PipelineRecord):
    """One pipeline variant of a lesson, with its topic, sink, checkpoint and driver process."""

    def __init__(self, lesson, variant, name: str | None = None, topic: str | None = None,
                 max_per_batch: int | None = 500, seed: int = 7, options: dict | None = None,
                 sink: str = "delta", crash_points: tuple = ()):
        """``variant``: a name from variants.VARIANTS, or your own function ``(orders, out) -> query``
        (then ``sink`` says what it writes to, and ``crash_points`` names its own crash points)."""
        self.lesson = lesson
        self._code = None
        if callable(variant):
            raise_if_todo(variant)  # an unfinished lab pipeline: its one line now, not from a driver
            self.variant = variants.custom(variant, sink_kind=sink, crash_points=crash_points)
            self._code = variants.custom_source(variant)
        else:
            self.variant = variants.variant(variant)
        self.python = drivers.python_for(self.variant)  # an Iceberg pipeline on the main kernel: the Iceberg venv's
        self.name = name or self.variant.name
        # a topic per pipeline: each numbers its orders from 0, so two must never share one
        self.topic = lesson.topic(topic or f"{self.name}-orders")
        self.max_per_batch = max_per_batch
        self.seed = seed
        self.options = dict(options or {})  # passed to the variant as out.options
        self.folder = PipelineFolder(Path(lesson.path("pipelines", self.name)))
        self.run_dir = self.folder.path
        self.sink_kind = self.variant.sink_kind
        sink_class = sinks.SINKS[self.sink_kind]
        self.sink = sink_class.location_for(lesson, self.name)
        self.output = sink_class(self.sink, lesson.bootstrap)
        self.output.pipeline = self  # a memory sink is read through the running driver
        self.checkpoint_root = lesson.checkpoint(self.name)
        self.app_id = f"{lesson.topic_prefix}{self.name}"  # out.app_id: a new checkpoint may call for a new one
        self.produced: list[dict] = []
        self.crashes: list[Crash] = []
        self.failure: str | None = None  # a learner's pipeline that failed: why, in one line (set by labs)
        self.starts = 0
        self.driver: drivers.Driver | None = None
        self._handed_back = False  # stopped cleanly, its driver now waits for another pipeline
        self._new_query = False
        self._started_at = 0.0
        self._listeners: list = []
        self.in_a_panel = False  # a CrashPanel shows it: it keeps running after the lesson's last cell
        self._released = ""  # why it was stopped to free memory (lesson.complete(), an idle kernel): the next move starts it
        self.run_dir.mkdir(parents=True, exist_ok=True)
        lesson.track(self)
        lesson.on_cleanup(self.stop)
        # at lesson.complete(), a pipeline no crash panel shows has done its part: its driver ends
        lesson.on_complete(lambda: None if self.in_a_panel else _free(self, "at the lesson's end"))
        idlesession.on_release(self._release_when_idle)

    def __repr__(self) -> str:
        return f"<Pipeline {self.status_line()}>"

    # ---- process control ---------------------------------------------------
    @property
    def running(self) -> bool:
        return self.driver is not None and not self._handed_back and self.driver.running

    @property
    def isActive(self) -> bool:  # so lesson.cleanup() treats it like a query
        return self.running

    @property
    def pid(self) -> int | None:  # None once stopped: its driver may run another pipeline now
        return self.driver.pid if self.driver is not None and not self._handed_back else None

    @property
    def returncode(self) -> int | None:
        if self._handed_back:  # stopped cleanly; the process went on to wait for another pipeline
            return 0
        return None if self.driver is None else self.driver.returncode

    def on_change(self, callback) -> None:
        """Call ``callback(rows=...)`` after every start, crash, stop and drain (the crash panel refreshes
        itself); ``rows=False`` after a drain: a listener should not read the sink for it."""
        self._listeners.append(callback)

    def _changed(self, rows: bool = True) -> None:
        for callback in self._listeners:
            callback(rows=rows)

    def _refuse_second_driver(self) -> None:
        holder = self.folder.holder()
        if holder is not None:
            raise CourseError(SECOND_DRIVER.format(name=self.name, holder=holder))

    def start(self, wait: bool = True) -> "Pipeline":
        """Start a driver on the pipeline; with ``wait``, return once its query runs and has fixed its start offsets."""
        if self.running:
            raise CourseError(f"Pipeline {self.name!r} is already running (pid {self.pid}). "
                              "Crash it or call .stop() before starting it again.")
        self._refuse_second_driver()
        kafka.ensure_topic(self.lesson.bootstrap, self.topic)
        self.starts += 1
        spec = {
            "name": self.name, "variant": self.variant.name, "run": self.starts, "topic": self.topic,
            "bootstrap": self.lesson.bootstrap, "sink": self.sink, "checkpoint": self.checkpoint,
            "app_id": self.app_id, "max_per_batch": self.max_per_batch,
            "folder": str(self.run_dir), "options": self.options,
        }
        if self._code is not None:  # a learner's own pipeline: the driver imports it from a file
            code = self.run_dir / "pipeline_code.py"
            code.write_text(self._code)
            spec.update(code=str(code), sink_kind=self.sink_kind, guarantee=self.variant.guarantee,
                        crash_points=list(self.variant.crash_points))
        # a new query's first batch (batch 0) always runs, even with no data; see _wait_ready
        self._new_query = not (Path(self.checkpoint) / "offsets").exists()
        self._started_at = time.time()
        statusline.say(f"{self.name}: starting a driver (run {self.starts})")
        touches = {str(self.checkpoint_root), str(self.sink)}  # a first start may take a warm driver
        self.driver = drivers.pool(self.python).take(fresh=self.starts > 1, touches=touches)
        self._handed_back = False
        self.driver.assign(spec, touches)
        processes.append_jsonl(self.folder.runs, {"run": self.starts, "pid": self.driver.pid,
                                                  "home": str(self.driver.home.path)})
        if wait:
            self._wait_ready()
            statusline.say(f"{self.name}: running (run {self.starts})")
        self._changed()
        return self

    def restart(self, wait: bool = True) -> "Pipeline":
        """Start again after a crash or a stop, from the same checkpoint (at-most-once: a new one)."""
        self._released = ""
        if self.running:
            raise CourseError(f"Pipeline {self.name!r} is running; there is nothing to restart. "
                              "Crash it first (e.g. .crash('after_sink_write')) or .stop() it.")
        if self.starts == 0:
            raise CourseError(f"Pipeline {self.name!r} was never started; call .start() first.")
        return self.start(wait=wait)

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
                raise CourseError(f"Pipeline {self.name!r} died while starting (exit {self.returncode}).")
            if self.progress(run=self.starts) or (ready_marker.exists() and self._events("started", run=self.starts)):
                return
            time.sleep(0.05)
        raise CourseError(f"Pipeline {self.name!r} did not start within {READY_TIMEOUT_S} s. "
                          f"Its log: {self.lesson.show_path(self.driver.home.log)}")

    def _raise_if_failed(self) -> None:
        code = self.returncode
        if code is None or code == 0 or processes.killed_by_sigkill(code):
            return
        tail = self.error_tail()
        if "TODO not done yet" in tail:  # a lab's unfinished pipeline: the same one line as anywhere else
            from ..checks import LabTodo, todo_text

            raise LabTodo(todo_text(tail))
        raise CourseError(f"Pipeline {self.name!r} stopped with an error (exit {code}):\n" + tail)

    def error_tail(self, lines: int = 8) -> str:
        """The last lines of the driver's error (or of its log when it left no error)."""
        return self.driver.error_tail(lines) if self.driver is not None else "(never started)"

    def stop(self) -> None:
        """Ask the driver to stop its query cleanly, and wait for it (it may then serve another pipeline)."""
        if self.running:
            statusline.say(f"{self.name}: stopping its query")
            if self.driver.stop(recycle=True):
                self._handed_back = True
                drivers.pool(self.python).give_back(self.driver)
            self._changed()

    def _release_when_idle(self) -> bool:
        """The kernel was left idle (stack/idlesession.py): stop, in a panel too; the driver ends with the standbys."""
        return _free(self, "while the lesson was left idle")

    def _resume_if_released(self) -> None:
        """A pipeline stopped to free memory restarts from its checkpoint at its next move (nothing lost or repeated)."""
        idlesession.touch()  # a move (a cell's or a panel button's) is activity
        if self._released and not self.running:
            why, self._released = self._released, ""
            statusline.say(f"{self.name}: starting it again (it was stopped {why}, to free memory)")
            self.restart()

    def delete_checkpoint(self) -> None:
        """Delete the pipeline's checkpoint (stopped pipelines only): the next start is a new query."""
        if self.running:
            raise CourseError(f"Pipeline {self.name!r} is running; stop it (or crash it) before deleting its checkpoint.")
        import shutil

        shutil.rmtree(self.checkpoint_root, ignore_errors=True)

    # ---- data ----------------------------------------------------------------
    def produce(self, n: int, progress: bool = False) -> list[dict]:
        """Write the next ``n`` orders (numbered after those already produced) to the pipeline's topic."""
        from ..orders import produce_orders

        self._resume_if_released()  # before the orders, so a latest-offsets restart does not skip them
        orders = produce_orders(self.lesson.bootstrap, self.topic, n, seed=self.seed,
                                start=len(self.produced), progress=progress)
        self.produced.extend(orders)
        return orders

    def send(self, orders: list[dict]) -> list[dict]:
        """Write these orders (dicts with the order fields, e.g. chosen event times) to the pipeline's topic.

        Their ids must be new: they join ``produced``, the truth the ledger reconciles against.
        """
        from ..orders import produce

        self._resume_if_released()
        known = {o["order_id"] for o in self.produced}
        repeated = sorted({o["order_id"] for o in orders} & known)
        if repeated or len({o["order_id"] for o in orders}) != len(orders):
            raise CourseError(f"send() needs order ids not sent before (repeated: {repeated[:5]}). To send a "
                              "duplicate on purpose, write it to the topic yourself: the ledger must keep one truth.")
        produce(self.lesson.bootstrap, self.topic, orders, progress=False)
        self.produced.extend(orders)
        return orders

    def drain(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Wait until the running driver has committed batches covering everything in its topic so far."""
        self._resume_if_released()
        target = kafka.end_offsets(self.lesson.bootstrap, self.topic)
        deadline = time.monotonic() + timeout_s
        said = None
        while time.monotonic() < deadline:
            self._raise_if_failed()
            if not self.running:
                self._raise_if_failed()  # it may have ended, with an error, since the line above
                raise CourseError(f"Pipeline {self.name!r} is not running, so it cannot drain. "
                                  "Restart it first (.restart()).")
            if self.runs_without_its_checkpoint():
                raise CourseError(CHECKPOINT_UNUSED.format(name=self.name))
            done = self.committed_offsets()
            if all(done.get(p, -1) >= off for p, off in target.items()):
                self._wait_for_progress_record()
                self._changed(rows=False)  # the panel's status line shows the drained pipeline, without a Spark read
                return
            behind = sum(max(0, off - done.get(p, 0)) for p, off in target.items())
            if behind != said:
                statusline.say(f"{self.name}: catching up, {behind} records not yet committed")
                said = behind
            time.sleep(0.05)
        raise CourseError(f"Pipeline {self.name!r} did not catch up with its topic within {timeout_s:.0f} s.")

    # ---- crashes -------------------------------------------------------------
    def arm(self, point: str, batch: int | None = None) -> None:
        """Arm a crash at ``point`` for batch ``batch`` (None: the next batch to get there)."""
        self._resume_if_released()
        if not self.running:
            raise CourseError(f"Pipeline {self.name!r} is not running; start or restart it before arming a crash.")
        crashpoints.arm(self.driver.home.crash, point, batch, extra=self.variant.crash_points)
        drivers.pool(self.python).fill()  # the restart's driver boots while the crash is on its way

    def crash(self, point: str, batch: int | None = None, orders: int = 500) -> Crash:
        """Crash the driver at ``point`` and return what happened.

        The crash is armed for ``batch`` (None: the next batch that reaches the point),
        then ``orders`` fresh orders are produced so that a batch runs, and the call waits
        for the driver to die. ``point="now"`` kills the driver and its JVM at once,
        wherever they are; its ``batch`` is the batch left planned but uncommitted, if any.
        """
        crashpoints.check_point(point, allow_now=True, extra=self.variant.crash_points)
        self._resume_if_released()
        if not self.running:
            raise CourseError(f"Pipeline {self.name!r} is not running; start or restart it before crashing it.")
        if point == crashpoints.CRASH_NOW:
            drivers.pool(self.python).fill()  # for the restart that follows
            self.driver.kill()
            offsets, commits = self.batch_ids()
            open_batches = sorted(offsets - commits)
            crash = Crash(point, open_batches[-1] if open_batches else None, self.returncode, self.starts)
        else:
            self.arm(point, batch)
            if orders:
                self.produce(orders)
            statusline.say(f"{self.name}: crash armed at {point}, waiting for a batch to get there")
            crash = self.wait_for_crash(point)
            statusline.say(f"{self.name}: {crash.line()}")
        self.crashes.append(crash)
        self._changed()
        return crash

    def wait_for_crash(self, point: str = "", timeout_s: float = CRASH_TIMEOUT_S) -> Crash:
        """Wait for the armed crash to fire; a CourseError if it does not within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while self.running and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.running:
            crashpoints.disarm(self.driver.home.crash)
            raise CourseError(f"No batch reached {point or 'the armed point'} within {timeout_s:.0f} s, so the "
                              "driver is still running and the crash was disarmed. Produce some orders and try again.")
        fired = crashpoints.fired(self.driver.home.crash)
        if fired is None:
            self._raise_if_failed()
            raise CourseError(f"Pipeline {self.name!r} exited ({self.returncode}) without the crash firing.")
        return Crash(fired[0], fired[1], self.returncode, self.starts)


def _free(pipe: Pipeline, why: str) -> bool:
    """Stop ``pipe`` cleanly to free memory; its next move starts it again (``_resume_if_released``)."""
    if not pipe.running:
        return False
    pipe.stop()
    pipe._released = why
    return True
