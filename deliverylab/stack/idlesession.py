"""An open lesson the learner has left gives its memory back: an idle kernel's Spark session stops.

Every open lesson's kernel holds a Spark driver JVM (0.5-0.9 GB), so four lessons left open hold
several GB while the learner works in a fifth. Once a kernel has run no cell for ``idle_minutes()``
(``IDLE_MINUTES`` unless ``DELIVERYLAB_IDLE_RELEASE_MINUTES`` says otherwise; 0 never releases), and
none of its streaming queries is active, it stops its SparkSession and lets the JVM exit: the memory
goes back to the machine. The kernel itself, its Python variables and its crash panels stay.

The next cell that uses Spark (it names the session, a DataFrame, a query or a Delta table, or calls
``get_spark``) starts a new session first, with a line that says so, and every notebook name that held
the old session (``spark``) holds the new one. DataFrames and queries made before belong to the stopped
session: the line names them, and the learner runs the cells that made them again. A course function
that needs Spark in a cell that names none of those starts the session itself (``get_spark``); the next
cell's start then rebinds the names. What happened is written to ``.state/logs/idle-session.log``.

The lesson's crash-lab pipelines are released with it (``on_release``: each stops its query cleanly
and its driver ends, so its JVM's memory goes back too); a pipeline's next move starts it again from
its checkpoint, with a line that says so. A crash panel's button counts as activity (``touch``).

A release never runs during a cell (a cell's start waits for a release in progress to finish), nor
while a query of the kernel's own session is active: that is work in progress, not a lesson left alone.
"""
from __future__ import annotations

import inspect
import os
import re
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Callable

from ..config import settings

#: Minutes without a cell run after which a kernel with no active query gives its Spark session back.
IDLE_MINUTES = 10.0
#: Types whose objects belong to one Spark session (by class name: no pyspark import for a pure test).
SPARK_TYPES = ("SparkSession", "DataFrame", "StreamingQuery", "DataStreamReader", "DataStreamWriter",
               "DeltaTable", "DataFrameReader", "DataFrameWriter", "GroupedData")
#: A cell that calls one of these uses Spark even when it names no Spark object.
SPARK_CALLS = ("get_spark",)

@dataclass(frozen=True)
class Controls:
    """What this needs of the process's session (session.py hands them over: no import back)."""
    running: Callable[[], bool]
    current: Callable[[], object]
    release: Callable[[], None]
    memory_gb: Callable[[], float | None]


_lock = threading.RLock()
_state = {"timer": None, "in_cell": False, "released": None, "installed": False, "start": None,
          "controls": None, "hooks": []}


def idle_minutes() -> float:
    value = os.environ.get("DELIVERYLAB_IDLE_RELEASE_MINUTES", "")
    try:
        return float(value) if value.strip() else IDLE_MINUTES
    except ValueError:
        return IDLE_MINUTES


def is_spark_object(value) -> bool:
    return type(value).__name__ in SPARK_TYPES and type(value).__module__.split(".")[0] in ("pyspark", "delta")


def needs_spark(source: str, namespace: dict) -> bool:
    """Does a cell use Spark: does it name a Spark object of the notebook, or one of ``SPARK_CALLS``?"""
    names = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", source or ""))
    return bool(names & set(SPARK_CALLS)) or any(is_spark_object(namespace.get(n)) for n in names)


def stale_names(namespace: dict, old_session) -> list[str]:
    """The notebook's names for DataFrames, queries and tables made by the stopped session."""
    found = []
    for name, value in namespace.items():
        if name.startswith("_") or not is_spark_object(value) or type(value).__name__ == "SparkSession":
            continue
        owner = getattr(value, "sparkSession", None) or getattr(value, "_spark", None)
        if owner is None or owner is old_session:
            found.append(name)
    return sorted(found)


def restart_line(minutes: float, held_gb: float | None, stale: list[str]) -> str:
    """The line a cell shows when it starts Spark again after a release."""
    held = f", giving back {held_gb:.1f} GB" if held_gb else ""
    text = (f"Spark: this lesson's session was stopped after {minutes:g} idle minutes{held}; "
            "starting a new one (a few seconds) before this cell.")
    if stale:
        shown = ", ".join(stale[:6]) + (", ..." if len(stale) > 6 else "")
        text += (f"\n       {shown}: made by the stopped session; run the cells that made them again "
                 "(Run > Run All Above Selected Cell).")
    return text


def kernel_shell():
    """The IPython shell when this runs in a notebook kernel, else None."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None


def in_a_cell(shell) -> bool:
    """Is the kernel running a cell? A widget's button runs its code outside any cell."""
    try:
        parent = shell.kernel.get_parent()
    except Exception:  # noqa: BLE001 - an older kernel: assume a cell
        return True
    return (parent or {}).get("header", {}).get("msg_type") == "execute_request"


def watch(start, preferred: bool = True, controls: Controls | None = None) -> None:
    """In a notebook kernel: release its session after idle minutes; ``start()`` starts it again (and returns
    it) on the next cell that uses Spark. ``controls``: the session's (session.py, at its first start); a
    ``preferred`` start (statusline's, with its status line) replaces a plain one."""
    with _lock:
        _state["controls"] = controls or _state["controls"]
        if preferred or _state["start"] is None:
            _state["start"] = start
    _install()


def _install() -> None:
    """The cell hooks and the idle timer, once per kernel (at its first Spark start or first pipeline)."""
    shell = kernel_shell()
    if shell is None:
        return
    with _lock:
        if _state["installed"] or idle_minutes() <= 0:
            return
        _state["installed"] = True
        running_cell = in_a_cell(shell)  # installed from inside a cell: its end arms the timer
    shell.events.register("pre_run_cell", lambda info: _before_cell(shell, info))
    shell.events.register("post_run_cell", lambda result: _after_cell())
    with _lock:
        _state["in_cell"] = running_cell
        if not running_cell:
            _arm()


def _log(text: str) -> None:
    try:
        path = settings().state / "logs" / "idle-session.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as out:
            out.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} kernel {os.getpid()}: {text}\n")
    except OSError:
        pass


def _after_cell() -> None:
    with _lock:
        _state["in_cell"] = False
        _arm()


def _arm() -> None:
    if _state["timer"] is not None:
        _state["timer"].cancel()
    timer = threading.Timer(idle_minutes() * 60, _release_if_idle)
    timer.daemon = True
    _state["timer"] = timer
    timer.start()


def _before_cell(shell, info) -> None:
    with _lock:  # waits for a release in progress
        _state["in_cell"] = True
        if _state["timer"] is not None:
            _state["timer"].cancel()
        released = _state["released"]
        if released is None:
            return
        session = _state["controls"]
        if not session.running() and not needs_spark(getattr(info, "raw_cell", ""), shell.user_ns):
            return
        _state["released"] = None
    if not session.running():
        print(restart_line(released["minutes"], released["gb"], stale_names(shell.user_ns, released["old"])))
    restarted = not session.running()
    new = _state["start"]()
    for name, value in list(shell.user_ns.items()):
        if value is released["old"]:
            shell.user_ns[name] = new
    _log("started a new Spark session for a cell that uses Spark" if restarted
         else "the notebook's names now hold the Spark session a course function started")


def _release_if_idle() -> None:
    with _lock:
        session = _state["controls"]
        if _state["in_cell"]:
            return
        spark = session.current() if session is not None and session.running() else None
        try:
            active = len(spark.streams.active) if spark is not None else 0
        except Exception:  # noqa: BLE001 - a session that cannot answer is not worth keeping
            active = 0
        if active:
            _log(f"kept the Spark session: {active} streaming quer{'y is' if active == 1 else 'ies are'} active")
            _arm()
            return
        stopped = sum(bool(_call(hook)) for hook in _hooks())
        if spark is None:
            if stopped:
                _log(f"stopped {stopped} pipeline(s) after {idle_minutes():g} idle minutes")
            return
        held = session.memory_gb()
        session.release()
        _state["released"] = {"old": spark, "minutes": idle_minutes(), "gb": held}
        _log(f"stopped the Spark session after {idle_minutes():g} idle minutes"
             + (f" ({held:.1f} GB given back)" if held else "") + (f" and {stopped} pipeline(s)" if stopped else ""))


def on_release(fn, last: bool = False) -> None:
    """Call ``fn()`` when the kernel is released for being idle (before its session stops): the course's
    pipelines stop their drivers there (crashlab). A bound method is held weakly. ``last``: after the others."""
    ref = weakref.WeakMethod(fn) if inspect.ismethod(fn) else (lambda: fn)
    with _lock:
        _state["hooks"].append((last, ref))
    _install()


def touch() -> None:
    """Work outside a cell (a crash panel's button) counts as activity: the idle time starts again."""
    with _lock:
        if _state["installed"] and not _state["in_cell"]:
            _arm()


def _hooks() -> list:
    alive = [(last, ref) for last, ref in _state["hooks"] if ref() is not None]
    _state["hooks"] = alive
    return [ref() for last, ref in sorted(alive, key=lambda item: item[0])]


def _call(hook) -> bool:
    try:
        return bool(hook())
    except Exception as error:  # noqa: BLE001 - a release must never fail on one pipeline
        _log(f"a release hook failed: {error}")
        return False
