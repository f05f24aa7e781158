"""``mid_sink_write`` for a SQLite database that a learner's ``foreachBatch`` writes from the driver.

The Java mid-write gate (crashpoints.py) fires while Spark computes partition 1 of a batch. A
``foreachBatch`` writer that first brings the batch to the driver (``collect()``,
``toLocalIterator()``) and then writes it row by row has written nothing at that moment, so the
gate would kill it before its first INSERT, and a writer that commits each row on its own would
pass a "crashed in the middle of a batch" check it does not survive.

So a learner's pipeline whose sink is ``"sqlite"`` gets this trap instead of the gate: every
SQLite connection the driver opens reports its statements (``set_trace_callback``, called once
for each row of an ``executemany`` too), and while ``mid_sink_write`` is armed for the running
batch, the :data:`ROWS_BEFORE_CRASH` + 1-th statement that writes a row kills the driver before it
runs. The rows before it reached SQLite in whatever transactions the writer chose (committed or
not); the rest of the batch never did. Whatever shape the writer has (collect first or stream the
rows, ``execute`` per row or one ``executemany``, one transaction or one per row), the crash lands
in the middle of its writes.
"""
from __future__ import annotations

import re
from pathlib import Path

from .. import checkpoint
from . import crashpoints

POINT = "mid_sink_write"
#: Rows a batch has handed to SQLite when the trap fires (the Java gate's MID_WRITE_AFTER_ROWS - 1).
ROWS_BEFORE_CRASH = crashpoints.MID_WRITE_AFTER_ROWS - 1
#: Statements that write rows; BEGIN, COMMIT, SELECT and CREATE pass untouched.
_WRITES = re.compile(r"\s*(INSERT|REPLACE|UPDATE|DELETE|UPSERT)\b", re.IGNORECASE)


def running_batch(ckpt: str | Path) -> int | None:
    """The batch the query is running: the highest ``offsets/N`` (written before the batch's work)."""
    offsets, _ = checkpoint.batch_ids(ckpt)
    return max(offsets) if offsets else None


class WriteCounter:
    """Counts the row writes of the armed batch and fires the crash at the right one."""

    def __init__(self, crash_file: str | Path, ckpt: str | Path):
        self.crash_file = crash_file
        self.checkpoint = ckpt
        self.rows = 0
        self.batch: int | None = None

    def on_statement(self, sql: str) -> None:
        if not _WRITES.match(sql or ""):
            return
        state = crashpoints.armed(self.crash_file)
        if state is None or state[0] != POINT:
            self.rows, self.batch = 0, None
            return
        batch = running_batch(self.checkpoint)
        if batch is None or not crashpoints.matches(state, POINT, batch):
            return
        if batch != self.batch:
            self.rows, self.batch = 0, batch
        if self.rows >= ROWS_BEFORE_CRASH:
            crashpoints.crash_here(POINT, batch)  # SIGKILLs this driver; returns only if disarmed meanwhile
        self.rows += 1


def install(crash_file: str | Path, ckpt: str | Path) -> WriteCounter:
    """Make every ``sqlite3.connect`` in this process report its statements to one counter."""
    import sqlite3

    counter = WriteCounter(crash_file, ckpt)
    connect = getattr(sqlite3.connect, "deliverylab_real_connect", sqlite3.connect)

    def traced_connect(*args, **kwargs):
        db = connect(*args, **kwargs)
        db.set_trace_callback(counter.on_statement)
        return db

    traced_connect.deliverylab_real_connect = connect
    sqlite3.connect = traced_connect
    return counter


def uninstall() -> None:
    """Give ``sqlite3.connect`` back its own behaviour (a driver that goes on to another pipeline)."""
    import sqlite3

    sqlite3.connect = getattr(sqlite3.connect, "deliverylab_real_connect", sqlite3.connect)
