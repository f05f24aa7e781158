"""``make bench``: print the course's timing and memory figures next to their targets.

A script, not a timed test: it measures on this machine and prints; it never fails a build.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .config import settings
from .stack import broker


def _row(name: str, value, unit: str, target: str) -> None:
    shown = f"{value:>8.1f}" if isinstance(value, (int, float)) else f"{value!s:>8}"
    print(f"{name:<38} {shown} {unit:<3}  (target {target})")


def broker_ready_s() -> float:
    broker.down(log=lambda m: None)
    start = time.monotonic()
    broker.up(log=lambda m: None)
    return time.monotonic() - start


def broker_rss_mb() -> float:
    pid = broker.status().pid
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def spark_ready_s() -> float:
    code = ("import time; t = time.monotonic(); from deliverylab.stack.session import get_spark; "
            "get_spark('bench'); print(time.monotonic() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def notebook_s(relative: str) -> float:
    from .stack.runner import execute

    src = settings().root / relative
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / src.name
        shutil.copy(src, copy)
        start = time.monotonic()
        execute(str(copy))
        return time.monotonic() - start


def crash_cycle(standby_warm_up: bool) -> dict:
    """bench_crash_cycle with standby drivers started under DELIVERYLAB_STANDBY_WARM_UP (config.py),
    once the standby is ready, as in a lesson whose reader takes a moment before the first crash."""
    from .crashlab import drivers
    from .crashlab.chaos import bench_crash_cycle

    os.environ["DELIVERYLAB_STANDBY_WARM_UP"] = "1" if standby_warm_up else "0"  # read by each new driver
    drivers.pool().shutdown()
    drivers.warm_up()
    drivers.pool().wait_until_ready()
    return bench_crash_cycle()


def main() -> int:
    print("Exactly Once, For Real: measured on this machine")
    _row("broker ready after `stack up`", broker_ready_s(), "s", "< 10 s")
    _row("broker resident memory", broker_rss_mb(), "MB", "< 600 MB")
    _row("Spark session ready (cold process)", spark_ready_s(), "s", "< 15 s")
    _row("notebook 00 executes", notebook_s("notebooks/00-setup-and-tour.ipynb"), "s", "< 60 s")
    for warm_up in (True, False):
        figures = crash_cycle(standby_warm_up=warm_up)
        seconds = figures["seconds"]
        setting = "on (a learner's default)" if warm_up else "off (make test)"
        print(f"crash lab: {figures['variant']} crashed at {figures['point']}, {figures['orders']} orders, "
              f"standby warm-up {setting}")
        _row("  driver start", seconds["start"], "s", "-")
        _row("  crash + restart + drain cycle", seconds["cycle"], "s", "< 5 s" if warm_up else "-")
        _row("  module crash demo (start..ledger)", seconds["demo"], "s", "< 60 s")
        print(f"  {figures['verdict_line']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
