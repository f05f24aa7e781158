"""Every file through which the notebook and a crash-lab driver process talk, named once.

A **driver home** belongs to one driver process (a fresh one for every start and restart)::

    driver.log        everything the process and its JVM printed
    ready             written once its SparkSession is up (a standby waits here for work)
    assignment.json   the run it is given: variant, topic, sink, checkpoint (see Pipeline.start)
    crash             the armed crash point, if any (see crashpoints.py)
    crash.fired       the crash that fired: "<point> <batch>"
    stop              created by the notebook to ask for a clean stop ("recycle" in it: stop the
                      pipeline's query, then wait for another pipeline's first start, see drivers.py)
    idle              written by a driver that stopped its pipeline and waits again: how many it ran
    error.txt         the error's last lines, if the query or the driver failed
    dump.request      created by the notebook to ask for the rows of an in-memory sink
    dump.jsonl        the driver's answer
    tmp/              its temporary files and its JVM's (Spark's scratch folders, the native
                      libraries it unpacks): a SIGKILLed JVM cannot delete them, so they stay
                      here, and go with the home, instead of piling up in /tmp

A **pipeline folder** belongs to one pipeline of a lesson, across all its runs::

    progress.jsonl    one line per event of every run: started, progress (per micro-batch)
    runs.jsonl        which driver process ran which run
    driver.lock       locked (flock) by the driver that runs the pipeline now
    driver.pid        that driver's pid

The lock makes a second driver on the same checkpoint impossible: it is held for the
whole life of the running driver and released by the OS when that process dies, however
it dies.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the whole new one, never half of it."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


@dataclass(frozen=True)
class DriverHome:
    path: Path

    @property
    def log(self) -> Path:
        return self.path / "driver.log"

    @property
    def ready(self) -> Path:
        return self.path / "ready"

    @property
    def assignment(self) -> Path:
        return self.path / "assignment.json"

    @property
    def crash(self) -> Path:
        return self.path / "crash"

    @property
    def stop(self) -> Path:
        return self.path / "stop"

    @property
    def idle(self) -> Path:
        return self.path / "idle"

    @property
    def error(self) -> Path:
        return self.path / "error.txt"

    @property
    def dump_request(self) -> Path:
        return self.path / "dump.request"

    @property
    def dump(self) -> Path:
        return self.path / "dump.jsonl"

    @property
    def tmp(self) -> Path:
        return self.path / "tmp"

    def assign(self, spec: dict) -> None:
        write_atomically(self.assignment, json.dumps(spec, indent=1, sort_keys=True))

    def read_assignment(self) -> dict | None:
        try:
            return json.loads(self.assignment.read_text())
        except (OSError, json.JSONDecodeError):
            return None

    def asked_to_recycle(self) -> bool:
        try:
            return self.stop.read_text().strip() == "recycle"
        except OSError:
            return False

    def clear_for_next_pipeline(self, served: int) -> None:
        """In the driver, after a clean stop: forget the pipeline's files, then say it waits again.
        The crash file goes first, so no crash armed for the old pipeline can fire in the next one."""
        for f in (self.crash, self.path / "crash.fired", self.error, self.dump_request, self.dump,
                  self.assignment, self.stop):
            f.unlink(missing_ok=True)
        write_atomically(self.idle, f"{served}\n")

    def idle_after(self) -> int:
        """How many pipelines the driver had run when it last said it waits again (0: never)."""
        try:
            return int(self.idle.read_text().strip())
        except (OSError, ValueError):
            return 0


@dataclass(frozen=True)
class PipelineFolder:
    path: Path

    @property
    def progress(self) -> Path:
        return self.path / "progress.jsonl"

    @property
    def runs(self) -> Path:
        return self.path / "runs.jsonl"

    @property
    def lock(self) -> Path:
        return self.path / "driver.lock"

    @property
    def pid(self) -> Path:
        return self.path / "driver.pid"

    def holder(self) -> int | None:
        """The pid of the driver holding this pipeline's lock, or None if no driver holds it."""
        if not self.lock.exists():
            return None
        with open(self.lock, "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    return int(self.pid.read_text().strip())
                except (OSError, ValueError):
                    return -1  # held, by a driver that has not written its pid yet
            fcntl.flock(fh, fcntl.LOCK_UN)
        return None


class LockHeld(Exception):
    """Another driver runs this pipeline (its pid is the argument)."""


@contextlib.contextmanager
def hold_lock(folder: PipelineFolder):
    """In the driver: hold the pipeline's lock for as long as the block runs.

    Raises LockHeld at once if another driver holds it.
    """
    fh = open(folder.lock, "a")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockHeld(folder.holder()) from None
        write_atomically(folder.pid, f"{os.getpid()}\n")
        yield
    finally:
        fh.close()  # closing releases the lock (and so does the process dying)
