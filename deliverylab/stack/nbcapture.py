"""A pytest plugin for nbval runs: keep every notebook as it was executed, and how long it took.

``pytest --nbval-lax -p deliverylab.stack.nbcapture notebooks ...`` writes, when the run
ends, ``.state/executed/<folder>/<name>.ipynb``: the notebook with every output its cells
produced in that run (charts, tables, errors, stderr), which nbval itself compares only in
part and never keeps. The browser test opens these copies to check what a learner sees,
``make site`` renders them, and ``.state/executed/timings.json`` holds each notebook's
seconds and its slowest cells (``python -m deliverylab.stack.nbcapture`` prints them).
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from ..config import settings

_outputs: dict[Path, dict[int, list]] = defaultdict(dict)
_seconds: dict[Path, float] = defaultdict(float)
_cells: dict[Path, dict[int, float]] = defaultdict(dict)


def executed_dir() -> Path:
    return settings().state / "executed"


def _notebook_of(item) -> Path | None:
    parent = getattr(item, "parent", None)
    path = getattr(parent, "path", None) or getattr(parent, "fspath", None)
    return Path(str(path)) if path and str(path).endswith(".ipynb") else None


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
    timings_file = executed_dir() / "timings.json"
    timings = json.loads(timings_file.read_text()) if timings_file.exists() else {}
    for notebook, cells in _outputs.items():
        try:
            relative = notebook.resolve().relative_to(root)
        except ValueError:
            continue
        nb = nbformat.read(str(notebook), as_version=4)
        for number, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
            cell.outputs = cells.get(number, [])
            cell.execution_count = number + 1 if number in cells else None
            for output in cell.outputs:
                if "execution_count" in output:
                    output["execution_count"] = cell.execution_count
        target = executed_dir() / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(target))
        slowest = sorted(_cells[notebook].items(), key=lambda kv: -kv[1])[:3]
        timings[relative.as_posix()] = {"seconds": round(_seconds[notebook], 1),
                                         "slowest_cells": {f"cell {n + 1}": round(t, 1) for n, t in slowest}}
    if _outputs:
        timings_file.parent.mkdir(parents=True, exist_ok=True)
        timings_file.write_text(json.dumps(dict(sorted(timings.items())), indent=1) + "\n")


def main() -> int:
    """Print the seconds each notebook took in the last nbval run."""
    timings_file = executed_dir() / "timings.json"
    if not timings_file.exists():
        print("no timings yet: run `make test` (or nbval with -p deliverylab.stack.nbcapture) first")
        return 1
    for name, figures in json.loads(timings_file.read_text()).items():
        slowest = ", ".join(f"{cell} {t} s" for cell, t in figures["slowest_cells"].items())
        print(f"{figures['seconds']:7.1f} s  {name}   (slowest code cells: {slowest})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
