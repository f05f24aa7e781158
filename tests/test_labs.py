"""labs.py: solutions become labs with todo() stubs; labs check catches drift."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from deliverylab import labs
from deliverylab.checks import LabTodo
from deliverylab.config import CourseError

SETUP = "from deliverylab.checks import Checks, todo"


def stdout(text: str):
    return new_output("stream", name="stdout", text=text)


def solution_notebook():
    return new_notebook(cells=[
        new_markdown_cell("# Lab 01"),
        new_code_cell(SETUP, execution_count=1),
        new_code_cell("# NBVAL_CHECK_OUTPUT\nprint('ready')", execution_count=2, outputs=[stdout("ready\n")]),
        new_code_cell("sent = [1, 2, 3]\nsent", execution_count=3,
                      outputs=[new_output("execute_result", data={"text/plain": "[1, 2, 3]"}, execution_count=3)]),
        new_code_cell(
            "received = [1, 3]\n"
            "# BEGIN SOLUTION\n"
            "# TODO: find the orders that never arrived\n"
            "lost = sorted(set(sent) - set(received))\n"
            "# END SOLUTION\n"
            "print(lost)",
            execution_count=4, outputs=[stdout("[2]\n")],
        ),
        new_code_cell(
            "def handle(batch):\n"
            "    if batch:\n"
            "        # BEGIN SOLUTION\n"
            "        return len(batch)\n"
            "        # END SOLUTION",
            execution_count=5,
        ),
        new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(lost)", execution_count=6, outputs=[stdout("[2]\n")],
                      metadata={"tags": ["nbval-check-output"]}),
    ])


def tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


# --------------------------------------------------------------------------- build_lab


def test_blocks_become_stubs_at_the_begin_lines_indentation():
    lab = labs.build_lab(solution_notebook())

    assert lab.cells[4].source == (
        "received = [1, 3]\n"
        "# TODO: find the orders that never arrived\n"
        'todo("find the orders that never arrived")\n'
        "print(lost)"
    )
    assert lab.cells[5].source == (
        "def handle(batch):\n"
        "    if batch:\n"
        "        # TODO: write the code for this step\n"
        '        todo("write the code for this step")'
    )


def test_no_solution_code_leaks_into_the_lab():
    text = labs.notebook_text(labs.build_lab(solution_notebook()))
    assert "sorted(set(sent)" not in text
    assert "return len(batch)" not in text
    assert "SOLUTION" not in text


def test_cells_stay_one_to_one_and_the_solution_is_not_changed():
    solution = solution_notebook()
    before = labs.notebook_text(solution)
    lab = labs.build_lab(solution)
    assert labs.notebook_text(solution) == before
    assert [c.cell_type for c in lab.cells] == [c.cell_type for c in solution.cells]
    assert [c.id for c in lab.cells] == [c.id for c in solution.cells]


def test_a_running_stub_stores_the_friendly_labtodo_error():
    cell = labs.build_lab(solution_notebook()).cells[4]
    assert {"raises-exception", "nbval-check-output"} <= set(tags(cell))
    [output] = cell.outputs
    expected = LabTodo("find the orders that never arrived")
    assert output.output_type == "error"
    assert output.ename == "LabTodo"
    assert output.evalue == str(expected)
    assert output.traceback == [str(expected)]
    assert cell.execution_count is not None  # nbval rejects stored outputs of an unrun cell


def test_the_generated_stub_raises_labtodo_when_run():
    cell = labs.build_lab(solution_notebook()).cells[4]
    from deliverylab.checks import todo

    with pytest.raises(LabTodo, match="find the orders that never arrived"):
        exec(cell.source, {"todo": todo, "sent": [1]})


def test_a_stub_inside_a_function_stores_no_output_and_is_not_output_checked():
    cell = labs.build_lab(solution_notebook()).cells[5]
    assert cell.outputs == []
    assert "raises-exception" in tags(cell)
    assert "nbval-check-output" not in tags(cell)


def test_cells_after_the_first_stub_lose_outputs_and_output_checks():
    cell = labs.build_lab(solution_notebook()).cells[6]
    assert cell.outputs == [] and cell.execution_count is None
    assert tags(cell) == ["raises-exception"]
    assert "NBVAL_CHECK_OUTPUT" not in cell.source
    assert cell.source == "print(lost)"


def test_cells_before_the_first_stub_keep_only_checked_outputs():
    lab = labs.build_lab(solution_notebook())
    assert lab.cells[2].outputs == [stdout("ready\n")]
    assert lab.cells[3].outputs == [] and lab.cells[3].execution_count is None


def test_metadata_names_the_solution():
    lab = labs.build_lab(solution_notebook(), source="solutions/01-x-lab.ipynb")
    assert lab.metadata["deliverylab"] == {"generated_from": "solutions/01-x-lab.ipynb"}


def test_quotes_in_todo_text_give_valid_python():
    code, stubs = labs.replace_blocks('# BEGIN SOLUTION\n# TODO: say "hi" \\ bye\nx = 1\n# END SOLUTION')
    assert stubs[0].text == 'say "hi" \\ bye'
    compile(code, "cell", "exec")


@pytest.mark.parametrize("code, complaint", [
    ("x = 1\n# END SOLUTION", "END SOLUTION on line 2 has no BEGIN"),
    ("# BEGIN SOLUTION\nx = 1", "BEGIN SOLUTION on line 1 is never closed"),
    ("# BEGIN SOLUTION\n# BEGIN SOLUTION\nx = 1\n# END SOLUTION", "cannot nest"),
    ("# BEGIN SOLUTIONS\nx = 1\n# END SOLUTION", "not spelt exactly"),
])
def test_unbalanced_markers_name_file_and_cell(code, complaint):
    solution = new_notebook(cells=[new_markdown_cell("hi"), new_code_cell(SETUP), new_code_cell(code)])
    with pytest.raises(CourseError) as caught:
        labs.build_lab(solution, source="solutions/01-x-lab.ipynb")
    message = str(caught.value)
    assert "solutions/01-x-lab.ipynb, cell 3" in message
    assert complaint in message


def test_a_lab_without_the_todo_import_is_rejected():
    solution = new_notebook(cells=[new_code_cell("import os"), new_code_cell("# BEGIN SOLUTION\nx = 1\n# END SOLUTION")])
    with pytest.raises(CourseError, match="cell 2.*from deliverylab.checks import todo"):
        labs.build_lab(solution, source="solutions/x.ipynb")


@pytest.mark.parametrize("code, expected", [
    ("from deliverylab.checks import todo", True),
    ("from deliverylab.checks import (\n    Checks,\n    todo,\n)", True),
    ("from deliverylab.checks import *", True),
    ("from deliverylab.checks import Checks", False),
    ("from deliverylab.checks import todo_message", False),
    ("# from deliverylab.checks import todo", False),
])
def test_imports_todo(code, expected):
    assert labs.imports_todo(code) is expected


# --------------------------------------------------------------------------- files


def make_project(tmp_path: Path, notebook=None, name="01-three-guarantees-lab.ipynb") -> Path:
    (tmp_path / "solutions").mkdir()
    nbformat.write(notebook or solution_notebook(), tmp_path / "solutions" / name)
    return tmp_path


def test_build_writes_labs_and_check_then_passes(tmp_path):
    root = make_project(tmp_path)
    written = labs.build_all(root)
    assert written == [root / "labs" / "01-three-guarantees-lab.ipynb"]
    assert written[0].read_text(encoding="utf-8").endswith("}\n")
    assert labs.check_all(root) == []
    assert labs.build_all(root) == []  # nothing changed, nothing rewritten


def test_check_reports_a_hand_edited_lab(tmp_path):
    root = make_project(tmp_path)
    [lab] = labs.build_all(root)
    lab.write_text(lab.read_text(encoding="utf-8").replace("print(lost)", "print(lost)  # mine"), encoding="utf-8")
    [problem] = labs.check_all(root)
    assert "labs/01-three-guarantees-lab.ipynb" in problem
    assert "run python -m deliverylab labs build" in problem


def test_check_reports_missing_and_orphan_labs(tmp_path):
    root = make_project(tmp_path)
    (root / "labs").mkdir()
    nbformat.write(new_notebook(), root / "labs" / "99-stray-lab.ipynb")
    problems = labs.check_all(root)
    assert any("labs/01-three-guarantees-lab.ipynb is missing" in p for p in problems)
    assert any("labs/99-stray-lab.ipynb has no solutions/99-stray-lab.ipynb" in p for p in problems)


def test_check_reports_unbalanced_markers_in_a_solution(tmp_path):
    broken = new_notebook(cells=[new_code_cell(SETUP), new_code_cell("# BEGIN SOLUTION\nx = 1")])
    root = make_project(tmp_path, broken, name="02-anatomy-lab.ipynb")
    [problem] = labs.check_all(root)
    assert "solutions/02-anatomy-lab.ipynb, cell 2" in problem


def test_build_is_deterministic_even_without_cell_ids(tmp_path):
    raw = json.loads(nbformat.writes(solution_notebook()))
    for cell in raw["cells"]:
        del cell["id"]
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "01-x-lab.ipynb").write_text(json.dumps(raw), encoding="utf-8")
    first = labs.plan_lab(tmp_path / "solutions" / "01-x-lab.ipynb", tmp_path).text
    second = labs.plan_lab(tmp_path / "solutions" / "01-x-lab.ipynb", tmp_path).text
    assert first == second
    assert '"id": "cell-1"' in first


def test_a_solution_that_is_not_json_is_named(tmp_path):
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "01-x-lab.ipynb").write_text('{"cells": [\n', encoding="utf-8")
    [problem] = labs.check_all(tmp_path)
    assert "solutions/01-x-lab.ipynb is not valid JSON (line 2" in problem


def test_main_build_and_check(tmp_path, monkeypatch, capsys):
    root = make_project(tmp_path)
    monkeypatch.setattr(labs, "settings", lambda: SimpleNamespace(root=root))

    assert labs.main(["check"]) == 1
    assert "is missing" in capsys.readouterr().out

    assert labs.main(["labs", "build"]) == 0
    assert "labs/01-three-guarantees-lab.ipynb: written (2 TODOs)" in capsys.readouterr().out

    assert labs.main(["check"]) == 0
    assert "labs match their solutions" in capsys.readouterr().out
