"""`make update` on a learner's clone whose copy of lesson 00 was run but not edited: the course's update comes
in and nothing of the learner's run is lost (stack/workcopy.py), and the command says what it replaced and kept.

The clone is of a repository made from this working tree (its tracked files and new ones), so the Makefile and
the code under test are the ones here. It uses this project's venvs (``PY=``, and module 10's ``ICEBERG_PY=``) and
resolved jars (``DELIVERYLAB_JARS``, through links), and stamps of its own for ``$(INSTALLED)`` and
``$(ICEBERG_INSTALLED)``, so `make update`'s setup step runs for real and finds everything in place: no network, no
pip, nothing of this project's venvs touched.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSON = "notebooks/00-setup-and-tour.ipynb"

pytestmark = pytest.mark.stack


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args], cwd=cwd,
                          capture_output=True, text=True, check=True)


def course_repository(origin: Path) -> None:
    """This working tree's files (tracked and new, not ignored), committed in a repository of their own."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for relative in filter(None, listed):
        source = ROOT / relative
        if source.is_file():
            (origin / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, origin / relative)
    git(origin, "init", "-q")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "the course")


def jars_here(folder: Path) -> None:
    """This project's resolved jars and class archives, linked into ``folder`` (DELIVERYLAB_JARS)."""
    real = ROOT / ".state" / "jars"
    folder.mkdir()
    for kind in ("spark", "spark41", "kafka"):
        if not (real / kind / ".resolved").exists():
            pytest.skip(f"the {kind} jars are not resolved here: `make setup` resolves them")
        (folder / kind).symlink_to(real / kind)
    for archive in [*real.glob("spark-classes-*.jsa"), *real.glob("spark41-classes-*.jsa")]:
        (folder / archive.name).symlink_to(archive)


ICEBERG_PY = ROOT / ".venv-iceberg" / "bin" / "python"


def make_update(clone: Path, stamp: Path, env: dict) -> subprocess.CompletedProcess:
    stamp.touch()  # $(INSTALLED): newer than requirements.txt and pyproject.toml, so the venv counts as installed
    return subprocess.run(["make", "--no-print-directory", "update", f"INSTALLED={stamp}", f"ICEBERG_INSTALLED={stamp}",
                           f"PY={ROOT / '.venv' / 'bin' / 'python'}", f"ICEBERG_PY={ICEBERG_PY}"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=900)


def run_without_editing(path: Path) -> int:
    """What a Run All and a save leave in a copy: an output and a run number in every code cell."""
    nb = nbformat.read(str(path), as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code, start=1):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"my run, cell {number}\n")]
        cell.execution_count = number
    nbformat.write(nb, str(path))
    return len(code)


def change_lesson(origin: Path, change) -> None:
    nb = nbformat.read(str(origin / LESSON), as_version=4)
    change(nb)
    nbformat.write(nb, str(origin / LESSON))
    git(origin, "commit", "-qam", "a course update")


def test_make_update_keeps_the_outputs_of_a_copy_that_was_run_and_not_edited(tmp_path):
    origin, clone = tmp_path / "origin", tmp_path / "clone"
    origin.mkdir()
    course_repository(origin)
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    jars_here(tmp_path / "jars")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    env.update(DELIVERYLAB_JARS=str(tmp_path / "jars"), DELIVERYLAB_STATE=str(tmp_path / "state"))
    python = str(ROOT / ".venv" / "bin" / "python")
    archive = subprocess.run([python, "-c", "from deliverylab.stack import classarchive; print(classarchive.path())"],
                             cwd=clone, env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not Path(archive).exists():
        pytest.skip("no class archive for this JDK and these jars here: `make setup` records it")
    if not ICEBERG_PY.exists():
        pytest.skip("module 10's venv (.venv-iceberg) is not set up here: `make setup` builds it")
    archive = subprocess.run([str(ICEBERG_PY), "-c", "from deliverylab.stack import classarchive; print(classarchive.path())"],
                             cwd=clone, env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not Path(archive).exists():
        pytest.skip("no class archive of module 10's kernel here: `make setup` records it")
    subprocess.run([python, "-m", "deliverylab", "mywork"], cwd=clone, env=env, check=True, capture_output=True)
    copy = clone / "my-work" / LESSON
    cells = run_without_editing(copy)

    # an update of the words only: every output of the run is carried over
    change_lesson(origin, lambda nb: nb.cells[0].__setitem__("source", nb.cells[0].source + "\n\nA clearer sentence."))
    done = make_update(clone, tmp_path / "installed", env)
    assert done.returncode == 0, done.stdout + done.stderr
    updated = nbformat.read(str(copy), as_version=4)
    assert updated.cells[0].source.endswith("A clearer sentence.")
    outputs = [cell.outputs[0]["text"] for cell in updated.cells if cell.cell_type == "code"]
    assert outputs == [f"my run, cell {n}\n" for n in range(1, cells + 1)]
    assert (f"replaced my-work/{LESSON} with the course's new version (you had run it, not edited it); "
            f"your outputs of the {cells} cell(s) it did not change are in it") in done.stdout, done.stdout
    assert "Traceback" not in done.stdout + done.stderr

    # an update that changes a code cell: that cell's old output cannot stay, so the whole run is kept beside it
    def change_a_code_cell(nb):
        first = next(cell for cell in nb.cells if cell.cell_type == "code")
        first.source += "\n# a course update"

    change_lesson(origin, change_a_code_cell)
    done = make_update(clone, tmp_path / "installed", env)
    assert done.returncode == 0, done.stdout + done.stderr
    kept = clone / "my-work" / "notebooks" / "00-setup-and-tour (your run before the update).ipynb"
    assert f"your whole earlier run is kept as my-work/notebooks/{kept.name}" in done.stdout, done.stdout
    before = [c.outputs[0]["text"] for c in nbformat.read(str(kept), as_version=4).cells if c.cell_type == "code"]
    assert before == [f"my run, cell {n}\n" for n in range(1, cells + 1)]
    now = [c.outputs for c in nbformat.read(str(copy), as_version=4).cells if c.cell_type == "code"]
    assert now[0] == [] and all(o[0]["text"] == f"my run, cell {n}\n" for n, o in enumerate(now[1:], start=2))
    assert git(clone, "status", "--porcelain").stdout == ""  # the learner's work stays out of git
