"""A pytest plugin for nbval runs: keep every notebook as it was executed, and how long it took.

``pytest --nbval-lax -p deliverylab.stack.nbcapture notebooks ...`` writes, when the run
ends, ``.state/executed/<folder>/<name>.ipynb``: the notebook with every output its cells
produced in that run (charts, tables, errors, stderr), which nbval itself compares only in
part and never keeps. The browser test opens these copies to check what a learner sees,
``make site`` renders them, and ``.state/executed/timings/`` holds each notebook's seconds
its slowest cells (``python -m deliverylab.stack.nbtimings`` prints them). One file per notebook, so
parallel workers (pytest-xdist) never write the same file.

Under pytest-xdist (``-n 2 --dist loadscope``), a module's notebooks form one scope: a lesson's
lab and its solution use the same lesson name (and so the same topics and folders), so they
must never run at the same time. Groups go out latest module first: later modules take longer,
and starting the long ones first lets the workers finish together.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from ..config import settings
from . import nbtimings, runner
from .nbtimings import executed_dir

_outputs: dict[Path, dict[int, list]] = defaultdict(dict)
_seconds: dict[Path, float] = defaultdict(float)
_cells: dict[Path, dict[int, float]] = defaultdict(dict)


def _notebook_of(item) -> Path | None:
    parent = getattr(item, "parent", None)
    path = getattr(parent, "path", None) or getattr(parent, "fspath", None)
    return Path(str(path)) if path and str(path).endswith(".ipynb") else None


def module_group(notebook: Path) -> str:
    """``module-05`` for notebooks/05-..., solutions/05-...-lab and labs/05-...-lab."""
    number = notebook.name[:2]
    return f"module-{number}" if number.isdigit() else f"notebook-{notebook.stem}"


def scope_of(nodeid: str) -> str:
    """The xdist scope of a test: a notebook cell's module group, else its file."""
    path = nodeid.split("::")[0]
    return module_group(Path(path)) if path.endswith(".ipynb") else path


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """The latest module first; a notebook's cells keep their order (a stable sort)."""
    items.sort(key=lambda item: "" if _notebook_of(item) is None else "~" + module_group(_notebook_of(item)),
               reverse=True)


def pytest_xdist_make_scheduler(config, log):
    """Under ``-n N --dist loadscope``: one scope per module (see scope_of), handed out in
    collection order, so a module's notebooks run one after the other on one worker."""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ModuleScheduling(config, log)


def pytest_runtest_makereport(item, call):
    notebook = _notebook_of(item)
    if notebook is None:
        return
    _seconds[notebook] += call.duration
    if call.when == "call":
        _cells[notebook][item.cell_num] = call.duration
        if getattr(item, "test_outputs", None) is not None:
            _outputs[notebook][item.cell_num] = item.test_outputs


def pytest_sessionfinish(session, exitstatus):
    import nbformat

    root = settings().root
    for notebook, cells in _outputs.items():
        try:
            relative = notebook.resolve().relative_to(root)
        except ValueError:
            continue
        nb = nbformat.read(str(notebook), as_version=4)
        for number, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
            cell.outputs = runner.without_status_lines(cells.get(number, []))
            cell.execution_count = number + 1 if number in cells else None
            for output in cell.outputs:
                if "execution_count" in output:
                    output["execution_count"] = cell.execution_count
        target = executed_dir() / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(target))
        slowest = sorted(_cells[notebook].items(), key=lambda kv: -kv[1])[:3]
        figures = {"notebook": relative.as_posix(), "seconds": round(_seconds[notebook], 1),
                   "slowest_cells": {f"cell {n + 1}": round(t, 1) for n, t in slowest}}
        timing = executed_dir() / "timings" / f"{relative.as_posix().replace('/', '--')}.json"
        timing.parent.mkdir(parents=True, exist_ok=True)
        timing.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(nbtimings.main())
