"""Executing a notebook: only checked outputs are kept, and an unexpected error saves nothing."""
import nbformat
import pytest

from deliverylab import CourseError
from deliverylab.stack import runner


def notebook(*cells):
    nb = nbformat.v4.new_notebook()
    for source, tags, outputs in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = tags
        cell.outputs = [nbformat.from_dict(o) for o in outputs]
        nb.cells.append(cell)
    return nb


ERROR = {"output_type": "error", "ename": "CourseError", "evalue": "No batch reached mid_sink_write", "traceback": []}
PRINTED = {"output_type": "stream", "name": "stdout", "text": "verdict: exactly-once\n"}


def test_an_error_in_an_ordinary_cell_is_unexpected():
    nb = notebook(("print(1)", ["nbval-check-output"], [PRINTED]), ("crash()", ["nbval-check-output"], [ERROR]))
    assert runner.unexpected_errors(nb) == ["cell 2: CourseError: No batch reached mid_sink_write"]


def test_a_todo_stub_may_raise():
    nb = notebook(("todo('x')", ["raises-exception"], [ERROR]))
    assert runner.unexpected_errors(nb) == []


def test_execute_refuses_to_save_a_notebook_whose_cell_raised(tmp_path, monkeypatch):
    path = tmp_path / "nb.ipynb"
    nbformat.write(notebook(("print(1)", [], [])), str(path))
    before = path.read_text()
    monkeypatch.setattr(runner, "run", lambda p, t: notebook(("crash()", ["nbval-check-output"], [ERROR])))
    with pytest.raises(CourseError, match="was not saved: cell 1: CourseError"):
        runner.execute(str(path))
    assert path.read_text() == before


def test_checked_outputs_are_kept_and_others_cleared():
    nb = runner.strip_unchecked(notebook(("print(1)", ["nbval-check-output"], [PRINTED]), ("print(2)", [], [PRINTED])))
    assert [len(c.outputs) for c in nb.cells] == [1, 0]


def test_main_answers_help_and_a_missing_notebook_with_the_usage_line(capsys, tmp_path):
    assert runner.main(["execute", "--help"]) == 0
    assert runner.main(["execute", str(tmp_path / "nope.ipynb")]) == 2
    printed = capsys.readouterr().out
    assert printed.count("usage: python -m deliverylab notebooks execute|strip") == 2
    assert "no such notebook" in printed and "Traceback" not in printed
