"""A lab's unfinished exercises, said in one line: a ``todo(...)`` still in a learner's function is found
from its source before anything runs (no driver boots for it), and in a lab's kernel a cell that uses a
name nobody has set yet shows one line instead of a traceback."""
from __future__ import annotations

from typing import Callable

from .checks import GENERIC_TODO, LabTodo


def unfinished_todo(function: Callable) -> str | None:
    """The words of a ``todo(...)`` call still in ``function``'s code, read from its source without
    running it; None when there is none (or the source cannot be read)."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "todo":
            words = node.args[0] if node.args else None
            return words.value if isinstance(words, ast.Constant) and isinstance(words.value, str) else GENERIC_TODO
    return None


def raise_if_todo(function: Callable) -> None:
    """Raise the TODO's LabTodo at once, before a driver boots or a table is made for a function that
    would only raise it there (a learner sees the same one line, seconds sooner)."""
    words = unfinished_todo(function)
    if words is not None:
        raise LabTodo(words)


def unset_name_line(error: NameError) -> str:
    """One line for a NameError in a lab: the name may belong to a cell not run yet, a TODO not done, or a typo."""
    name = f"`{error.name}`" if getattr(error, "name", None) else "a name"
    return (f"NameError: {name} is not defined. Is it set by a cell above that has not run yet (or by a TODO "
            "not done yet), or is it misspelt?")


def explain_name_errors() -> None:
    """In a lab's kernel: a cell that uses a name nobody has set yet shows :func:`unset_name_line`
    instead of a traceback (what a learner meets in the cells after an unfinished TODO)."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return

    def one_line(shell, etype, value, tb, tb_offset=None):
        lines = [unset_name_line(value)]
        # IPython shows nothing a custom handler returns: show the line as an error, the way it shows a
        # LabTodo's _render_traceback_ (the cell still counts as failed, so Run All stops there)
        shell._showtraceback(etype, value, lines)
        return lines

    shell.set_custom_exc((NameError,), one_line)
