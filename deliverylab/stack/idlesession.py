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

A release never runs during a cell (a cell's start waits for a release in progress to finish), nor
while a query is active: a running query is work in progress, not a lesson left alone.
"""
from __future__ import annotations

import os
import re
import sys
import threading
import time
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
          "controls": None}


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


def watch(start, preferred: bool = True, controls: Controls | None = None) -> None:
    """In a notebook kernel: release its session after idle minutes; ``start()`` starts it again (and returns
    it) on the next cell that uses Spark. The hooks go in once per kernel (the first Spark start, session.py);
    a ``preferred`` start (statusline's, with its status line) replaces a plain one."""
    shell = kernel_shell()
    if shell is None:
        return
    with _lock:
        _state["controls"] = controls or _state["controls"]
        if _state["controls"] is None:
            return
        if preferred or _state["start"] is None:
            _state["start"] = start
        if _state["installed"] or idle_minutes() <= 0:
            return
        _state["installed"] = True
    shell.events.register("pre_run_cell", lambda info: _before_cell(shell, info))
    shell.events.register("post_run_cell", lambda result: _after_cell())
    _after_cell()


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
    new = _state["start"]()
    for name, value in list(shell.user_ns.items()):
        if value is released["old"]:
            shell.user_ns[name] = new
    _log("started a new Spark session for a cell that uses Spark")


def _release_if_idle() -> None:
    with _lock:
        session = _state["controls"]
        if _state["in_cell"] or not session.running():
            return
        spark = session.current()
        try:
            active = len(spark.streams.active)
        except Exception:  # noqa: BLE001 - a session that cannot answer is not worth keeping
            active = 0
        if active:
            _log(f"kept the Spark session: {active} streaming quer{'y is' if active == 1 else 'ies are'} active")
            _arm()
            return
        held = session.memory_gb()
        session.release()
        _state["released"] = {"old": spark, "minutes": idle_minutes(), "gb": held}
        _log(f"stopped the Spark session after {idle_minutes():g} idle minutes"
             + (f" ({held:.1f} GB given back)" if held else ""))
