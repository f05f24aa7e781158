"""The crash panel's widgets without a driver: a stand-in pipeline, as the browser test's."""
from types import SimpleNamespace

from deliverylab.crashlab import panel as panels


class StandIn:
    variant = SimpleNamespace(crash_points=())
    output = SimpleNamespace(reads_without_spark=True, exists=lambda: True)
    running, starts, in_a_panel = True, 1, False

    def on_change(self, callback):
        self.callback = callback

    def status_line(self, rows=True):
        return "stand_in: running"


def test_a_panel_carries_what_it_shows_without_a_kernel():
    """Saved with the notebook and shown without its kernel, JupyterLab marks the panel's widgets
    jupyter-widgets-disconnected: its style then shows the note, hides the saved status and greys out the
    buttons (tests/browser/test_widgets_in_browser.py sees it in Chromium)."""
    shown = panels.CrashPanel(StandIn())
    assert "xo-panel" in shown.widget._dom_classes
    assert shown.widget.children[0] is shown.offline and "xo-offline" in shown.offline._dom_classes
    assert "xo-status" in shown.status._dom_classes
    assert "Not connected" in shown.offline.value and "run this cell" in shown.offline.value
    css = panels.OFFLINE_CSS
    assert ".xo-panel.jupyter-widgets-disconnected .xo-offline { display: block" in css
    assert "pointer-events: none" in css and ".xo-panel .xo-offline { display: none" in css
    assert not shown.crash_button.disabled and shown.restart_button.disabled  # live: what applies is enabled
