"""Labs are generated from their solutions, so the two can never drift apart.

Authors edit only ``solutions/NN-*-lab.ipynb``. Inside a code cell, the learner's part
is fenced like this::

    # BEGIN SOLUTION
    # TODO: count the orders that never reached the sink      <- optional
    lost = source_ids - sink_ids
    # END SOLUTION

``python -m deliverylab labs build`` writes ``labs/<same name>.ipynb``, where each block
becomes, at the indentation of its BEGIN line::

    # TODO: count the orders that never reached the sink
    todo("count the orders that never reached the sink")

``todo()`` raises ``LabTodo`` (deliverylab.checks), shown as one friendly line. The
notebook must import it before the first block (``from deliverylab.checks import
todo``), or the build stops and says so.

The lab has the same cells as the solution, in the same order, so nbval lines up.
Rules for what each lab cell keeps, because a learner's lab runs with TODOs unfilled:

* Markdown and raw cells are copied unchanged.
* A *stub cell* (one that had a block) gets the tag ``raises-exception``. If its
  ``todo()`` runs when the cell runs (not only inside a ``def``), it also gets
  ``nbval-check-output`` and one stored output: the ``LabTodo`` error exactly as
  Jupyter shows it. So nbval checks that the unfilled lab fails politely. (Authors:
  nothing in such a cell may print before its todo(), or nbval sees extra output.)
* Code cells *before* the first stub cell behave as in the solution: a cell whose
  output nbval checks (tag ``nbval-check-output`` or a ``# NBVAL_CHECK_OUTPUT`` line)
  keeps the solution's output; every other cell is stored without outputs.
* Code cells *after* the first stub cell may fail, since they build on unfinished
  work: they are stored without outputs, lose ``nbval-check-output`` and
  ``# NBVAL_CHECK_OUTPUT`` (their output differs in the lab), and get the tag
  ``raises-exception``, so both nbval and JupyterLab's "Run All" carry on past them.
  Check cells there should pass lambdas to ``Checks`` and then print SKIP lines.

Writing is deterministic (sorted keys, one trailing newline), so ``labs check`` can
compare text and tell when a lab is stale, hand-edited or an orphan.
"""
from __future__ import annotations

import argparse
import ast
import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .checks import GENERIC_TODO, LabTodo
from .config import CourseError, settings

BEGIN_RE = re.compile(r"^(?P<indent>[ \t]*)#[ \t]*BEGIN SOLUTION[ \t]*$")
END_RE = re.compile(r"^[ \t]*#[ \t]*END SOLUTION[ \t]*$")
TODO_RE = re.compile(r"^[ \t]*#[ \t]*TODO:[ \t]*(?P<text>.*?)[ \t]*$")
#: Anything that looks like a marker. A misspelt one would leak the solution, so it is an error.
MARKER_LIKE_RE = re.compile(r"^[ \t]*#+[ \t]*(BEGIN|END)[ \t_-]*SOL", re.IGNORECASE)
IMPORTS_TODO_RE = re.compile(
    r"^[ \t]*from[ \t]+deliverylab\.checks[ \t]+import[ \t]+(?P<names>\([^)]*\)|[^\n]*)", re.MULTILINE
)

STUB_CALL_RE = re.compile(r"^[ \t]*todo\(", re.MULTILINE)

CHECK_TAG, CHECK_MARKER = "nbval-check-output", "NBVAL_CHECK_OUTPUT"
IGNORE_TAG, IGNORE_MARKER = "nbval-ignore-output", "NBVAL_IGNORE_OUTPUT"
RAISES_TAG = "raises-exception"
REBUILD = "run python -m deliverylab labs build"


@dataclass(frozen=True)
class Stub:
    """One replaced block: the line its todo() sits on (0-based, in the lab cell) and its text."""

    line: int
    text: str


# --------------------------------------------------------------------------- one cell


def _problem(source: str, cell_number: int, what: str, fix: str) -> CourseError:
    return CourseError(f"{source}, cell {cell_number}: {what}. {fix}")


def replace_blocks(code: str, *, source: str = "the notebook", cell_number: int = 1) -> tuple[str, list[Stub]]:
    """Replace every BEGIN/END SOLUTION block in one cell's code with a todo() stub.

    Returns the new code and the stubs, in order. Raises CourseError for an END without
    BEGIN, a BEGIN without END, a nested BEGIN, or a misspelt marker.
    """
    lines = code.split("\n")
    out: list[str] = []
    stubs: list[Stub] = []
    open_block: tuple[int, str] | None = None  # (line number, indentation) of an open BEGIN
    block: list[str] = []
    for number, line in enumerate(lines, start=1):
        begin, end = BEGIN_RE.match(line), END_RE.match(line)
        if not (begin or end) and MARKER_LIKE_RE.match(line):
            raise _problem(source, cell_number, f"line {number} looks like a solution marker but is not spelt exactly",
                           "Write it as '# BEGIN SOLUTION' or '# END SOLUTION' on a line of its own")
        if begin:
            if open_block:
                raise _problem(source, cell_number, f"BEGIN SOLUTION on line {number} comes before the END SOLUTION "
                               f"of the block opened on line {open_block[0]}",
                               "Blocks cannot nest: close the first block with '# END SOLUTION' first")
            open_block, block = (number, begin.group("indent")), []
        elif end:
            if not open_block:
                raise _problem(source, cell_number, f"END SOLUTION on line {number} has no BEGIN SOLUTION before it",
                               "Add '# BEGIN SOLUTION' where the learner's part starts, or delete this line")
            text = _todo_text(block)
            indent = open_block[1]
            out.append(f"{indent}# TODO: {text}")
            stubs.append(Stub(line=len(out), text=text))
            out.append(f"{indent}todo({json.dumps(text, ensure_ascii=False)})")
            open_block = None
        elif open_block:
            block.append(line)
        else:
            out.append(line)
    if open_block:
        raise _problem(source, cell_number, f"BEGIN SOLUTION on line {open_block[0]} is never closed",
                       "Add '# END SOLUTION' after the last line of the learner's part, in the same cell")
    return "\n".join(out), stubs


def _todo_text(block: list[str]) -> str:
    """The text of an optional '# TODO: ...' line right after BEGIN, else a generic one."""
    if block:
        found = TODO_RE.match(block[0])
        if found and found.group("text"):
            return found.group("text")
    return GENERIC_TODO


def first_running_stub(code: str, stubs: list[Stub]) -> Stub | None:
    """The stub whose todo() runs when the cell runs, or None if all sit inside functions.

    IPython magics (lines starting with % or !) are blanked before parsing. If the code
    still does not parse, a stub counts as running when it is not indented.
    """
    if not stubs:
        return None
    parseable = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.split("\n"))
    try:
        tree = ast.parse(parseable)
    except SyntaxError:
        lines = code.split("\n")
        return next((stub for stub in stubs if not lines[stub.line][:1].isspace()), None)
    running_lines = _lines_of_todo_calls_outside_functions(tree)
    return next((stub for stub in stubs if stub.line + 1 in running_lines), None)


def _lines_of_todo_calls_outside_functions(tree: ast.AST) -> set[int]:
    lines: set[int] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "todo":
            lines.add(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return lines


def imports_todo(code: str) -> bool:
    """True if the code imports todo from deliverylab.checks (directly or with *)."""
    for found in IMPORTS_TODO_RE.finditer(code):
        names = re.sub(r"#[^\n]*", "", found.group("names")).strip("() \t\n")
        imported = [part.split()[0] for part in names.replace("\n", ",").split(",") if part.strip()]
        if "todo" in imported or "*" in imported:
            return True
    return False


def _is_output_checked(cell) -> bool:
    tags = cell.get("metadata", {}).get("tags", [])
    return CHECK_TAG in tags or any(_is_marker(line, CHECK_MARKER) for line in cell.source.split("\n"))


def _is_marker(line: str, marker: str) -> bool:
    """True for an nbval comment marker line such as '# NBVAL_CHECK_OUTPUT'."""
    stripped = line.strip()
    return stripped.startswith("#") and stripped.lstrip("#").strip() == marker


def _drop_markers(cell, marker: str) -> None:
    cell.source = "\n".join(line for line in cell.source.split("\n") if not _is_marker(line, marker))


def _set_tags(cell, add: tuple[str, ...] = (), remove: tuple[str, ...] = ()) -> None:
    tags = [tag for tag in cell.metadata.get("tags", []) if tag not in remove]
    tags += [tag for tag in add if tag not in tags]
    if tags:
        cell.metadata["tags"] = tags
    else:
        cell.metadata.pop("tags", None)


def _clear_outputs(cell) -> None:
    cell.outputs = []
    cell.execution_count = None


def _todo_error_output(text: str):
    error = LabTodo(text)
    return nbformat.v4.new_output("error", ename="LabTodo", evalue=str(error), traceback=error._render_traceback_())


# --------------------------------------------------------------------------- one notebook


def build_lab(solution_nb, source: str | None = None):
    """The lab for a solution notebook (a new NotebookNode; the input is not changed).

    ``source`` names the solution in error messages and in the lab's metadata
    (``deliverylab.generated_from``), for example ``"solutions/01-three-guarantees-lab.ipynb"``.
    """
    where = source or "the notebook"
    lab = copy.deepcopy(solution_nb)
    seen_stub = False
    code_before = []  # code of the cells before the first stub cell, to find the todo import
    for number, cell in enumerate(lab.cells, start=1):
        if cell.cell_type != "code":
            continue
        new_code, stubs = replace_blocks(cell.source, source=where, cell_number=number)
        if stubs:
            if not seen_stub:
                code_before += new_code.split("\n")[: stubs[0].line]
                _require_todo_import("\n".join(code_before), where, number)
            _make_stub_cell(cell, new_code, stubs)
            seen_stub = True
        elif seen_stub:
            _make_after_todo_cell(cell)
        else:
            code_before.append(cell.source)
            if not _is_output_checked(cell):
                _clear_outputs(cell)
    for number, cell in enumerate(lab.cells, start=1):
        if cell.cell_type == "code" and cell.outputs and cell.execution_count is None:
            cell.execution_count = number  # nbval refuses stored outputs of a cell that never ran
    if source:
        lab.metadata["deliverylab"] = {"generated_from": source}
    return lab


def _require_todo_import(code: str, where: str, cell_number: int) -> None:
    if not imports_todo(code):
        raise CourseError(
            f"{where}, cell {cell_number}: this cell has the first TODO block, but no cell before it "
            "imports todo. Add 'from deliverylab.checks import todo' to the setup cell."
        )


def _make_stub_cell(cell, new_code: str, stubs: list[Stub]) -> None:
    cell.source = new_code
    _clear_outputs(cell)
    running = first_running_stub(new_code, stubs)
    if running is None:  # todo() only runs when a function defined here is called
        _drop_markers(cell, CHECK_MARKER)
        _set_tags(cell, add=(RAISES_TAG,), remove=(CHECK_TAG,))
        return
    _drop_markers(cell, IGNORE_MARKER)
    _set_tags(cell, add=(RAISES_TAG, CHECK_TAG), remove=(IGNORE_TAG,))
    cell.outputs = [_todo_error_output(running.text)]


def _make_after_todo_cell(cell) -> None:
    _drop_markers(cell, CHECK_MARKER)
    _clear_outputs(cell)
    _set_tags(cell, add=(RAISES_TAG,), remove=(CHECK_TAG,))


def count_todos(lab_nb) -> int:
    """How many todo() stubs a generated lab holds."""
    return sum(len(STUB_CALL_RE.findall(cell.source)) for cell in lab_nb.cells if cell.cell_type == "code")


# --------------------------------------------------------------------------- files


def read_notebook(path: Path, root: Path | None = None):
    """Read a notebook; cells without an id get a stable one, so builds stay deterministic."""
    label = _relative(path, root)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CourseError(f"{label} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}). "
                          "Open it in JupyterLab and save it again, or fix it by hand.") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise CourseError(f"{label} is not a Jupyter notebook (no list of cells). Save it from JupyterLab.")
    if (raw.get("nbformat") or 0, raw.get("nbformat_minor") or 0) >= (4, 5):
        for index, cell in enumerate(raw["cells"], start=1):
            if isinstance(cell, dict):
                cell.setdefault("id", f"cell-{index}")
    return nbformat.reads(json.dumps(raw), as_version=4)


def notebook_text(nb) -> str:
    """The exact text a notebook file gets: nbformat's JSON with one trailing newline."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def _relative(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return str(path)


def _solutions(root: Path) -> list[Path]:
    return sorted((root / "solutions").glob("*.ipynb"))


@dataclass(frozen=True)
class PlannedLab:
    """A lab as build would write it."""

    solution: Path
    path: Path
    text: str
    todos: int


def plan_lab(solution: Path, root: Path) -> PlannedLab:
    """Build the lab for one solution file in memory."""
    lab = build_lab(read_notebook(solution, root), source=_relative(solution, root))
    return PlannedLab(solution, root / "labs" / solution.name, notebook_text(lab), count_todos(lab))


def _is_current(planned: PlannedLab) -> bool:
    return planned.path.exists() and planned.path.read_text(encoding="utf-8") == planned.text


def _write(plan: list[PlannedLab]) -> list[Path]:
    written = []
    for planned in plan:
        if _is_current(planned):
            continue
        planned.path.parent.mkdir(parents=True, exist_ok=True)
        planned.path.write_text(planned.text, encoding="utf-8", newline="\n")
        written.append(planned.path)
    return written


def build_all(root: Path) -> list[Path]:
    """Write labs/<name>.ipynb for every solutions/<name>.ipynb; return the labs written.

    Every lab is built in memory first, so one bad solution leaves all labs untouched.
    A lab whose text would not change is not rewritten (and not returned).
    """
    return _write([plan_lab(solution, root) for solution in _solutions(root)])


def check_all(root: Path) -> list[str]:
    """Problems with the labs, one sentence each; an empty list means all is well."""
    problems = []
    solutions = _solutions(root)
    for solution in solutions:
        try:
            planned = plan_lab(solution, root)
        except CourseError as error:
            problems.append(str(error))
            continue
        label = _relative(planned.path, root)
        if not planned.path.exists():
            problems.append(f"{label} is missing: {REBUILD}")
        elif not _is_current(planned):
            problems.append(f"{label} differs from what {_relative(solution, root)} generates "
                            f"(labs are generated; edit the solution instead): {REBUILD}")
    names = {solution.name for solution in solutions}
    for lab in sorted((root / "labs").glob("*.ipynb")):
        if lab.name not in names:
            problems.append(f"{_relative(lab, root)} has no solutions/{lab.name} to be generated from: "
                            "move it to solutions/ and add solution markers, or delete it")
    return problems


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    """``python -m deliverylab labs build|check``."""
    args = list(argv or [])
    if args[:1] == ["labs"]:
        args = args[1:]
    parser = argparse.ArgumentParser(prog="python -m deliverylab labs",
                                     description="Generate labs/ from solutions/, or check that they match.")
    parser.add_argument("command", choices=["build", "check"])
    command = parser.parse_args(args).command
    root = settings().root
    try:
        return _build(root) if command == "build" else _check(root)
    except CourseError as error:
        print(error)
        return 1


def _build(root: Path) -> int:
    plan = [plan_lab(solution, root) for solution in _solutions(root)]
    if not plan:
        print("no notebooks in solutions/: nothing to build")
        return 0
    written = set(_write(plan))
    for planned in plan:
        state = "written" if planned.path in written else "up to date"
        todos = f"{planned.todos} TODO" + ("" if planned.todos == 1 else "s")
        print(f"{_relative(planned.path, root)}: {state} ({todos})")
    return 0


def _check(root: Path) -> int:
    problems = check_all(root)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"labs match their solutions ({len(_solutions(root))} notebooks)")
    return 1 if problems else 0
