"""A lab's unfinished exercises, said in one line: a ``todo(...)`` still in a learner's function is found
from its source before anything runs (no driver boots for it), and in a lab's kernel a cell that uses a
name nobody has set yet shows one line instead of a traceback (as does, on a class broker with logins, a
Kafka client built without the login: :func:`explain_errors`)."""
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


def explain_errors(names: bool = True) -> None:
    """In a notebook's kernel, two errors shown in words: with ``names`` (a lab), a cell that uses a name nobody
    has set yet shows :func:`unset_name_line` instead of a traceback (what a learner meets in the cells after an
    unfinished TODO); and on a class broker with logins, a Kafka client that got no answer (most often one
    built without the login) shows its error's first line and the login's line (stack/loginhint.py). Every
    other error is shown as IPython shows it."""
    import sys

    from .config import settings

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    login = settings().kafka_login
    if shell is None or not (names or login):
        return

    def explained(shell, etype, value, tb, tb_offset=None):
        from .stack import loginhint

        if names and isinstance(value, NameError):
            lines = [unset_name_line(value)]
        elif (line := loginhint.hint(value, login)) is not None:
            first = (str(value).strip().splitlines() or [""])[0][:300]
            lines = [first if first.startswith(etype.__name__) else f"{etype.__name__}: {first}", line]
        else:
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
            return None
        # IPython shows nothing a custom handler returns: show the lines as an error, the way it shows a
        # LabTodo's _render_traceback_ (the cell still counts as failed, so Run All stops there)
        shell._showtraceback(etype, value, lines)
        return lines

    shell.set_custom_exc((Exception,) if login else (NameError,), explained)
