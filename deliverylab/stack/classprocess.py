"""The class broker's JVM: formatting its storage, starting it, waiting for it, stopping it, all readable by the
instructor only; and when it cannot start, one line that says why and what to do.

Its state folder holds the class's passwords, the admin login in server.properties, and the KRaft metadata log
(``data/__cluster_metadata-0``, ``data/bootstrap.checkpoint``), where Kafka keeps every learner's SCRAM salt and
keys. Kafka sets no file modes of its own (its files get 0666 & ~umask), so the folder is made 0700, everything
already in it loses its group and world bits at every start, and the JVMs run with umask 077.

A broker with many partitions needs time: to load and check them when it starts, to close them all when it stops
(a clean stop spares the next start from recovering every log). Both waits last as long as the broker makes
progress (its CPU time or its log still moving), not a fixed number of seconds; a broker that makes none for
STALL_S is given up on (at start: one line; at stop: SIGKILL, and one line saying the next start recovers).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from . import jars, processes
from ..config import CourseError
from .java import QUICK_JIT_FLAGS

HEAP = "768m"
PRIVATE_UMASK = 0o077
#: give up on a broker whose CPU time and log have not moved for this long (starting, or stopping)
STALL_S = 60
#: and on any start or stop that takes longer than this in all
LONGEST_S = 15 * 60
#: how often a stop that takes a while says it is still going
STOPPING_EVERY_S = 10
#: what a broker's log says when the machine, not Kafka, stopped it: the cause, and what to do about it
CAUSES = (
    ("Too many open files", "it needs more open files than this machine allows (ulimit -n)"),
    ("Map failed", "it needs more memory maps than this machine allows (vm.max_map_count)"),
    ("OutOfMemoryError", "its memory (-Xmx) ran out"),
    ("Address already in use", "one of its ports is taken by another program"),
    ("No space left on device", "the disk is full"),
)
WHAT_TO_DO = ("run `python -m deliverylab stack down --class`, then `stack up --class` again; if it fails again, "
              "`stack wipe --class` starts from empty storage (every learner then needs a new join token)")


def make_private(folder: Path) -> None:
    """The instructor's state folder (and everything in it) readable and writable by its owner only."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            try:
                mode = os.lstat(path).st_mode
                if mode & 0o077 and not os.path.islink(path):
                    os.chmod(path, mode & 0o7700)
            except FileNotFoundError:  # a file the broker just deleted
                pass


def java_cmd(java: str, log4j: Path, logs_dir: Path, main: str, *args: str, heap: str = HEAP) -> list[str]:
    """A JVM on the kafka classpath and the class policy's jar (the broker, and the storage tool that reads the
    same server.properties, must both load the policy class it names)."""
    classpath = f"{jars.classpath_dir('kafka') / '*'}{os.pathsep}{jars.class_policy_jar(log=lambda m: None)}"
    return [java, f"-Xmx{heap}", "-Xms128m", "-XX:+UseG1GC", *QUICK_JIT_FLAGS, "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}", f"-Dkafka.logs.dir={logs_dir}", "-cp", classpath, main, *args]


def run_private(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, umask=PRIVATE_UMASK)


def start(cmd: list[str], out: Path) -> int:
    """Start the broker in a session of its own, its output in ``out`` (0600); its pid."""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as stream:
        proc = subprocess.Popen(cmd, stdout=stream, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, umask=PRIVATE_UMASK)
    return proc.pid


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return -1


class Progress:
    """Is the broker still doing something? Its CPU time and the size of its logs, compared with the last look."""

    def __init__(self, pid: int, logs: list[Path]):
        self.pid, self.logs = pid, logs
        self.last, self.moved_at, self.started = self._sample(), time.monotonic(), time.monotonic()

    def _sample(self) -> tuple:
        return (_cpu_ticks(self.pid), *(p.stat().st_size if p.exists() else 0 for p in self.logs))

    def stalled(self) -> bool:
        """True when nothing moved for STALL_S, or the whole wait passed LONGEST_S."""
        now, sample = time.monotonic(), self._sample()
        if sample != self.last:
            self.last, self.moved_at = sample, now
        return now - self.moved_at > STALL_S or now - self.started > LONGEST_S

    def seconds(self) -> float:
        return time.monotonic() - self.started


def cause(logs: list[Path], lines: int = 400) -> str:
    """The likeliest reason the broker stopped or hangs, from the end of its logs: a known cause, else its last
    error line (one line, shortened), else ''."""
    tail: list[str] = []
    for path in logs:
        if path.exists():
            tail += path.read_text(errors="replace").splitlines()[-lines:]
    for sign, meaning in CAUSES:
        if any(sign in line for line in tail):
            return meaning
    errors = [line for line in tail if re.search(r"\b(ERROR|FATAL)\b|Exception", line)]
    return " ".join(errors[-1].split())[:200] if errors else ""


def not_ready(what: str, logs: list[Path]) -> CourseError:
    """One line: what happened, why (when the log says), what to do, and where the log is."""
    why = cause(logs)
    return CourseError(f"The class broker {what}{f' ({why})' if why else ''}: {WHAT_TO_DO}. Its log: {logs[-1]}")


def wait_ready(pid: int, answers: Callable[[], bool], logs: list[Path]) -> float:
    """Wait until ``answers()`` while the broker lives and makes progress; its start time. A CourseError line else."""
    progress = Progress(pid, logs)
    while True:
        if not processes.alive(pid):
            raise not_ready("exited while starting", logs)
        if answers():
            return progress.seconds()
        if progress.stalled():
            raise not_ready(f"(pid {pid}) did not answer after {progress.seconds():.0f} s", logs)
        time.sleep(0.25)


def stop(pid: int, logs: list[Path], log=print) -> bool:
    """SIGTERM, then wait as long as the broker makes progress closing its logs; SIGKILL when it stops making any.
    True when it stopped by itself (a clean stop)."""
    os.kill(pid, signal.SIGTERM)
    progress, said = Progress(pid, logs), time.monotonic()
    while processes.alive(pid):
        if progress.stalled():
            processes.kill_group(pid)
            log(f"the class broker made no progress stopping for {STALL_S} s and was killed before it closed its "
                "logs: its next start recovers them, which can take minutes")
            return False
        if time.monotonic() - said >= STOPPING_EVERY_S:
            log(f"stopping the class broker: still closing its logs ({progress.seconds():.0f} s) ...")
            said = time.monotonic()
        time.sleep(0.2)
    return True
