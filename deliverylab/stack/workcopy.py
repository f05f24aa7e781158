"""The learner's own copies of the notebooks, so a course update never collides with their work.

``make lab`` opens JupyterLab on ``my-work/``, which git ignores: copies of ``notebooks/``,
``labs/`` and ``solutions/`` made the first time, without the outputs stored for the tests (a
copy shows what the learner's own run printed, nothing stale). Running, editing and saving a copy
changes nothing git tracks, so ``git pull`` always applies. Each ``make lab`` (and ``make update``,
which pulls first) brings course updates into the copies:

* a notebook the course added is copied;
* a copy whose cells the learner never edited (running it is not editing) is replaced by the
  course's new version;
* a copy the learner edited is kept as it is, and the new version is written next to it as
  ``NAME (course update).ipynb``.

``my-work/.copied.json`` remembers, for each copy, a fingerprint of the cells it was made from.
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


def refresh(root: Path | None = None, log=print) -> dict[str, list[str]]:
    """Copy what is new, update what the learner left as it was, keep what they edited.

    Returns ``{"copied": [...], "updated": [...], "kept": [...]}`` (paths under my-work/)."""
    import nbformat

    root = root or settings().root
    work = work_dir(root)
    manifest_path = work / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    done: dict[str, list[str]] = {"copied": [], "updated": [], "kept": []}
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
            nbformat.write(without_outputs(course), str(target))
            manifest[relative] = new
            done[kind].append(relative)
    work.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if done["copied"]:
        log(f"your copies of the notebooks: {len(done['copied'])} new in {WORK_DIR}/ (git ignores it; "
            "the originals stay as the course ships them)")
    if done["updated"]:
        log(f"updated {len(done['updated'])} of your copies that you had not edited: {', '.join(done['updated'])}")
    for relative in done["kept"]:
        log(f"kept your edited {WORK_DIR}/{relative}; the course's new version is next to it, "
            f"as {Path(relative).stem}{UPDATE_SUFFIX}.ipynb")
    return done
