"""The learner's copies (my-work/): a Run All never collides with `git pull`, and course updates reach
the copies the learner did not edit, next to the ones they did."""
from __future__ import annotations

import subprocess

import nbformat

from deliverylab.stack import workcopy


def git(cwd, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args], cwd=cwd,
                          capture_output=True, text=True, check=False)


def lesson(text: str):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(f"print({text!r})")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n")]  # stored for nbval
    cell.execution_count = 1
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {text}"), cell]
    return nb


def course(tmp_path):
    """A course repository (the lessons, .gitignore) and a learner's clone of it."""
    origin = tmp_path / "origin"
    for folder in workcopy.FOLDERS:
        (origin / folder).mkdir(parents=True)
    nbformat.write(lesson("lesson 00"), str(origin / "notebooks" / "00-setup-and-tour.ipynb"))
    nbformat.write(lesson("lesson 01"), str(origin / "notebooks" / "01-three-guarantees.ipynb"))
    nbformat.write(lesson("lab 01"), str(origin / "labs" / "01-three-guarantees-lab.ipynb"))
    (origin / ".gitignore").write_text((workcopy.settings().root / ".gitignore").read_text())
    assert git(origin, "init", "-q").returncode == 0
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "the course")
    clone = tmp_path / "clone"
    assert git(tmp_path, "clone", "-q", str(origin), str(clone)).returncode == 0
    return origin, clone


def run_all(path, edit: str | None = None) -> None:
    """What JupyterLab leaves after Run All and a save: outputs, counts, kernel metadata; ``edit`` a cell too."""
    nb = nbformat.read(str(path), as_version=4)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="my run\n")]
    nb.cells[1].execution_count = 7
    if edit:
        nb.cells[1].source = edit
    nbformat.write(nb, str(path))


def test_copies_start_without_stored_outputs_and_stay_out_of_git(tmp_path):
    _, clone = course(tmp_path)
    done = workcopy.refresh(clone, log=lambda m: None)
    assert sorted(done["copied"]) == ["labs/01-three-guarantees-lab.ipynb", "notebooks/00-setup-and-tour.ipynb",
                                      "notebooks/01-three-guarantees.ipynb"]
    copy = nbformat.read(str(clone / "my-work" / "notebooks" / "00-setup-and-tour.ipynb"), as_version=4)
    assert copy.cells[1].outputs == [] and copy.cells[1].execution_count is None  # nothing stale shows
    run_all(clone / "my-work" / "notebooks" / "00-setup-and-tour.ipynb")
    assert git(clone, "status", "--porcelain").stdout == ""  # git sees nothing of the learner's work


def test_git_pull_after_a_run_all_applies_and_updates_reach_the_copies(tmp_path):
    origin, clone = course(tmp_path)
    workcopy.refresh(clone, log=lambda m: None)
    run_all(clone / "my-work" / "notebooks" / "00-setup-and-tour.ipynb")  # run, not edited
    run_all(clone / "my-work" / "notebooks" / "01-three-guarantees.ipynb", edit="print('my own answer')")
    # the course changes both lessons and adds one
    nbformat.write(lesson("lesson 00, corrected"), str(origin / "notebooks" / "00-setup-and-tour.ipynb"))
    nbformat.write(lesson("lesson 01, corrected"), str(origin / "notebooks" / "01-three-guarantees.ipynb"))
    nbformat.write(lesson("lesson 02"), str(origin / "notebooks" / "02-anatomy.ipynb"))
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "a course update")

    pulled = git(clone, "pull", "--ff-only")
    assert pulled.returncode == 0, pulled.stderr

    said = []
    done = workcopy.refresh(clone, log=said.append)
    earlier = "notebooks/00-setup-and-tour (your run before the update).ipynb"
    assert done == {"copied": ["notebooks/02-anatomy.ipynb"], "updated": ["notebooks/00-setup-and-tour.ipynb"],
                    "kept": ["notebooks/01-three-guarantees.ipynb"], "earlier_runs": [earlier]}
    work = clone / "my-work" / "notebooks"
    updated = nbformat.read(str(work / "00-setup-and-tour.ipynb"), as_version=4)
    assert "corrected" in updated.cells[0].source and updated.cells[1].outputs == []  # its one code cell changed
    run = nbformat.read(str(clone / "my-work" / earlier), as_version=4)  # so the whole run is kept beside it
    assert run.cells[1].outputs[0]["text"] == "my run\n"
    assert any("replaced my-work/notebooks/00-setup-and-tour.ipynb" in line and f"kept as my-work/{earlier}" in line
               for line in said), said
    mine = nbformat.read(str(work / "01-three-guarantees.ipynb"), as_version=4)
    assert mine.cells[1].source == "print('my own answer')" and mine.cells[1].outputs  # untouched
    beside = work / "01-three-guarantees (course update).ipynb"
    assert "corrected" in nbformat.read(str(beside), as_version=4).cells[0].source
    assert any("kept your edited my-work/notebooks/01-three-guarantees.ipynb" in line for line in said)
    assert workcopy.refresh(clone, log=lambda m: None) == {"copied": [], "updated": [], "kept": [], "earlier_runs": []}
    assert git(clone, "status", "--porcelain").stdout == ""


def two_cells(text: str, second: str = "print('the same')"):
    nb = lesson(text)
    nb.cells.append(nbformat.v4.new_code_cell(second))
    return nb


def test_an_update_of_a_run_copy_carries_its_outputs_over_and_keeps_the_run_when_a_changed_cell_had_some(tmp_path):
    origin, clone = course(tmp_path)
    nbformat.write(two_cells("lesson 00"), str(origin / "notebooks" / "00-setup-and-tour.ipynb"))
    git(origin, "commit", "-qam", "two cells")
    git(clone, "pull", "-q", "--ff-only")
    workcopy.refresh(clone, log=lambda m: None)
    copy = clone / "my-work" / "notebooks" / "00-setup-and-tour.ipynb"
    nb = nbformat.read(str(copy), as_version=4)
    for cell, text in ((nb.cells[1], "first\n"), (nb.cells[2], "second\n")):  # run, not edited
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        cell.execution_count = 3
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nbformat.write(nb, str(copy))

    # an update that changes only the text around the code: every output is carried over, nothing else kept
    update = two_cells("lesson 00")
    update.cells[0].source = "# lesson 00, better words"
    nbformat.write(update, str(origin / "notebooks" / "00-setup-and-tour.ipynb"))
    git(origin, "commit", "-qam", "words")
    git(clone, "pull", "-q", "--ff-only")
    said = []
    done = workcopy.refresh(clone, log=said.append)
    assert done["updated"] == ["notebooks/00-setup-and-tour.ipynb"] and done["earlier_runs"] == []
    nb = nbformat.read(str(copy), as_version=4)
    assert nb.cells[0].source == "# lesson 00, better words"
    assert [c.outputs[0]["text"] for c in nb.cells[1:]] == ["first\n", "second\n"]
    assert nb.metadata["widgets"]  # the saved widgets those outputs show
    assert said == ["replaced my-work/notebooks/00-setup-and-tour.ipynb with the course's new version (you had "
                    "run it, not edited it); your outputs of the 2 cell(s) it did not change are in it"]

    # then one that changes a code cell: the unchanged cell keeps its output, the whole run is kept beside
    nbformat.write(two_cells("lesson 00", second="print('changed')"), str(origin / "notebooks" / "00-setup-and-tour.ipynb"))
    git(origin, "commit", "-qam", "a code change")
    git(clone, "pull", "-q", "--ff-only")
    done = workcopy.refresh(clone, log=said.append)
    nb = nbformat.read(str(copy), as_version=4)
    assert nb.cells[1].outputs[0]["text"] == "first\n" and nb.cells[2].outputs == []
    kept = clone / "my-work" / done["earlier_runs"][0]
    assert kept.name == "00-setup-and-tour (your run before the update).ipynb"
    assert nbformat.read(str(kept), as_version=4).cells[2].outputs[0]["text"] == "second\n"
    assert git(clone, "status", "--porcelain").stdout == ""


def test_a_copy_never_run_is_replaced_and_says_so(tmp_path):
    origin, clone = course(tmp_path)
    workcopy.refresh(clone, log=lambda m: None)
    nbformat.write(lesson("lesson 00, corrected"), str(origin / "notebooks" / "00-setup-and-tour.ipynb"))
    git(origin, "commit", "-qam", "fix")
    git(clone, "pull", "-q", "--ff-only")
    said = []
    done = workcopy.refresh(clone, log=said.append)
    assert done["updated"] == ["notebooks/00-setup-and-tour.ipynb"] and done["earlier_runs"] == []
    assert said == ["replaced my-work/notebooks/00-setup-and-tour.ipynb with the course's new version "
                    "(you had not run or edited it)"]
