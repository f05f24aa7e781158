"""A crash panel for one pipeline: pick a crash point, crash the driver, restart it, look.

    panel = CrashPanel(pipe); panel             # the widgets
    panel.crash("after_sink_write")             # what the "Crash driver" button does
    panel.restart(); pipe.drain()               # what the "Restart" button does
    panel.before_after()                        # checkpoint (and Delta log) at the crash vs now

The buttons call the same methods as the Python lines, so a notebook that runs top to
bottom and a learner who clicks do the same thing. The status line follows the pipeline:
it is recomputed whenever the pipeline starts, crashes or stops, whoever made it do so
(a button, a line of code, ``lesson.cleanup()``), and after every drain (then without
counting the sink's rows, a Spark read: Refresh counts them), and only the buttons that
make sense now are enabled. Nothing runs in the background. A pipeline shown in a panel
keeps running after ``lesson.complete()``, so the buttons stay live after Run All.

A panel saved with the notebook and shown again without the kernel that made it (the notebook
reopened the next day, or its kernel restarted) can do nothing: its widgets have no kernel to talk
to. JupyterLab marks such widgets ``jupyter-widgets-disconnected``; the panel's own style (:data:`OFFLINE_CSS`)
then hides its saved status line, shows that it is not connected and how to get it back (run its
cell again), and greys its buttons and dropdown out so that they take no clicks.
"""
from __future__ import annotations

from .. import inspector
from ..config import CourseError
from . import crashpoints


#: What a panel shows when it has no kernel (see above). The classes are set on the panel's widgets below.
OFFLINE_TEXT = ("<b>Not connected.</b> This crash panel was saved with the notebook, and the kernel that ran its "
                "pipeline is gone (or was restarted), so its buttons do nothing. To get it back, run this cell "
                "again, after the cells above it (Run &gt; Run All Above Selected Cell, then this cell).")
OFFLINE_CSS = """<style>
.xo-panel .xo-offline { display: none !important; }
.xo-panel.jupyter-widgets-disconnected .xo-offline { display: block !important; color: #D55E00; margin: 2px 0 4px 0; }
.xo-panel.jupyter-widgets-disconnected .xo-status { display: none !important; }
.xo-panel.jupyter-widgets-disconnected button, .xo-panel.jupyter-widgets-disconnected select {
  pointer-events: none; opacity: 0.4; cursor: not-allowed; }
</style>"""


def show_inspector(pipe) -> inspector.TextBlock:
    """The pipeline's checkpoint table (offsets/N, commits/N) and, for a Delta sink, its log.

    Also one line on data files that no commit published, when there are any.
    """
    parts = [f"checkpoint  {pipe.lesson.show_path(pipe.checkpoint)}", str(inspector.format_checkpoint(pipe.checkpoint))]
    log = pipe.output.log_view()
    if log is not None:
        parts += ["", f"{log[0]:<11} {pipe.lesson.show_path(pipe.sink)}", log[1]]
    files = pipe.sink_files()
    if files["leftovers"]:
        shown = ", ".join(files["leftovers"][:3]) + (" ..." if len(files["leftovers"]) > 3 else "")
        parts += ["", f"leftovers   {len(files['leftovers'])} file(s) {files['note']}: {shown}"]
    return inspector.TextBlock("\n".join(parts))


class CrashPanel:
    """Widgets to crash and restart one ``crashlab.Pipeline``, with Python twins for each button."""

    def __init__(self, pipe, point: str = "after_sink_write", count_rows: bool = True, orders: int = 500):
        import ipywidgets as w

        crashpoints.check_point(point, allow_now=True, extra=pipe.variant.crash_points)
        self.pipe = pipe
        self.count_rows = count_rows
        self.orders = orders
        self.messages: list[str] = []
        self.snapshot_at_crash: str | None = None
        points = [*crashpoints.CRASH_POINTS, *pipe.variant.crash_points, crashpoints.CRASH_NOW]
        self.point = w.Dropdown(options=points, value=point,
                                description="crash at", style={"description_width": "initial"})
        self.crash_button = w.Button(description="Crash driver", button_style="danger", icon="bolt")
        self.restart_button = w.Button(description="Restart", button_style="success", icon="play")
        self.refresh_button = w.Button(description="Refresh", icon="refresh")
        self.status = w.HTML()
        self.status.add_class("xo-status")
        self.offline = w.HTML(OFFLINE_CSS + OFFLINE_TEXT)  # shown only without a kernel (see above)
        self.offline.add_class("xo-offline")
        self.output = w.Output(layout={"border": "1px solid #ddd", "min_height": "2em"})
        self.crash_button.on_click(lambda _: self._guarded(self.crash))
        self.restart_button.on_click(lambda _: self._guarded(self.restart))
        self.refresh_button.on_click(lambda _: self._guarded(self.refresh))
        self.widget = w.VBox([self.offline,
                              w.HBox([self.point, self.crash_button, self.restart_button, self.refresh_button]),
                              self.status, self.output])
        self.widget.add_class("xo-panel")
        self._busy_now = False
        pipe.in_a_panel = True  # lesson.complete() leaves it running
        pipe.on_change(self.refresh)
        self.refresh()

    # ---- the Python twins of the buttons ----------------------------------------
    def crash(self, point: str | None = None):
        """Crash the driver at ``point`` (default: the dropdown's choice). Returns the crashlab.Crash."""
        point = crashpoints.check_point(point or self.point.value, allow_now=True, extra=self.pipe.variant.crash_points)
        self.point.value = point
        with self._busy():
            crash = self.pipe.crash(point, orders=self.orders)
            self.snapshot_at_crash = str(show_inspector(self.pipe))
            self.say(crash.line())
            self.say(inspector.restart_note(inspector.checkpoint_table(self.pipe.checkpoint)))
        self.refresh()
        return crash

    def restart(self):
        """Restart the driver from its checkpoint (or start it, if it never ran). Returns the pipeline."""
        with self._busy():
            if self.pipe.starts:
                self.pipe.restart()
                self.say(f"restarted: run {self.pipe.starts} of {self.pipe.name}")
            else:
                self.pipe.start()
                self.say(f"started: {self.pipe.name}")
        self.refresh()
        return self.pipe

    def refresh(self, rows: bool = True) -> str:
        """Recompute the status line (and, unless ``rows=False``, the rows in the sink) and which buttons
        apply. Returns it."""
        line = self.pipe.status_line(rows=rows and self._rows_countable())
        first, _, rest = line.partition("\n")
        running = self.pipe.running
        colour = "#009E73" if running else "#D55E00" if ("crashed" in first or "failed" in first) else "#555"
        hint = "" if running else (" — press Restart to run it again" if self.pipe.starts else " — press Start")
        html = f"<b style='color:{colour}'>{_escape(first)}</b>{_escape(hint)}"
        if rest:
            html += f"<pre style='margin:0;color:#D55E00'>{_escape(rest)}</pre>"
        self.status.value = html
        if not self._busy_now:
            self.crash_button.disabled = not running
            self.restart_button.disabled = running
            self.restart_button.description = "Restart" if self.pipe.starts else "Start"
        return line

    def show_inspector(self):
        """The checkpoint (and Delta log) as they are now."""
        return show_inspector(self.pipe)

    def before_after(self, side_by_side: bool = False):
        """The inspector view right after the last crash next to the view now (after restart and drain)."""
        if self.snapshot_at_crash is None:
            raise CourseError("No crash yet: crash the driver first (panel.crash(...)), then restart and drain it.")
        return inspector.show_before_after(self.snapshot_at_crash, str(show_inspector(self.pipe)), side_by_side)

    # ---- helpers -------------------------------------------------------------------
    def say(self, text: str) -> None:
        """Add a line to the panel's message area."""
        self.messages.append(text)
        self.output.append_stdout(text + "\n")

    def _rows_countable(self) -> bool:
        # Reading a Parquet or Delta sink needs Spark; count only once the sink exists.
        return self.count_rows and (self.pipe.output.reads_without_spark or self.pipe.output.exists())

    def _guarded(self, action) -> None:
        """Run a button's action; a CourseError becomes a message instead of a traceback."""
        try:
            action()
        except CourseError as err:
            self.say(f"error: {err}")
            self.refresh()

    class _Busy:
        """All buttons off while an action runs; afterwards refresh() enables those that apply."""

        def __init__(self, panel):
            self.panel = panel

        def __enter__(self):
            self.panel._busy_now = True
            for b in (self.panel.crash_button, self.panel.restart_button, self.panel.refresh_button):
                b.disabled = True

        def __exit__(self, *exc):
            self.panel._busy_now = False
            self.panel.refresh_button.disabled = False
            self.panel.refresh()
            return False

    def _busy(self):
        return self._Busy(self)

    # ---- notebook display -------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"<CrashPanel {self.pipe.name}: {self.refresh().splitlines()[0]}>"


def _escape(text: str) -> str:
    import html

    return html.escape(text)
