"""CPU seconds of a process tree: what a command and every process it started cost, however they ended.

Wall time on a two-core machine shared with other work says as much about the neighbours as about
the work (the same ``make test`` took 18 minutes one day and 48 the next). CPU seconds (user + system)
of every process a run started say what the run itself cost, so they are the figure to compare.

Counting them needs two sources:

* processes that have ended and been waited for: the kernel adds their CPU (and that of the children
  *they* waited for) to their parent's ``RUSAGE_CHILDREN``;
* processes still running (a broker started in the background, a notebook kernel's Spark JVM): their
  ``/proc/<pid>/stat`` says what they used so far, and what their own waited-for children used.

A process whose parent ends first (the broker, after ``stack up`` returns; a crash-lab driver whose
kernel ended) is handed to the nearest ancestor that asked to be a *subreaper* (Linux's
``PR_SET_CHILD_SUBREAPER``), or else to init, whose bookkeeping is nobody's. The meter makes its own
process a subreaper and waits for such orphans itself, so their CPU is counted too. Linux only; on
another system the meter counts what it can (its waited-for children) and says so.
"""
from __future__ import annotations

import ctypes
import os
import resource
import subprocess
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def parse_stat(text: str) -> tuple[int, str, int]:
    """``/proc/<pid>/stat`` -> (parent pid, state, CPU ticks of the process and of its waited-for children).

    The command name (field 2) is in parentheses and may hold spaces or parentheses itself, so the
    fields are read after its last closing parenthesis."""
    fields = text[text.rindex(")") + 2:].split()
    # after the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17)
    return int(fields[1]), fields[0], sum(int(f) for f in fields[11:15])


def process_table(proc: Path = Path("/proc")) -> dict[int, tuple[int, str, int]]:
    """Every process now: pid -> parse_stat of it (processes that end while being read are left out)."""
    table = {}
    for entry in proc.iterdir() if proc.is_dir() else ():
        if entry.name.isdigit():
            try:
                table[int(entry.name)] = parse_stat((entry / "stat").read_text())
            except (OSError, ValueError, IndexError):
                continue
    return table


def descendants(table: dict[int, tuple[int, str, int]], root: int, exclude: frozenset[int] = frozenset()) -> set[int]:
    """The pids below ``root`` in ``table`` (children, their children, ...), not ``root`` itself, and
    neither the ``exclude`` ones nor what is below them."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, frontier = set(), [root]
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child not in found and child not in exclude:
                found.add(child)
                frontier.append(child)
    return found


def live_seconds(table: dict[int, tuple[int, str, int]], root: int, exclude: frozenset[int] = frozenset()) -> float:
    """CPU seconds of the processes still below ``root`` (each with its waited-for children), but the
    ``exclude`` ones. A zombie's ticks count too: they reach ``RUSAGE_CHILDREN`` only once it is waited for."""
    return sum(table[pid][2] for pid in descendants(table, root, exclude)) / TICKS


def become_subreaper() -> bool:
    """Ask Linux to hand this process the orphans of its descendants. False where that is not possible."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reaped_seconds() -> float:
    """CPU seconds of every child this process has waited for (and of what they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def reap_orphans() -> int:
    """Wait for every child of this process that has ended (orphans handed to it, too). How many."""
    count = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return count
        if pid == 0:
            return count
        count += 1


class Meter:
    """The CPU seconds this process's tree has used so far: call :meth:`seconds` before and after a step.
    ``exclude``: pids of children that are not part of what is measured (make test-stress's busy loop)."""

    def __init__(self, exclude: frozenset[int] = frozenset()):
        self.exact = become_subreaper()
        self.exclude = frozenset(exclude)

    def seconds(self) -> float:
        reap_orphans()
        own = resource.getrusage(resource.RUSAGE_SELF)
        return own.ru_utime + own.ru_stime + reaped_seconds() + live_seconds(process_table(), os.getpid(), self.exclude)

    def run(self, command: str, env: dict | None = None) -> int:
        """Run ``command`` in bash and wait for it, reaping the orphans it leaves meanwhile. Its exit code."""
        proc = subprocess.Popen(["bash", "-c", command], env=env)
        while True:
            pid, status = os.waitpid(-1, 0)  # the command, or an orphan handed to this subreaper
            if pid == proc.pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                return proc.returncode

    def still_running(self) -> list[str]:
        """The processes of this tree that are still running: 'pid command' each."""
        table = process_table()
        found = []
        for pid in sorted(descendants(table, os.getpid(), self.exclude)):
            if table[pid][1] == "Z":
                continue
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            found.append(f"{pid} {cmd.strip()[:120]}")
        return found
