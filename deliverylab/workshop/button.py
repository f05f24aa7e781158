"""The "Reset lesson" button under a notebook's setup cell (``deliverylab.setup`` shows it).

One click does what ``lesson.reset()`` does: stop the lesson's streams and pipelines, delete
its topics, tables and checkpoints, and nothing else. Useful in class when a lesson went
wrong: a learner is back at a clean start in seconds, without restarting the kernel.

The button is shown only in a running kernel, and without a ``text/plain`` copy of itself:
nbval compares the plain text of a checked cell's outputs, and a widget's text changes from
one ipywidgets release to the next. JupyterLab shows the button; a saved notebook shows nothing.
"""
from __future__ import annotations

RESET_HELP = "Stop this lesson's streams and pipelines and delete its topics, tables and checkpoints"


def in_kernel() -> bool:
    """True inside a Jupyter kernel (not in plain Python, a test or a script)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def reset_widget(lesson):
    """The button and the place where the reset reports what it did."""
    import ipywidgets as w

    button = w.Button(description="Reset lesson", icon="undo", tooltip=RESET_HELP)
    report = w.Output()

    def clicked(_button=None) -> None:
        button.disabled = True
        report.clear_output()
        with report:
            try:
                lesson.reset()
                print("Run the lesson's cells again, from the one after the setup cell.")
            except Exception as error:  # noqa: BLE001 - shown to the learner in one line
                print(f"reset failed: {error}")
        button.disabled = False

    button.on_click(clicked)
    return w.VBox([button, report])


def show_reset_button(lesson) -> bool:
    """Display the button under the running cell (kernel only). Returns True if it was shown."""
    if not in_kernel():
        return False
    from IPython.display import display

    try:
        bundle = reset_widget(lesson)._repr_mimebundle_()
    except Exception:  # noqa: BLE001 - no widgets here (an old front end): lesson.reset() still works
        return False
    bundle.pop("text/plain", None)  # see the module's docstring
    display(bundle, raw=True)
    return True
