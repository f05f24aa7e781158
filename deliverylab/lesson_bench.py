"""``python -m deliverylab.lesson_bench [NN ...]``: each lesson run top to bottom, as a learner's Run All.

For each lesson (all but the cluster module's, or the numbers given): the seconds its Run All
took in a fresh kernel, its slowest cell, and what that kernel holds once the last cell has run
(course JVMs and their resident memory, from ``running.py``), measured a few seconds later, while the
kernel is still open as a learner's would be. The capstone's matrix runs in full (a learner's
run, not ``make test``'s sample). A script that prints; it never fails a build.
"""
from __future__ import annotations

import sys
import time
from datetime import datetime

from . import course, running
from .config import settings
from .stack import broker, runner

#: How long after the last cell the kernel's processes are counted (a stop in progress has ended).
SETTLE_S = 5
#: A learner's cell should take no longer than this alone (the capstone's matrix has its own target).
LONG_CELL_S = 30


def _seconds(cell) -> float:
    timing = cell.get("metadata", {}).get("execution", {})
    try:
        start = datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
        end = datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return 0.0
    return (end - start).total_seconds()


def measure(path) -> dict:
    """Run one lesson; its Run All seconds, slowest cell, and its kernel's processes at the end."""
    held = {}

    def count(km) -> None:
        time.sleep(SETTLE_S)
        pid = km.provisioner.process.pid
        rows = [r for r in running.classify(running.course_procs()) if r["kernel"] == pid]
        held.update(jvms=sum(r["jvm"] for r in rows), rss_mb=sum(r["rss_mb"] for r in rows),
                    roles=sorted(r["role"] for r in rows if r["jvm"] or "driver" in r["role"]))

    started = time.monotonic()
    nb = runner.run(str(path), after=count)
    seconds = time.monotonic() - started - SETTLE_S
    cells = [(n, _seconds(c)) for n, c in enumerate((c for c in nb.cells if c.cell_type == "code"), 1)]
    slowest = max(cells, key=lambda nc: nc[1])
    return {"lesson": path.stem, "seconds": round(seconds), "slowest_cell": slowest[0],
            "slowest_s": round(slowest[1]), "long_cells": [(n, round(s)) for n, s in cells if s > LONG_CELL_S],
            "errors": runner.unexpected_errors(nb), **held}


def main(argv: list[str]) -> int:
    broker.up(log=lambda m: None)
    lessons = [p for p in course.lesson_notebooks(settings().root) if not course.needs_clusters(p.name)]
    if argv:
        lessons = [p for p in lessons if p.name[:2] in argv]
    print(f"{'lesson':<28} {'Run All':>8} {'slowest cell':>14} {'JVMs after':>11} {'RSS after':>10}")
    for path in lessons:
        m = measure(path)
        print(f"{m['lesson']:<28} {m['seconds']:>6} s {m['slowest_s']:>6} s (#{m['slowest_cell']:<3}) "
              f"{m['jvms']:>8} {m['rss_mb']:>7} MB" + (f"   ERRORS: {m['errors']}" if m["errors"] else ""), flush=True)
        long_cells = ", ".join(f"#{n} {s} s" for n, s in m["long_cells"])
        print(f"    {', '.join(m['roles']) or 'no JVM'}" + (f"\n    cells over {LONG_CELL_S} s: {long_cells}" if long_cells else ""),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
