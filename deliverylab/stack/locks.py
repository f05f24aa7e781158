"""One holder at a time, across processes: a lock file, taken with flock.

Two things in the course must not run twice at once on one machine: starting or stopping a
server (two `make lab`, a test and a notebook), and the flaky-network proxy, which listens on
one fixed port (a lesson and a test, or two notebooks, may each want it for a few seconds).
The kernel drops the lock when its holder exits, however it exits (a SIGKILL included), so a
crash never leaves a stale lock behind.

    with exclusive(path):                  # waits as long as it takes
        ...
    with exclusive(path, timeout=60):      # LockBusy after 60 s
        ...
    held(path)                             # is someone holding it now?
"""
from __future__ import annotations

import contextlib
import fcntl
import time
from pathlib import Path

POLL_SECONDS = 0.1


class LockBusy(TimeoutError):
    """Another process held the lock for longer than the caller would wait."""


@contextlib.contextmanager
def exclusive(path: Path, timeout: float | None = None):
    """Hold the lock at ``path`` (created, with its folder, if missing) while the block runs."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        if timeout is None:
            fcntl.flock(fh, fcntl.LOCK_EX)
        else:
            _wait_for(fh, path, timeout)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def held(path: Path) -> bool:
    """Whether some process holds the lock at ``path`` right now (a missing file: nobody does)."""
    try:
        fh = open(path)
    except FileNotFoundError:
        return False
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


def _wait_for(fh, path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockBusy(f"{path} was still locked after {timeout:g} s") from None
            time.sleep(POLL_SECONDS)
