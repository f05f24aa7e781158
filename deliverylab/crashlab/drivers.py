"""Driver processes seen from the notebook, and the standby that makes restarts quick.

Starting a driver means starting Python, a JVM and a SparkSession: about 8 s on two
cores, and far more on a real cluster. A crash lab that restarts drivers dozens of times
would spend most of its time there, so the notebook keeps one driver *booted ahead of
need*: a standby that has its SparkSession but no query. When a pipeline starts or
restarts, it takes the standby (a brand-new process, with nothing in memory from the
crashed one) and gives it the pipeline to run; recovery from the checkpoint is all that
is left to do. The next standby starts booting when a crash is armed (pipeline.py): a crash
is what a restart follows, and the crash itself takes the seconds the boot needs. Taking a
standby does not start another: after a lesson's last restart, one would boot for nothing
(about 26 such boots in a `make test`, some 3 CPU-seconds each). While it waits,
a standby also runs a Delta write and a stream once (a warm-up, driver.py), unless
DELIVERYLAB_STANDBY_WARM_UP=0 (config.py): on a learner's idle machine that makes a
restart 1-2 s quicker; on a test run's busy cores it only takes CPU from the tests.

A driver whose pipeline is **stopped cleanly** (``Pipeline.stop()``; never a crash) is not
thrown away: it forgets that pipeline and waits again (driver.py), and the next pipeline's
*first* start takes it, with its JVM warm (about 10 CPU-seconds less than a new driver boots
and warms up for a Delta pipeline; lesson 05 runs six scenarios one after the other). It is
never given a restart or a redeploy, nor a pipeline whose checkpoint or sink it has touched:
those always get a process that never ran them, so a restart still recovers from the
checkpoint alone. At most one such driver waits (each holds a JVM), and it ends after six
pipelines, after 5 idle minutes, or at ``lesson.complete()`` like a standby.

Standbys live under ``.state/drivers/<notebook pid>/`` and end by themselves when the
notebook process that started them goes away, after 5 idle minutes, or at ``lesson.complete()``
(the last cell of a lesson). A chaos run boots two, without the warm-up, and keeps one when it ends.

There is one pool per Python. A driver runs the notebook's own Python, except a driver for an Iceberg
pipeline (module 10's variants, sink kind "iceberg") started from the main kernel: it runs the Iceberg venv's
Python (``.venv-iceberg``, stack/kernels.py), whose Spark 4.1 carries Iceberg, from a pool of its own under
``.state/drivers/<notebook pid>/iceberg/`` (:func:`python_for` says which; a pipeline asks ``pool(its python)``).
That is how the capstone's matrix gets Iceberg's rows. Without the Iceberg venv, one line says to run
``make setup``.
"""
from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..config import settings
from ..stack import idlesession, processes
from .files import DriverHome, write_atomically

STOP_TIMEOUT_S = 60


class Driver:
    """One driver process: its home folder, the process itself, and what it has run."""

    def __init__(self, home: DriverHome, proc: subprocess.Popen):
        self.home = home
        self.proc = proc
        self.touched: set[str] = set()  # the checkpoints and sinks of the pipelines it ran
        self.served = 0  # pipelines it was given

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    @property
    def warm(self) -> bool:
        """Has it built its SparkSession (so a query can start at once)?"""
        return self.home.ready.exists()

    def assign(self, spec: dict, touches: set[str] = frozenset()) -> None:
        self.touched |= set(touches)
        self.served += 1
        self.home.assign(spec)

    def kill(self) -> None:
        """SIGKILL the driver and its JVM at once, wherever they are."""
        processes.kill_group(self.pid)
        self.proc.wait()

    def stop(self, timeout_s: float = STOP_TIMEOUT_S, recycle: bool = False) -> bool:
        """Ask the driver to stop its query cleanly; kill it if it does not within ``timeout_s``.

        ``recycle``: the driver may wait for another pipeline afterwards (drivers.py). True when it does:
        it said so in its ``idle`` file, with its process still running."""
        if not self.running:
            return False
        write_atomically(self.home.stop, "recycle" if recycle else "")
        deadline = time.monotonic() + timeout_s
        while self.running and time.monotonic() < deadline:
            if recycle and self.home.idle_after() == self.served:
                return True
            time.sleep(0.05)
        if self.running:
            self.kill()
        return False

    def error_tail(self, lines: int = 8) -> str:
        """The last lines of the driver's error (or of its log when it left no error)."""
        root = f"{settings().root}/"
        for f in (self.home.error, self.home.log):
            if f.exists() and f.stat().st_size:
                text = [ln.replace(root, "") for ln in f.read_text(errors="replace").splitlines() if ln.strip()]
                return "\n".join(text[-lines:])
        return "(no error recorded)"


class DriverPool:
    """Hands out driver processes, keeping ``standby`` of them booted ahead of need."""

    def __init__(self, root: Path, standby: int = 1, python: str | None = None):
        self.root = root
        self.python = python or sys.executable  # what its drivers run
        self.standby = standby
        self.warm_up = True  # False: new standbys skip their warm-up (a chaos run: crashes come faster)
        self._ready: list[Driver] = []
        self._stopped: list[Driver] = []  # drivers that stopped a pipeline cleanly and wait again
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()  # the chaos tests crash two pipelines from two threads

    def _spawn(self) -> Driver:
        self.root.mkdir(parents=True, exist_ok=True)
        # a new folder every time, never shared: two drivers reading one assignment would
        # both try to run it
        home = DriverHome(Path(tempfile.mkdtemp(prefix=f"d{next(self._numbers):03d}-", dir=self.root)))
        home.tmp.mkdir()
        # TMPDIR: Python's temporary files, and the JVM's through session.spark_conf
        env = {"TMPDIR": str(home.tmp)}
        if not self.warm_up:
            env["DELIVERYLAB_STANDBY_WARM_UP"] = "0"
        if self.python != sys.executable:  # Spark's Python workers run the driver's venv, not the notebook's
            env["PYSPARK_PYTHON"] = self.python
        proc = processes.spawn("deliverylab.crashlab.driver", str(home.path), log=home.log, env=env,
                               python=self.python)
        return Driver(home, proc)

    def take(self, fresh: bool = True, touches: set[str] = frozenset()) -> Driver:
        """A driver for a pipeline run: the warmest standby, else a new process. No refill here:
        the next standby starts with the next crash (``fill``), which is what a restart follows.

        ``fresh=False`` (a pipeline's first start): a driver that stopped another pipeline cleanly and
        waits again may be taken instead, if it never touched ``touches`` (the pipeline's checkpoint
        and sink)."""
        with self._lock:
            if not fresh:
                for driver in self._stopped:
                    if driver.running and not driver.touched & set(touches):
                        self._stopped.remove(driver)
                        return driver
            self._ready = [d for d in self._ready if d.running]  # forget standbys that ended
            self._ready.sort(key=lambda d: not d.warm)
            return self._ready.pop(0) if self._ready else self._spawn()

    def give_back(self, driver: Driver) -> None:
        """A driver that stopped its pipeline cleanly and waits again (Driver.stop(recycle=True)): it is kept
        for the next pipeline's first start. At most one waits; an older one ends."""
        with self._lock:
            older, self._stopped = [d for d in self._stopped if d.running], [driver]
        for extra in older:
            extra.kill()  # it runs no query: nothing to stop cleanly

    def wait_until_ready(self, timeout_s: float = 120) -> bool:
        """Wait (at most ``timeout_s``) until every standby is ready; ``True`` if they all are."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                waiting = [d for d in self._ready if d.running and not d.warm]
            if not waiting:
                return True
            time.sleep(0.2)
        return False

    def fill(self, standby: int | None = None, warm_up: bool | None = None) -> None:
        """Start standbys until ``standby`` (default: the pool's number) are booting or waiting.
        ``warm_up=False``: these and later standbys skip their warm-up, until ``trim``."""
        with self._lock:
            if standby is not None:
                self.standby = standby
            if warm_up is not None:
                self.warm_up = warm_up
            self._fill()

    def _fill(self) -> None:
        self._ready = [d for d in self._ready if d.running]
        while len(self._ready) < self.standby:
            self._ready.append(self._spawn())

    def trim(self, keep: int) -> int:
        """Keep at most ``keep`` standbys (the warmest); from now on a crash boots ``max(keep, 1)``.
        Drivers that stopped a pipeline and wait again end too. Returns how many were stopped."""
        with self._lock:
            self.standby = max(keep, 1)
            self.warm_up = True
            self._ready = [d for d in self._ready if d.running]
            self._ready.sort(key=lambda d: not d.warm)
            extra, self._ready = self._ready[keep:], self._ready[:keep]
            extra += [d for d in self._stopped if d.running]
            self._stopped = []
        for driver in extra:
            driver.kill()
        return len(extra)

    def shutdown(self) -> None:
        self.trim(0)


_pool: DriverPool | None = None  # this Python's
_pools: dict[str, DriverPool] = {}  # other Pythons' (the Iceberg venv's, asked for from the main kernel)
_pool_lock = threading.Lock()
#: What a notebook is told when it asks for an Iceberg pipeline and the Iceberg venv is missing.
NO_ICEBERG_VENV = ("Pipeline {name!r} writes Iceberg, so its driver runs module 10's venv (Spark 4.1 + Iceberg), "
                   "and {python} does not exist: run `make setup` (it builds it), then run this cell again.")


def python_for(variant) -> str:
    """The Python a variant's drivers run: this one, or for an Iceberg pipeline started where Spark has no
    Iceberg (the main kernel), the Iceberg venv's."""
    from ..stack.session import with_iceberg

    if variant.sink_kind == "iceberg" and not with_iceberg():
        from ..stack.kernels import iceberg_python

        return str(iceberg_python())
    return sys.executable


def iceberg_available() -> bool:
    """Can this kernel run an Iceberg pipeline: is it the Iceberg kernel, or does the Iceberg venv exist?"""
    from ..stack.kernels import iceberg_python
    from ..stack.session import with_iceberg

    return with_iceberg() or iceberg_python().exists()


def runnable_here(variant):
    """``variant`` if a driver for it can start from this kernel; else a CourseError in one line."""
    python = python_for(variant)
    if not Path(python).exists():
        from ..config import CourseError

        shown = os.path.relpath(python, settings().root) if python.startswith(str(settings().root)) else python
        raise CourseError(NO_ICEBERG_VENV.format(name=variant.name, python=shown))
    return variant


def pool(python: str | None = None) -> DriverPool:
    """The pool of drivers running ``python`` (default: this Python), one per notebook kernel.
    Leftover homes of ended notebooks are removed."""
    global _pool
    python = str(python or sys.executable)
    with _pool_lock:
        if _pool is None:
            base = settings().state / "drivers"
            _remove_homes_of_ended_processes(base)
            _pool = DriverPool(base / str(os.getpid()))
            idlesession.on_release(release_standbys, last=True)  # an idle kernel's drivers end with its session
        if python == sys.executable:
            return _pool
        if python not in _pools:
            _pools[python] = DriverPool(_pool.root / "iceberg", python=python)
        return _pools[python]


def warm_up(standby: int = 1, warm: bool | None = None, python: str | None = None) -> None:
    """Start booting ``standby`` drivers now (of ``python``'s pool: default this Python's), so the next pipeline
    starts (or restarts) quickly. ``warm=False``: they skip their warm-up (see DriverPool.fill)."""
    pool(python).fill(standby, warm_up=warm)


def release_standbys() -> int:
    """Stop the standbys that are waiting, in every pool (the end of a lesson: each holds a JVM of about
    300 MB). The next crash boots one again. Returns how many were stopped."""
    main = pool(sys.executable)
    with _pool_lock:
        others = list(_pools.values())
    return main.trim(0) + sum(other.trim(0) for other in others)


def _remove_homes_of_ended_processes(base: Path) -> None:
    if not base.is_dir():
        return
    for folder in base.iterdir():
        if folder.name.isdigit() and not processes.alive(int(folder.name)):
            shutil.rmtree(folder, ignore_errors=True)
