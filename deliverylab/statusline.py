"""One line that says what a long cell is doing right now, rewritten in place while it runs.

    from deliverylab import statusline

    with statusline.task("guarantee matrix", total=4) as line:   # a named piece of work with a count
        ...
        line.done("at_least_once: at-least-once")                   # 1 of 4 done
    statusline.say("at_least_once: crashed at after_sink_write")   # from anywhere, any thread

The crash lab's moves call ``say`` themselves (a driver starting, a crash armed, a batch
draining), so every cell that waits on a pipeline shows what it waits for without a line of
its own. A cell that waits on Spark in the kernel itself (a Delta write, a VACUUM, a query's
``processAllAvailable``) gets a line from :func:`watch_cells`, which the kernel's Spark session turns
on: once such a cell has run for ``WATCH_AFTER_S`` with no line of its own, the line says which Spark
call the cell is in and what Spark is doing (its running job and tasks, its streaming queries). A line
whose message has not changed for ``STALE_S`` says why it may be slow: its caller's reason, or how busy
the machine is. In a notebook the line is a small widget under the running cell, with a clock that
ticks while nothing else changes; when the cell ends the display turns into the line's last text
(``✓ ... · 41 s``, plain text that a saved notebook shows without a kernel) and the widget is
closed. Its first display carries the widget's view only, no text/plain, and nbval ignores display
updates, so nbval compares nothing of it; stored, executed and rendered copies drop it by the
``STATUS_LINE`` mark in its metadata. In a terminal (``python -m deliverylab chaos``) a task's line goes to stderr, rewritten
in place, when stderr is a terminal; elsewhere (pytest, a log file) nothing is shown.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

from .stack import idlesession
from .stack.idlesession import in_a_cell as _in_a_cell, kernel_shell as _kernel_shell
from .stack.runner import STATUS_LINE

#: How often the clock on an open line moves while nothing else changes.
TICK_S = 1.0
#: A message unchanged for this long gets a reason after it (the caller's, or the machine's load).
STALE_S = 30.0
#: A cell that has run this long with no line of its own gets one from the cell watcher (watch_cells).
WATCH_AFTER_S = 4.0
#: How often the cell watcher asks what the cell waits for.
WATCH_EVERY_S = 2.0
#: Back to the start of the terminal's line, and clear it.
CLEAR = "\r\033[K"
_lock = threading.RLock()
_line: "Line | None" = None


class Line:
    """The state of the one open status line and where it is shown."""

    def __init__(self, view):
        self.view = view
        self.started = time.monotonic()
        self.title = ""
        self.total: int | None = None
        self.finished = 0
        self.message = ""
        self.why = ""          # the caller's reason, shown once the message has stood still for STALE_S
        self.changed = self.started
        self.watched = False   # the cell watcher opened it and may rewrite it (until someone else says something)
        self.closed = False
        self._ticker = threading.Thread(target=self._tick, name="statusline-clock", daemon=True)
        self._ticker.start()

    def text(self) -> str:
        now = time.monotonic()
        parts = [p for p in (self.title, self.count(), self.message) if p]
        text = " · ".join(parts + [f"{now - self.started:.0f} s"])
        if now - self.changed >= STALE_S:
            text += f" · unchanged for {now - self.changed:.0f} s: {self.why or machine_load()}"
        return text

    def set(self, message: str, why: str = "") -> None:
        """A new message (and reason); the stale clock restarts only when the message changes."""
        if message != self.message:
            self.changed = time.monotonic()
        self.message, self.why = message, why

    def count(self) -> str:
        if self.total is None:
            return ""
        return f"{self.finished} of {self.total} done"

    def show(self) -> None:
        if not self.closed:
            self.view.show(self.text())

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.view.close(self.text())

    def _tick(self) -> None:
        while not self.closed:
            time.sleep(TICK_S)
            with _lock:
                self.show()


class Task:
    """What ``task()`` yields: ``step`` says what happens now, ``done`` counts one piece of work as finished.

    With no line to show (no notebook cell, stderr not a terminal) both do nothing. A task inside
    another (a chaos run inside the matrix) keeps the outer one's title and count: its ``done``
    only says its message."""

    def __init__(self, line: Line | None, counts: bool = True):
        self.line = line
        self.counts = counts

    def step(self, message: str, why: str = "") -> None:
        if self.line is not None:
            with _lock:
                self.line.watched = False
                self.line.set(message, why)
                self.line.show()

    def done(self, message: str = "") -> None:
        if self.line is not None:
            with _lock:
                self.line.finished += self.counts
                self.line.changed = time.monotonic()
                self.line.watched = False
                self.line.set(message or self.line.message, self.line.why)
                self.line.show()


@contextlib.contextmanager
def task(title: str, total: int | None = None):
    """Show ``title`` (and ``N of total done``) on the status line while the block runs."""
    line = _open_line(for_task=True)
    if line is None or line.title:
        yield Task(line, counts=False)
        return
    with _lock:
        line.title, line.total, line.finished, line.watched = title, total, 0, False
        line.set("starting")
        line.show()
    try:
        yield Task(line)
    finally:
        with _lock:
            if line.view.closes_with_task:
                _close_line()
            else:  # a notebook's line stays until the cell ends
                done = f", {line.finished} of {line.total} done" if line.total is not None else ""
                line.title, line.total = "", None
                line.set(f"{title} finished{done}")
                line.show()


def say(message: str, why: str = "") -> None:
    """Say what happens now on the open status line; ``why`` is shown if the message then stays the same
    for ``STALE_S`` (what the wait depends on). In a notebook, the cell's own thread opens a line if
    there is none yet; elsewhere only a ``task()`` opens one."""
    on_main = threading.current_thread() is threading.main_thread()
    line = _open_line(for_task=False) if on_main else _line
    if line is None or line.closed:
        return
    with _lock:
        line.watched = False
        line.set(message, why)
        line.show()


def machine_load() -> str:
    """How busy the machine is, in words: why a step that usually takes seconds can take minutes."""
    try:
        load, cores = os.getloadavg()[0], os.cpu_count() or 1
    except (AttributeError, OSError):  # no load average on this system
        return "still waiting for it"
    if load >= cores * 0.9:
        return (f"the machine is busy (load {load:.1f} on {cores} cores), which slows every step down; "
                "it is still working")
    return f"the machine is not busy (load {load:.1f} on {cores} cores): this step is waiting, not computing"


# ---- the cell watcher: a line for a cell that waits on Spark without saying so -------------------

_watch = {"describe": None, "cell": 0, "since": None, "thread": None}


def watch_cells(describe, after_s: float | None = None) -> bool:
    """In a notebook kernel, give every cell that runs longer than ``after_s`` (default ``WATCH_AFTER_S``)
    with no status line of its own a line that says what it waits for: ``describe(main_thread_frame)``
    returns that text, or None when it has nothing to say (then no line is shown). Installed once per
    kernel (a later call only replaces ``describe``). Returns True when the kernel is watched."""
    global WATCH_AFTER_S
    shell = _kernel_shell()
    if shell is None:
        return False
    if after_s is not None:
        WATCH_AFTER_S = after_s
    with _lock:
        first = _watch["describe"] is None
        _watch["describe"] = describe
        if not first:
            return True

        def started(*_):
            with _lock:
                _watch["cell"] += 1
                _watch["since"] = time.monotonic()

        def ended(*_):
            with _lock:
                _watch["since"] = None

        shell.events.register("pre_run_cell", started)
        shell.events.register("post_run_cell", ended)
        _install_close_hook(shell)  # here, on the kernel's own thread, before the watcher opens a line
        if _in_a_cell(shell):  # installed from inside a running cell: watch this one too
            started()
        thread = threading.Thread(target=_watch_loop, name="statusline-cell-watcher", daemon=True)
        _watch["thread"] = thread
        thread.start()
    return True


def _watch_loop() -> None:
    main = threading.main_thread()
    while main.is_alive():
        time.sleep(WATCH_EVERY_S / 2)
        with _lock:
            since, cell = _watch["since"], _watch["cell"]
            line = _line if _line is not None and not _line.closed else None
        if since is None or time.monotonic() - since < WATCH_AFTER_S:
            continue
        if line is not None and not line.watched:
            continue  # the cell's own line (a pipeline, a task) says what it waits for
        try:
            text = _watch["describe"](sys._current_frames().get(main.ident))
        except Exception:  # noqa: BLE001 - a watcher must never disturb the cell it watches
            text = None
        if not text:
            continue
        with _lock:
            if _watch["since"] is None or _watch["cell"] != cell:
                continue  # the cell ended while we asked: no line under a finished cell
            line = _line if _line is not None and not _line.closed else _open_watched_line()
            if line is None or not line.watched:
                continue
            line.set(text)
            line.show()
        time.sleep(WATCH_EVERY_S / 2)


def _open_watched_line() -> "Line | None":
    """A line opened by the cell watcher's thread, under the running cell (the kernel sends a display
    from another thread to the cell that runs now). Called with the lock held, while the cell runs."""
    global _line
    if _kernel_shell() is None:
        return None
    try:
        view = _NotebookView()
    except ImportError:
        return None
    _line = Line(view)
    _line.watched = True
    return _line


# ---- where the line is shown --------------------------------------------------------------


class _NotebookView:
    """An ipywidgets HTML line under the running cell, displayed without text/plain. When the cell ends,
    the display becomes the line's last text (plain text, which a saved notebook keeps and shows without
    a kernel) and the widget is closed."""

    closes_with_task = False

    def __init__(self):
        import uuid

        import ipywidgets as w
        from IPython.display import display

        self.widget = w.HTML(layout={"margin": "2px 0"})
        self.display_id = uuid.uuid4().hex
        bundle = self.widget._repr_mimebundle_()
        display({k: v for k, v in bundle.items() if k != "text/plain"}, raw=True, metadata={STATUS_LINE: True},
                display_id=self.display_id)

    def show(self, text: str) -> None:
        import html

        self.widget.value = (f"<span style='font-family:var(--jp-code-font-family,monospace);font-size:12px;"
                             f"color:#555'>⏳ {html.escape(text)}</span>")

    def close(self, text: str) -> None:
        from IPython.display import update_display

        update_display({"text/plain": f"✓ {text}"}, raw=True, metadata={STATUS_LINE: True},
                       display_id=self.display_id)
        self.widget.close()


class _TerminalView:
    """stderr, one line rewritten in place; cleared when the work is done."""

    closes_with_task = True

    def show(self, text: str) -> None:
        sys.stderr.write(CLEAR + text[:110] + "\r")  # the cursor stays at the start: a print overwrites it
        sys.stderr.flush()

    def close(self, text: str) -> None:
        sys.stderr.write(CLEAR)
        sys.stderr.flush()


_cell_hook_installed = False


def _install_close_hook(shell) -> None:
    """Close the open line when a cell ends (once per kernel)."""
    global _cell_hook_installed
    if not _cell_hook_installed:
        shell.events.register("post_run_cell", lambda *_: _close_line())
        _cell_hook_installed = True


def _open_line(for_task: bool) -> Line | None:
    """The open line, or a new one where a line can be shown: under a notebook cell, or on a terminal's
    stderr for a task."""
    global _line
    with _lock:
        if _line is not None and not _line.closed:
            return _line
        if threading.current_thread() is not threading.main_thread():
            return None
        shell = _kernel_shell()
        if shell is not None:
            if not _in_a_cell(shell):
                return None
            try:
                view = _NotebookView()
            except ImportError:
                return None
            _install_close_hook(shell)
        elif for_task and sys.stderr is not None and sys.stderr.isatty():
            view = _TerminalView()
        else:
            return None
        _line = Line(view)
        return _line


def _close_line() -> None:
    """Close the open line (a notebook's at the end of its cell, a terminal's at the end of its task)."""
    global _line
    with _lock:
        if _line is not None:
            _line.close()
            _line = None


# ---- Spark: its start, and what a cell that waits on it waits for ------------------------------


def spark_session(app_name: str = "exactly-once-for-real"):
    """The kernel's SparkSession (stack/session.py); a first start says each step on the status line, with
    how long the last start took here, and from then on the cell watcher says what a long cell waits for."""
    from .stack import session

    if session.running():
        return session.get_spark(app_name)
    watch_cells(kernel_activity)
    with task("starting Spark") as line:
        spark = session.get_spark(app_name, progress=lambda text: line.step(text, why=_SPARK_START_WHY))
    idlesession.watch(lambda: spark_session(app_name))  # its restart after an idle release shows this line too
    return spark


_SPARK_START_WHY = "a JVM start is mostly loading and checking classes, on one core"


def kernel_activity(frame) -> str | None:
    """What the kernel's main thread waits for, from its stack (``frame``, the innermost): the Spark call it
    is in, or the course function, and what Spark is doing now. None when there is nothing to say."""
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    spark_call = _outermost(frames, ("pyspark", "py4j"), "pyspark")
    course_call = _outermost(frames, ("deliverylab",), "deliverylab")
    state = spark_activity()
    if spark_call is not None:
        text = f"waiting for Spark: {_name(spark_call)}()"
        return f"{text} · {state}" if state else f"{text} · {NO_JOB}"
    if course_call is not None and not _name(course_call).startswith("statusline."):
        text = f"in {_name(course_call)}()"
        return f"{text} · {state}" if state else text
    return None


#: What a Spark call with no job running is doing.
NO_JOB = ("no Spark job running now: its driver plans the query or reads and writes a table's log "
          "(the first use of Delta or Kafka in a kernel also loads their code)")


def _outermost(frames, prefixes: tuple[str, ...], named: str):
    """The outermost frame of module ``named`` in the innermost run of frames from ``prefixes``: the
    call the cell (or a course helper) made into that library."""
    found = None
    for frame in frames:
        module = frame.f_globals.get("__name__", "")
        if module.startswith(prefixes):
            if module.startswith(named):
                found = frame
        elif found is not None:
            break
    return found


def _name(frame) -> str:
    module = frame.f_globals.get("__name__", "").split(".")[-1]
    code = frame.f_code
    qualname = getattr(code, "co_qualname", code.co_name)
    if "." not in qualname and module and not module.startswith("pyspark"):
        return f"{module}.{qualname}"
    return qualname.replace(".<locals>", "")


def spark_activity() -> str | None:
    """The kernel's Spark right now: its running job (tasks done) and its streaming queries (status, last
    batch), or None (no session, nothing running)."""
    from .stack import session

    spark = session._session
    if spark is None:
        return None
    try:
        if not session.running():
            return None
        parts = [_job_line(spark)] + [_query_line(q) for q in list(spark.streams.active)[:2]]
    except Exception:  # noqa: BLE001 - Spark stopping or gone: nothing to say
        return None
    return " · ".join(p for p in parts if p) or None


def _job_line(spark) -> str:
    tracker = spark.sparkContext.statusTracker()
    jobs = sorted(tracker.getActiveJobsIds())
    if not jobs:
        return ""
    stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
    total = sum(s.numTasks for s in stages if s)
    done = sum(s.numCompletedTasks for s in stages if s)
    name = _job_description(spark, jobs[-1])
    more = f" (and {len(jobs) - 1} more)" if len(jobs) > 1 else ""
    return f"Spark job {jobs[-1]}{more}{name}: {done} of {total} tasks done"


def _job_description(spark, job_id: int) -> str:
    """A job's description when the code that ran it gave one (Delta names its jobs), else ''."""
    try:
        described = spark.sparkContext._jsc.sc().statusStore().job(job_id).description()
        text = described.get() if described.isDefined() else ""
    except Exception:  # noqa: BLE001 - an internal API: without it the line just has no name
        return ""
    text = " ".join(str(text).split())
    return f" '{text[:60]}{'…' if len(text) > 60 else ''}'" if text else ""


def _query_line(query) -> str:
    status = query.status or {}
    progress = query.lastProgress
    batch = f", last batch {progress['batchId']}" if progress else ", no batch finished yet"
    return f"query {query.name or str(query.id)[:8]}: {status.get('message', '?')}{batch}"
