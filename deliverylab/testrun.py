"""``python -m deliverylab.testrun --phase 'name: command' ...``: a test run in phases, and where its time went.

``make test`` and ``make test-stress`` run their steps through it. Each phase is a shell command; the
run ends with a table of every phase's wall seconds and CPU seconds (user + system of every process
the phase started, however it ended: stack/cputime.py), the slowest unit tests and each notebook's
time under nbval. CPU seconds are the figure to compare between runs: on these two-core machines the
wall time of the same run varies by 2x and more from day to day. The figures are also kept in
``<state>/testrun/last.json``, and the next run prints its CPU seconds next to them.

    --first 'name: command'    must pass, or the run stops there (setup, starting the broker)
    --phase 'name: command'    its failure fails the run; the next phase still runs
    --finally 'name: command'  runs whatever happened before (stopping the broker)
    --junit FILE               a JUnit XML report (pytest --junitxml) to take the slowest tests from
    --hog                      a busy process holds one core for the whole run (make test-stress)

It needs nothing but Python's own library, so it can run (and measure) the setup that builds the venv.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

from .config import settings
from .stack import cputime, nbtimings

SLOWEST_TESTS = 15


@dataclass
class Phase:
    name: str
    command: str
    kind: str = "phase"  # first | phase | finally
    wall_s: float = 0.0
    cpu_s: float = 0.0
    status: str = "not run"  # passed | failed (exit N) | not run


def parse_phase(text: str, kind: str) -> Phase:
    """``'unit tests: pytest ...'`` -> Phase('unit tests', 'pytest ...')."""
    name, sep, command = text.partition(":")
    if not sep or not name.strip() or not command.strip():
        raise SystemExit(f"a phase is 'name: command', got {text!r}")
    return Phase(name.strip(), command.strip(), kind)


def phase_table(phases: list[Phase], previous: dict[str, float] | None = None, hog_s: float | None = None) -> list[str]:
    """The table the run ends with. ``previous``: each phase's CPU seconds in the run before, if known."""
    previous = previous or {}
    width = max([len(p.name) for p in phases] + [len("in all")])
    head = f"{'phase':<{width}}  {'wall s':>7}  {'CPU s':>7}  {'CPU/wall':>8}"
    if previous:
        head += f"  {'CPU s before':>12}"
    out = [head + "  status", "-" * (len(head) + 8)]

    def row(name, wall, cpu, before, status):
        ratio = f"{cpu / wall:8.2f}" if wall > 0 else f"{'':>8}"
        line = f"{name:<{width}}  {wall:7.0f}  {cpu:7.0f}  {ratio}"
        if previous:
            line += f"  {before:12.0f}" if before is not None else f"  {'':>12}"
        return line + f"  {status}"

    for p in phases:
        out.append(row(p.name, p.wall_s, p.cpu_s, previous.get(p.name), p.status))
    ran = [p for p in phases if p.status != "not run"]
    total_before = sum(previous[p.name] for p in ran) if ran and all(p.name in previous for p in ran) else None
    out.append(row("in all", sum(p.wall_s for p in ran), sum(p.cpu_s for p in ran), total_before,
                   "passed" if all(p.status == "passed" for p in phases) else "FAILED"))
    if hog_s is not None:
        wall = sum(p.wall_s for p in ran)
        share = f"{hog_s / wall:.2f} of a core" if wall > 0 else "a core"
        out.append(f"(a busy process held {share} throughout: {hog_s:.0f} CPU s, not counted above)")
    return out


def slowest_tests(junit_xml: str, count: int = SLOWEST_TESTS) -> list[tuple[float, str]]:
    """The ``count`` slowest test cases of a JUnit XML report: (seconds, 'file::name'), slowest first."""
    cases = []
    for case in ET.fromstring(junit_xml).iter("testcase"):
        where = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        cases.append((float(case.get("time") or 0), f"{where}::{case.get('name')}"))
    return sorted(cases, key=lambda c: -c[0])[:count]


def report(phases: list[Phase], previous: dict[str, float] | None, junit: Path | None, hog_s: float | None) -> str:
    lines = ["", "== where the time went (CPU seconds are the figure to compare between runs) =="]
    lines += phase_table(phases, previous, hog_s)
    if junit is not None and junit.exists():
        lines += ["", f"the {SLOWEST_TESTS} slowest unit tests (seconds):"]
        lines += [f"{seconds:7.1f}  {name}" for seconds, name in slowest_tests(junit.read_text())]
    found = nbtimings.timings()
    if found:
        lines += ["", "each notebook under nbval (seconds, several at a time; slowest cells):"]
        lines += nbtimings.lines(found)
    return "\n".join(lines)


def _busy() -> None:  # pragma: no cover - runs in the hog's own process
    last = os.cpu_count() - 1 if os.cpu_count() else 0
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {last})
    try:
        os.nice(-19)  # root only: the hog then keeps its core and the run gets the other one
    except (PermissionError, OSError):
        pass  # at the default priority it shares its core with the run (the table says how much it held)
    while True:
        pass


def start_hog() -> multiprocessing.Process:
    """A plain busy loop pinned to the last core, as a second program on a learner's laptop would be; with a
    higher priority where allowed (root), so that it holds that core instead of sharing it."""
    hog = multiprocessing.get_context("fork").Process(target=_busy, daemon=True)
    hog.start()
    return hog


def stop_hog(hog: multiprocessing.Process) -> float:
    """Stop the hog; the CPU seconds it held."""
    ticks = cputime.process_table().get(hog.pid, (0, "", 0))[2]
    hog.kill()
    hog.join()
    return ticks / cputime.TICKS


def run(phases: list[Phase], meter: cputime.Meter, say=print) -> bool:
    """Run the phases in order (see the module's text). True when every phase passed."""
    interrupted = []
    # Ctrl+C reaches the phase that runs (it is in the same process group); the run itself goes on to its
    # finally phases, so the broker is stopped and the table printed
    before = signal.signal(signal.SIGINT, lambda *_: interrupted.append(True))
    stopped = False
    try:
        for phase in phases:
            if (stopped or interrupted) and phase.kind != "finally":
                continue
            say(f"\n== {phase.name} ==", flush=True)
            cpu, wall = meter.seconds(), time.monotonic()
            code = meter.run(phase.command)
            phase.wall_s, phase.cpu_s = time.monotonic() - wall, meter.seconds() - cpu
            phase.status = "passed" if code == 0 else f"failed (exit {code})"
            if code != 0 and phase.kind == "first":
                say(f"{phase.name} failed (exit {code}): the phases after it cannot run", flush=True)
                stopped = True
    finally:
        signal.signal(signal.SIGINT, before)
    return all(p.status == "passed" for p in phases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab.testrun", description=__doc__.split("\n")[0])
    parser.add_argument("--first", action="append", default=[])
    parser.add_argument("--phase", action="append", default=[])
    parser.add_argument("--finally", dest="last", action="append", default=[])
    parser.add_argument("--junit", type=Path)
    parser.add_argument("--hog", action="store_true")
    args = parser.parse_args(argv)
    phases = ([parse_phase(t, "first") for t in args.first] + [parse_phase(t, "phase") for t in args.phase]
              + [parse_phase(t, "finally") for t in args.last])
    record = settings().state / "testrun" / "last.json"
    previous = None
    if record.exists():
        previous = {p["name"]: p["cpu_s"] for p in json.loads(record.read_text())["phases"]}
    hog = start_hog() if args.hog else None
    meter = cputime.Meter(exclude=frozenset([hog.pid]) if hog else frozenset())
    if not meter.exact:
        print("(this system cannot hand orphaned processes to the test run: CPU seconds count only what it waited for)")
    try:
        passed = run(phases, meter)
    finally:
        hog_s = stop_hog(hog) if hog else None
    print(report(phases, previous, args.junit, hog_s), flush=True)
    left = meter.still_running()
    for _ in range(60):  # a JVM whose driver was just killed takes a moment to end
        if not left:
            break
        time.sleep(0.25)
        meter.seconds()  # reaps what ended
        left = meter.still_running()
    if left:
        print(f"\nstill running after the run ({len(left)}):\n  " + "\n  ".join(left))
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"phases": [asdict(p) for p in phases], "hog_s": hog_s}, indent=1) + "\n")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
