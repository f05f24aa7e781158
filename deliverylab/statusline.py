"""One line that says what a long cell is doing right now, rewritten in place while it runs.

    from deliverylab import statusline

    with statusline.task("guarantee matrix", total=4) as line:   # a named piece of work with a count
        ...
        line.done("at_least_once: at-least-once")                   # 1 of 4 done
    statusline.say("at_least_once: crashed at after_sink_write")   # from anywhere, any thread

The crash lab's moves call ``say`` themselves (a driver starting, a crash armed, a batch
draining), so every cell that waits on a pipeline shows what it waits for without a line of
its own. In a notebook the line is a small widget under the running cell, with a clock that
ticks while nothing else changes; when the cell ends the display turns into the line's last text
(``✓ ... · 41 s``, plain text that a saved notebook shows without a kernel) and the widget is
closed. Its first display carries the widget's view only, no text/plain, and nbval ignores display
updates, so nbval compares nothing of it; stored, executed and rendered copies drop it by the
``STATUS_LINE`` mark in its metadata. In a terminal (``python -m deliverylab chaos``) a task's line goes to stderr, rewritten
in place, when stderr is a terminal; elsewhere (pytest, a log file) nothing is shown.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time

from .stack.runner import STATUS_LINE

#: How often the clock on an open line moves while nothing else changes.
TICK_S = 1.0
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
        self.closed = False
        self._ticker = threading.Thread(target=self._tick, name="statusline-clock", daemon=True)
        self._ticker.start()

    def text(self) -> str:
        parts = [p for p in (self.title, self.count(), self.message) if p]
        return " · ".join(parts + [f"{time.monotonic() - self.started:.0f} s"])

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

    def step(self, message: str) -> None:
        if self.line is not None:
            with _lock:
                self.line.message = message
                self.line.show()

    def done(self, message: str = "") -> None:
        if self.line is not None:
            with _lock:
                self.line.finished += self.counts
                self.line.message = message or self.line.message
                self.line.show()


@contextlib.contextmanager
def task(title: str, total: int | None = None):
    """Show ``title`` (and ``N of total done``) on the status line while the block runs."""
    line = _open_line(for_task=True)
    if line is None or line.title:
        yield Task(line, counts=False)
        return
    with _lock:
        line.title, line.total, line.finished, line.message = title, total, 0, "starting"
        line.show()
    try:
        yield Task(line)
    finally:
        with _lock:
            if line.view.closes_with_task:
                _close_line()
            else:  # a notebook's line stays until the cell ends
                done = f", {line.finished} of {line.total} done" if line.total is not None else ""
                line.title, line.total, line.message = "", None, f"{title} finished{done}"
                line.show()


def say(message: str) -> None:
    """Say what happens now on the open status line. In a notebook, the cell's own thread opens one
    if there is none yet; elsewhere only a ``task()`` opens one."""
    on_main = threading.current_thread() is threading.main_thread()
    line = _open_line(for_task=False) if on_main else _line
    if line is None or line.closed:
        return
    with _lock:
        line.message = message
        line.show()


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


def _kernel_shell():
    """The IPython shell when this runs in a notebook kernel, else None."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None


def _in_a_cell(shell) -> bool:
    """Is the kernel running a cell? A widget's button runs its code outside any cell: a line
    displayed then would show nowhere, and no cell's end would close it."""
    try:
        parent = shell.kernel.get_parent()
    except Exception:  # noqa: BLE001 - an older kernel: assume a cell
        return True
    return (parent or {}).get("header", {}).get("msg_type") == "execute_request"


def _open_line(for_task: bool) -> Line | None:
    """The open line, or a new one where a line can be shown: under a notebook cell, or on a terminal's
    stderr for a task."""
    global _line, _cell_hook_installed
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
            if not _cell_hook_installed:
                shell.events.register("post_run_cell", lambda *_: _close_line())
                _cell_hook_installed = True
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
