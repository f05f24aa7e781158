"""The learner's own copies of the notebooks, so a course update never collides with their work.

``make lab`` opens JupyterLab on ``my-work/``, which git ignores: copies of ``notebooks/``,
``labs/`` and ``solutions/`` made the first time, without the outputs stored for the tests (a
copy shows what the learner's own run printed, nothing stale). Running, editing and saving a copy
changes nothing git tracks, so ``git pull`` always applies. Each ``make lab`` (and ``make update``,
which pulls first) brings course updates into the copies:

* a notebook the course added is copied;
* a copy whose cells the learner never edited (running it is not editing) is replaced by the
  course's new version, and what the learner's run showed is never lost: each code cell the update
  left as it was gets its outputs back (and the notebook its saved widgets); if a cell that the
  update changed or removed had outputs, the whole earlier copy is also kept next to it, as
  ``NAME (your run before the update).ipynb``;
* a copy the learner edited is kept as it is, and the new version is written next to it as
  ``NAME (course update).ipynb``.

Each change is said in a line: what was copied, replaced (with how many cells' outputs were carried
over), and kept where. ``my-work/.copied.json`` remembers, for each copy, a fingerprint of the cells
it was made from.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..config import settings

#: The learner's copies, under the project's root (in .gitignore).
WORK_DIR = "my-work"
FOLDERS = ("notebooks", "labs", "solutions")
MANIFEST = ".copied.json"
UPDATE_SUFFIX = " (course update)"
EARLIER_RUN_SUFFIX = " (your run before the update)"


def work_dir(root: Path | None = None) -> Path:
    return (root or settings().root) / WORK_DIR


def fingerprint(nb) -> str:
    """What the learner can edit: each cell's type and source (not outputs, ids or metadata)."""
    cells = [[c.get("cell_type"), c.get("source") if isinstance(c.get("source"), str) else "".join(c.get("source", []))]
             for c in nb["cells"]]
    return hashlib.sha256(json.dumps(cells).encode()).hexdigest()


def without_outputs(nb):
    """The notebook as the learner should first see it: no stored outputs, no execution counts."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    return nb


def _source(cell) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def has_run(nb) -> bool:
    """Did the learner run (and save) this copy: does any code cell hold outputs or a run number?"""
    return any(c.get("outputs") or c.get("execution_count") is not None for c in nb.cells if c.cell_type == "code")


def carry_outputs(old, new) -> tuple[int, int]:
    """Give each code cell of ``new`` the outputs of the cell of ``old`` with the same source (in order),
    and ``new`` the widgets ``old`` saved. Returns (cells whose outputs were carried over, cells of
    ``old`` with outputs that ``new`` no longer has: changed or removed by the update)."""
    waiting: dict[str, list] = {}
    for cell in old.cells:
        if cell.cell_type == "code":
            waiting.setdefault(_source(cell), []).append(cell)
    carried = 0
    for cell in new.cells:
        if cell.cell_type != "code" or not waiting.get(_source(cell)):
            continue
        before = waiting[_source(cell)].pop(0)
        cell.outputs, cell.execution_count = before.get("outputs", []), before.get("execution_count")
        carried += bool(cell.outputs)
    left = sum(1 for cells in waiting.values() for cell in cells if cell.get("outputs"))
    if carried and "widgets" in old.metadata:
        new.metadata["widgets"] = old.metadata["widgets"]
    return carried, left


def _free_name(path: Path) -> Path:
    """``path``, or ``NAME 2.ipynb``, ``NAME 3.ipynb``... when it exists already."""
    number, candidate = 2, path
    while candidate.exists():
        candidate = path.with_name(f"{path.stem} {number}{path.suffix}")
        number += 1
    return candidate


def refresh(root: Path | None = None, log=print) -> dict[str, list[str]]:
    """Copy what is new, update what the learner left as it was (their outputs carried over, their earlier
    run kept beside it when the update changed a cell that had outputs), keep what they edited.

    Returns ``{"copied": [...], "updated": [...], "kept": [...], "earlier_runs": [...]}`` (paths under
    my-work/; ``earlier_runs`` names the runs kept next to an updated copy)."""
    import nbformat

    root = root or settings().root
    work = work_dir(root)
    manifest_path = work / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    done: dict[str, list[str]] = {"copied": [], "updated": [], "kept": [], "earlier_runs": []}
    said: list[str] = []
    for folder in FOLDERS:
        for source in sorted((root / folder).glob("*.ipynb")):
            relative = f"{folder}/{source.name}"
            course = nbformat.read(str(source), as_version=4)
            new = fingerprint(course)
            target = work / relative
            if target.exists() and manifest.get(relative) == new:
                continue  # the copy was made from this very version
            if target.exists() and fingerprint(nbformat.read(str(target), as_version=4)) != manifest.get(relative):
                if new != manifest.get(f"{relative}{UPDATE_SUFFIX}"):  # edited: the update goes next to it
                    side = target.with_name(f"{target.stem}{UPDATE_SUFFIX}.ipynb")
                    nbformat.write(without_outputs(course), str(side))
                    manifest[f"{relative}{UPDATE_SUFFIX}"] = new
                    done["kept"].append(relative)
                continue
            kind = "updated" if target.exists() else "copied"
            target.parent.mkdir(parents=True, exist_ok=True)
            fresh = without_outputs(course)
            if kind == "updated":
                said.append(_update_run(target, fresh, relative, done))
            nbformat.write(fresh, str(target))
            manifest[relative] = new
            done[kind].append(relative)
    work.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if done["copied"]:
        log(f"your copies of the notebooks: {len(done['copied'])} new in {WORK_DIR}/ (git ignores it; "
            "the originals stay as the course ships them)")
    for line in said:
        log(line)
    for relative in done["kept"]:
        log(f"kept your edited {WORK_DIR}/{relative}; the course's new version is next to it, "
            f"as {Path(relative).stem}{UPDATE_SUFFIX}.ipynb")
    return done


def _update_run(target: Path, fresh, relative: str, done: dict) -> str:
    """Before an unedited copy is replaced by ``fresh``: carry its outputs over, keep the whole earlier copy
    when some of them cannot be (written as NAME (your run before the update).ipynb). Returns the line
    that says what happened."""
    import shutil

    import nbformat

    old = nbformat.read(str(target), as_version=4)
    shown = f"{WORK_DIR}/{relative}"
    if not has_run(old):
        return f"replaced {shown} with the course's new version (you had not run or edited it)"
    carried, left = carry_outputs(old, fresh)
    line = (f"replaced {shown} with the course's new version (you had run it, not edited it); "
            f"your outputs of the {carried} cell(s) it did not change are in it")
    if left:
        earlier = _free_name(target.with_name(f"{target.stem}{EARLIER_RUN_SUFFIX}{target.suffix}"))
        shutil.copy2(target, earlier)
        done["earlier_runs"].append(earlier.relative_to(target.parents[1]).as_posix())
        line += (f"; {left} cell(s) the update changed or removed had outputs, so your whole earlier run is kept "
                 f"as {WORK_DIR}/{earlier.relative_to(target.parents[1]).as_posix()}")
    return line
