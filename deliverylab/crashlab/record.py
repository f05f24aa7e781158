"""What a pipeline did and what it left: its checkpoint, its batches, its sink, its status.

The reading half of a crash-lab pipeline (``Pipeline`` in pipeline.py adds the driver
process: start, crash, restart, drain). Everything here is read back from files: the
checkpoint, the progress events the drivers recorded, and the sink itself.
"""
from __future__ import annotations

import json
import re
import time
from contextlib import contextmanager
from pathlib import Path

from .. import checkpoint
from ..config import CourseError
from ..stack import kafka, processes
from . import attempts

#: What a pipeline whose query ignores out.checkpoint is told (see runs_without_its_checkpoint).
CHECKPOINT_UNUSED = ("Pipeline {name!r} runs batches but writes nothing to its checkpoint folder (out.checkpoint). "
                     "Start its query with .option(\"checkpointLocation\", out.checkpoint), or it cannot be "
                     "restarted where it stopped.")


def failure_line(message: str) -> str:
    """One line from a failed pipeline's message (a CourseError's text): the exception a learner's code
    raised, else the first line."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    raised = [ln for ln in lines if _EXCEPTION_LINE.match(ln)]
    python = [ln for ln in raised if not ln.startswith(_JVM_PACKAGES)]  # the learner's code is Python
    line = (python or raised)[-1] if raised else lines[0] if lines else "no message"
    return line.removeprefix("deliverylab.config.CourseError: ")[:300]  # the course's own words need no class


@contextmanager
def failure_kept(pipe):
    """Around the steps a lesson runs on a learner's own pipeline function: a CourseError (the learner's code
    raised, Spark refused the query, the query ignored its checkpoint) ends the steps and its one line is kept
    in ``pipe.failure``, for the lab's checks to turn into a FAIL with a hint. For a course variant it is raised."""
    try:
        yield pipe
    except CourseError as err:
        if not pipe.runs_learner_code:
            raise
        pipe.failure = failure_line(str(err))


#: "sqlite3.IntegrityError: UNIQUE constraint failed", "NameError: name 'x' is not defined", ...
_JVM_PACKAGES = ("org.", "java.", "scala.", "py4j.", "io.delta.")
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception)\b: ")


class PipelineRecord:
    """Set up by ``Pipeline.__init__``: lesson, variant, name, topic, folder, sink, output,
    checkpoint_root, produced, crashes, starts, driver."""

    @property
    def runs_learner_code(self) -> bool:
        """Is the variant a learner's own pipeline function (not one of the course's)?"""
        return self._code is not None

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

    def _events(self, kind: str, run: int | None = None) -> list[dict]:
        return [e for e in processes.read_jsonl(self.folder.progress)
                if e.get("event") == kind and (run is None or e.get("run") == run)]

    def progress(self, run: int | None = None) -> list[dict]:
        """The progress records (one per micro-batch) of one run, or of every run."""
        return self._events("progress", run)

    def runs_without_its_checkpoint(self) -> bool:
        """A query that ran a batch of rows wrote offsets/N first. If the checkpoint the pipeline gave it
        (out.checkpoint) has none, the query keeps its place elsewhere, and no catch-up can be seen."""
        return (any(p.get("rows") for p in self.progress(run=self.starts))
                and not checkpoint.batch_ids(self.checkpoint)[0])

    def committed_offsets(self) -> dict[int, int]:
        """Kafka partition -> offset up to which the current checkpoint has finished its batches."""
        return checkpoint.done_offsets(self.checkpoint, self.topic)

    # ---- batches -------------------------------------------------------------
    def batch_ids(self, run: int | None = None) -> tuple[set[int], set[int]]:
        """Batch ids with an offsets file and with a commits file in a run's checkpoint (default: current)."""
        return checkpoint.batch_ids(self.checkpoint_of(self.starts if run is None else run))

    def next_batch_id(self) -> int:
        """The id the current checkpoint gives the next new batch."""
        return checkpoint.next_batch_id(self.checkpoint)

    def batch_range(self, batch: int, run: int | None = None) -> dict[int, tuple[int, int]]:
        """Kafka partition -> (start, end) offsets of one planned batch, read from the checkpoint."""
        ckpt = self.checkpoint_of(self.starts if run is None else run)
        found = checkpoint.batch_range(ckpt, batch, self.topic)
        if found is None:
            raise CourseError(f"batch {batch} has no offsets file in {self.lesson.show_path(ckpt)}.")
        return found

    def batch_rows(self, batch: int, run: int | None = None) -> int:
        """How many records a planned batch covers (from its offset range)."""
        return sum(e - s for s, e in self.batch_range(batch, run).values())

    def batch_orders(self, batch: int, run: int | None = None) -> list[str]:
        """The order ids a planned batch covers, read back from Kafka through its offset range."""
        records = kafka.read_range(self.lesson.bootstrap, self.topic, self.batch_range(batch, run))
        return sorted(json.loads(r.value)["order_id"] for r in records)

    def batches(self) -> list[dict]:
        """Every attempt of a micro-batch that processed rows, over every run (see attempts.py)."""
        def rows_of(batch: int, run: int) -> int:
            try:
                return self.batch_rows(batch, run)
            except CourseError:
                return 0

        progress = {run: self.progress(run=run) for run in range(1, self.starts + 1)}
        crashes = [(c.run, c.batch, c.point) for c in self.crashes if c.batch is not None]
        return attempts.batch_attempts(self.starts, progress, crashes, self.checkpoint_of, rows_of,
                                       self.variant.fresh_checkpoint_each_start)

    def crash_marks(self) -> list[dict]:
        """The crashes as ``{"batch_id", "point"}`` for charts.batch_timeline (crashes with a batch)."""
        return [{"batch_id": c.batch, "point": c.point} for c in self.crashes if c.batch is not None]

    # ---- what reached the sink ----------------------------------------------
    def delivered(self, spark=None) -> list[tuple]:
        """(order_id, amount) of every row in the sink, duplicates included, as its readers see it."""
        return self.output.rows(spark)

    def ledger(self, spark=None):
        """Reconcile every produced order with the sink: lost, duplicated, revenue, verdict."""
        from .. import ledger

        return ledger.reconcile(self.produced, self.delivered(spark), label=self.name)

    def sink_files(self) -> dict:
        """Data files in the sink: those its readers see, and leftovers of attempts that never committed.

        ``{"committed": n, "leftovers": [relative paths], "note": text}`` (see sinks.py).
        """
        return self.output.files()

    # ---- waiting for the record of a batch ------------------------------------
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
            if any(e["batch"] == last for e in self.progress(run=self.starts)):
                return
            if any(e["batch"] == last for e in self.progress()) and not self._new_run_batch(last):
                return
            time.sleep(0.05)

    def _new_run_batch(self, batch: int) -> bool:
        """Whether ``batch`` was (re)planned by the current run (its offsets file is newer than the start)."""
        f = Path(self.checkpoint) / "offsets" / str(batch)
        return f.exists() and f.stat().st_mtime >= self._started_at

    # ---- status ----------------------------------------------------------------
    def status(self, rows: bool = False) -> dict:
        """Running or crashed, last batch id, whether offsets/N and commits/N exist; with ``rows``, rows in the sink."""
        offsets, commits = self.batch_ids()
        last = max(offsets) if offsets else None
        code = self.returncode
        if self.running:
            state = "running"
        elif self.driver is None:
            state = "not started"
        elif processes.killed_by_sigkill(code):
            state = "crashed (SIGKILL)"
        elif code == 0:
            state = "stopped"
        else:
            state = f"failed (exit {code})"
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
