"""Named moments of the micro-batch protocol at which the crash lab kills a driver.

All four fire inside the driver's JVM, in the course's small Java hook
(``deliverylab/crashlab/java``), so they happen at exactly the same place every time:

* ``before_sink_write``, ``after_sink_write``, ``after_commit``: Spark's checkpoint writer
  is replaced by ``CrashPointCheckpointFileManager``, which fires once ``offsets/N`` is
  closed, just before ``commits/N`` is created, and once ``commits/N`` is closed. It passes
  over a batch that reads no new records (``offsets/N`` names the offsets of ``offsets/N-1``:
  the no-data batch Spark runs after a batch to move a watermark on), so a crash armed for the
  next batch always hits one with orders in it; armed for batch N, it fires in N or, if N reads
  nothing new, in the first later batch that does.
* ``mid_sink_write``: every crash-lab pipeline filters its input through
  ``MidWriteGate``, a SQL function that keeps every row. A streaming query sets the
  local property ``streaming.sql.batchId`` on every job of a micro-batch (also on the
  jobs ``foreachBatch`` starts), and each task can read it, so the task of partition 1
  knows its batch. (The driver reads Kafka with ``minPartitions=2``, so a batch whose
  records all come from one topic partition is split in two and still has a partition 1.)
  After a few rows it waits until partition 0's task of the same stage has completed
  (an event: in local mode both tasks run in the driver's JVM; at most
  :data:`MID_WRITE_WAIT_CAP_S` should that task pass no row through the gate; on a cluster,
  where partition 0's task runs in another executor, a plain :data:`MID_WRITE_WAIT_S`), then
  fires. So partition 0 of batch N has been written the way that sink writes one task's
  output, and partition 1 never is, however slow the machine is that day. (For MERGE and foreachBatch sinks that read the batch before writing, the
  trap fires while the batch is being read: see the lessons.) A learner's pipeline that
  writes a SQLite database from the driver gets a trap of its own instead, between its row
  writes, whatever shape its writer has (dbwrites.py).

A variant can also name crash points of its own, inside its batch function (for example
between writing the data and writing a marker): it calls :func:`crash_here` there, in
Python, in the driver, and lists the names in its ``crash_points`` (variants.py).

Arming is one line in the run's crash file: ``"<point> <batch>"``, where ``<batch>`` is a
batch id or ``next`` (the next batch that reaches the point). When a crash fires, the hook
writes the point and the real batch id to ``<file>.fired``, removes the armed file (so
the restarted driver runs normally), SIGKILLs the Python driver and halts its JVM.
"""
from __future__ import annotations

import os
import re
import signal
from pathlib import Path

from ..config import CourseError

CRASH_POINTS = {
    "before_sink_write": "offsets/N is written (the batch's offset range is logged); nothing is written to the sink yet",
    "mid_sink_write": "part of batch N is written to the sink; the rest is not",
    "after_sink_write": "the sink has all of batch N; commits/N is not written yet",
    "after_commit": "commits/N is written: batch N is complete",
}
#: "crash now" is not armed: the driver is killed at whatever moment the button is pressed.
CRASH_NOW = "now"

#: Crash points after which the batch is planned but not committed, so a restart re-runs it.
REPLAYED_POINTS = ("before_sink_write", "mid_sink_write", "after_sink_write")

CRASH_FILE_ENV = "DELIVERYLAB_CRASH_FILE"
DRIVER_PID_ENV = "DELIVERYLAB_DRIVER_PID"

#: Spark's internal setting naming the class that writes checkpoint files: the hook replaces it.
CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
CRASH_HOOK_CLASS = "deliverylab.crashhook.CrashPointCheckpointFileManager"
#: The Java class whose register() adds the mid-write gate as a SQL function.
MID_WRITE_GATE_CLASS = "deliverylab.crashhook.MidWriteGate"

#: The SQL function the Java MidWriteGate registers (see driver.py).
MID_WRITE_GATE = "deliverylab_mid_write_gate"
#: The Spark local property a streaming query sets on the jobs of each micro-batch.
BATCH_ID_PROPERTY = "streaming.sql.batchId"
#: Mirrors of MidWriteGate's constants: it fires in the task of partition 1, once it has
#: seen 5 rows and partition 0's task of the same stage has completed (waited for at most 30 s;
#: on a cluster, where that task runs in another JVM, 1.5 s).
MID_WRITE_PARTITION = 1
MID_WRITE_FINISHED_FIRST = 0
MID_WRITE_AFTER_ROWS = 5
MID_WRITE_WAIT_CAP_S = 30
MID_WRITE_WAIT_S = 1.5


#: What a variant's own crash point may be called (it goes into the one-line crash file).
_POINT_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def check_point(point: str, allow_now: bool = False, extra=()) -> str:
    """``point`` if it names a crash point (``extra``: a variant's own; "now" when allowed), else a
    CourseError listing them."""
    valid = list(CRASH_POINTS) + list(extra) + ([CRASH_NOW] if allow_now else [])
    if point not in valid:
        hint = " (\"now\" is not armed: use pipe.crash(\"now\"))" if point == CRASH_NOW else ""
        raise CourseError(f"Unknown crash point {point!r}{hint}. Valid crash points: {', '.join(valid)}.")
    return point


def arming_line(point: str, batch: int | None = None, extra=()) -> str:
    """The crash file's content for ``point`` in ``batch`` (None: the next batch)."""
    check_point(point, extra=extra)
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 0):
        raise CourseError(f"batch must be a batch id (an int >= 0) or None for the next batch, not {batch!r}.")
    return f"{point} {'next' if batch is None else batch}\n"


def parse_arming(text: str) -> tuple[str, str] | None:
    """``(point, batch)`` from a crash file's text, batch being digits or "next"; None if malformed."""
    parts = text.split()
    if len(parts) != 2 or not _POINT_NAME.match(parts[0]) or parts[0] == CRASH_NOW:
        return None
    if parts[1] != "next" and not parts[1].isdigit():
        return None
    return parts[0], parts[1]


def arm(crash_file: str | Path, point: str, batch: int | None = None, extra=()) -> None:
    """Arm ``point`` for batch ``batch`` (None: the next batch that reaches the point)."""
    line = arming_line(point, batch, extra)
    path = Path(crash_file)
    Path(f"{path}.fired").unlink(missing_ok=True)
    tmp = Path(f"{path}.tmp")
    tmp.write_text(line)
    tmp.replace(path)  # atomic: a reader sees the old file or the whole new line


def disarm(crash_file: str | Path) -> None:
    Path(crash_file).unlink(missing_ok=True)


def armed(crash_file: str | Path) -> tuple[str, str] | None:
    """What is armed, as ``(point, batch-or-"next")``, or None."""
    try:
        return parse_arming(Path(crash_file).read_text())
    except OSError:
        return None


def fired(crash_file: str | Path) -> tuple[str, int] | None:
    """The crash that fired in this run, as (point, batch id), or None."""
    try:
        point, batch = Path(f"{crash_file}.fired").read_text().split()
        return point, int(batch)
    except (OSError, ValueError):
        return None


def matches(state: tuple[str, str] | None, point: str, batch: int) -> bool:
    """Does the armed ``state`` ask for a crash at ``point`` in ``batch``?"""
    return state is not None and state[0] == point and state[1] in ("next", str(batch))


def crash_here(point: str, batch_id: int) -> None:
    """Called by a variant inside its batch function, in the driver: if ``point`` is armed for
    this batch, record it as the Java hook does and SIGKILL this driver and its JVM at once."""
    crash_file = os.environ.get(CRASH_FILE_ENV)
    if not crash_file or not matches(armed(crash_file), point, batch_id):
        return
    fired_file = Path(f"{crash_file}.fired")
    tmp = Path(f"{fired_file}.tmp")
    tmp.write_text(f"{point} {batch_id}\n")
    tmp.replace(fired_file)
    disarm(crash_file)
    os.killpg(os.getpgrp(), signal.SIGKILL)  # the driver leads its process group: its JVM dies too


def hook_conf(crash_file: str | Path, driver_pid: int) -> dict[str, str]:
    """The Spark settings of a driver whose checkpoint writer obeys ``crash_file``.

    Executors get the same two variables the driver has, so the mid-write gate works in
    executors of a cluster on the same machine too.
    """
    return {CHECKPOINT_FILE_MANAGER: CRASH_HOOK_CLASS,
            f"spark.executorEnv.{CRASH_FILE_ENV}": str(crash_file),
            f"spark.executorEnv.{DRIVER_PID_ENV}": str(driver_pid)}
