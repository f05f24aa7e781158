"""Child processes the course starts (crash-lab drivers, module 01's consumers), and how they end.

Every such process runs in a session (process group) of its own, so killing the group
kills the process and its children (a driver's JVM) while the notebook keeps running, and
a notebook interrupt (SIGINT to the kernel) never reaches them. Each one also watches its
parent: when the kernel that started it goes away, it ends too (:class:`ParentWatch`), so
nothing is left running after JupyterLab or a test run stops. ``python -m deliverylab stack
down`` stops any that are left anyway (:func:`stop_course_processes`).

A child runs the Python of the process that starts it (``sys.executable``) unless it is given another: the
drivers of a module 10 notebook run module 10's venv (``.venv-iceberg``, kernels.py) and build its Spark 4.1
session with Iceberg, and so do the drivers of an Iceberg pipeline started from the main kernel (drivers.py).
``stack down`` and ``stack status`` find them by their command line, whichever venv they run.

Their event logs are JSON lines; a SIGKILL can cut the last line short, so readers skip it.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: Every course child process carries this in its command line, so leftovers can be found.
MARKER = "--deliverylab-child"


def spawn(module: str, *args: str, log: str | Path, env: dict | None = None,
          python: str | Path | None = None) -> subprocess.Popen:
    """``python -m <module> <args>`` in a session of its own, stdout and stderr to ``log``
    (``python``: this process's own Python unless given)."""
    environment = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    with open(log, "ab") as out:
        return subprocess.Popen([str(python or sys.executable), "-m", module, *args, MARKER, str(os.getpid())],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=environment, start_new_session=True)


def parent_pid_from(argv: list[str]) -> tuple[list[str], int | None]:
    """Split what :func:`spawn` appended: ``(the real arguments, the parent's pid)``."""
    if MARKER in argv:
        at = argv.index(MARKER)
        return argv[:at] + argv[at + 2:], int(argv[at + 1])
    return argv, None


class ParentWatch:
    """Tells a child process that the process which started it has ended."""

    def __init__(self, parent: int | None = None):
        self.parent = parent if parent is not None else os.getppid()

    def gone(self) -> bool:
        return os.getppid() != self.parent


def alive(pid: int | None) -> bool:
    """True while ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True  # no /proc (macOS): kill(0) said it exists


def alive_from_pid_file(path: str | Path) -> bool:
    """Is the process whose pid ``path`` holds still there? Judged by the pid alone: a daemon that is
    starting (spark-class or the java launcher exec'ing its JVM) can show an empty command line for a moment."""
    try:
        return alive(int(Path(path).read_text().strip()))
    except (OSError, ValueError):
        return False


def kill_group(pid: int) -> None:
    """SIGKILL the process and everything in its process group: a process crash, no cleanup."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def killed_by_sigkill(returncode: int | None) -> bool:
    return returncode == -signal.SIGKILL


def append_jsonl(path: str | Path, record: dict) -> None:
    """Add one JSON line (written whole, so a reader never sees half of it unless a kill cuts it)."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")


def read_jsonl(path: str | Path) -> list[dict]:
    """Every complete JSON line of an event log ([] if the file does not exist)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    events = []
    for line in text.splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut short by a SIGKILL
            continue
    return events


def course_processes(within: str | Path) -> list[int]:
    """Pids of the course's child processes whose arguments name a path under ``within``
    (the project's state folder), so another clone's processes are left alone. Linux only."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\x00")
        except OSError:
            continue
        if MARKER.encode() in argv and any(str(within).encode() in a for a in argv) and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return sorted(found)


def stop_course_processes(within: str | Path, wait_s: float = 5) -> int:
    """Kill every leftover course child process under ``within`` (and its JVM). Returns how many."""
    pids = course_processes(within)
    for pid in pids:
        kill_group(pid)
    deadline = time.monotonic() + wait_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return len(pids)
