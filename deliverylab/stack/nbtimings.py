"""What the last nbval run(s) took, notebook by notebook (written by the nbcapture plugin).

Kept apart from the plugin so that reading them needs nothing but Python: the test run's report
(``python -m deliverylab.testrun``) prints them with the interpreter that built the venv.
``python -m deliverylab.stack.nbtimings`` prints them too.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..config import settings


def executed_dir() -> Path:
    return settings().state / "executed"


def timings() -> list[dict]:
    """Every notebook's figures from the last nbval run(s), sorted by notebook."""
    folder = executed_dir() / "timings"
    found = [json.loads(p.read_text()) for p in folder.glob("*.json")] if folder.is_dir() else []
    return sorted(found, key=lambda figures: figures["notebook"])


def lines(found: list[dict]) -> list[str]:
    """One line a notebook (its seconds under nbval, its slowest cells), then the sum."""
    out = []
    for figures in found:
        slowest = ", ".join(f"{cell} {t} s" for cell, t in figures["slowest_cells"].items())
        out.append(f"{figures['seconds']:7.1f} s  {figures['notebook']}   (slowest code cells: {slowest})")
    out.append(f"{sum(f['seconds'] for f in found):7.1f} s  in all, {len(found)} notebooks")
    return out


def main() -> int:
    """Print the seconds each notebook took in the last nbval run."""
    found = timings()
    if not found:
        print("no timings yet: run `make test` (or nbval with -p deliverylab.stack.nbcapture) first")
        return 1
    print("\n".join(lines(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
