"""A setup step that can take minutes says what it does, how long it usually takes, and how far it got.

    with heartbeat.Step("resolving the spark jars from Maven Central", "usually 20-60 s", detail=lambda: "12 found"):
        ...

prints the title and estimate at once, then a line at least every ``EVERY_S`` seconds with ``detail()``
and the time so far, then how long the step took. Whole lines only, never a line rewritten in place:
setup runs pip and two Ivy resolutions side by side on one terminal, and a log file or a pipe shows
the same lines. :func:`pip` runs ``pip`` that way (its own chatter condensed to what it is doing now).

Standard library only: ``make setup`` uses it before the course's packages are installed.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..config import project_root

#: The longest a long step stays silent.
EVERY_S = 10.0


def _say(log, text: str) -> None:
    log(text)
    try:
        sys.stdout.flush()
    except (AttributeError, ValueError):
        pass


class Step:
    """A context manager: the title and estimate now, ``detail()`` every ``every_s``, the time at the end."""

    def __init__(self, title: str, estimate: str = "", detail=None, log=print, every_s: float | None = None):
        self.title, self.estimate, self.detail, self.log = title, estimate, detail, log
        self.every_s = EVERY_S if every_s is None else every_s
        self.failed = False
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="setup-heartbeat", daemon=True)

    def __enter__(self) -> "Step":
        self.started = time.monotonic()
        _say(self.log, f"{self.title} ({self.estimate}) ..." if self.estimate else f"{self.title} ...")
        self._thread.start()
        return self

    def __exit__(self, kind, error, trace) -> bool:
        self._stop.set()
        self._thread.join(timeout=30)
        if kind is None:
            _say(self.log, f"{self.title}: {'FAILED after' if self.failed else 'done in'} {self.seconds():.0f} s")
        return False

    def seconds(self) -> float:
        return time.monotonic() - self.started

    def line(self) -> str:
        """What the step says while it runs: its title, how far it got, the time so far."""
        try:
            detail = self.detail() if self.detail else ""
        except Exception:  # noqa: BLE001 - a progress detail must never stop the step
            detail = ""
        return f"  ... {self.title}: {detail + ', ' if detail else ''}{self.seconds():.0f} s so far"

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            _say(self.log, self.line())


# ---- pip, condensed -------------------------------------------------------------------------------


class PipWatch:
    """What pip is doing, read from its output lines (pip 23 and later)."""

    def __init__(self, site_packages: Path, tmp: Path):
        self.site_packages, self.tmp = site_packages, tmp
        self.collected = 0
        self.now = "starting pip"
        self.download: tuple[str, str] | None = None  # (file, size as pip printed it)
        self.installing = 0
        self.installed_before = _size_mb(site_packages)

    def read(self, line: str) -> str | None:
        """Take one line of pip's output; return a line worth printing now (or None)."""
        text = line.strip()
        if match := re.match(r"Collecting (\S+)", text):
            self.collected += 1
            self.now, self.download = f"collecting {match.group(1)} ({self.collected} packages so far)", None
        elif match := re.match(r"Downloading (\S+) \(([\d.]+ [kMG]B)\)", text):
            self.download = (match.group(1), match.group(2))
            self.now = f"downloading {match.group(1)} ({match.group(2)})"
            if match.group(2).endswith(("MB", "GB")) and float(match.group(2).split()[0]) >= 20:
                return f"  downloading {match.group(1)} ({match.group(2)}) ..."
        elif match := re.match(r"Building wheel for (\S+)", text):
            self.now, self.download = f"building the wheel of {match.group(1)} (packing its files)", None
            return f"  building the wheel of {match.group(1)} ..."
        elif match := re.match(r"Installing collected packages: (.*)", text):
            self.installing = len([p for p in match.group(1).split(",") if p.strip()])
            self.now, self.download = f"installing {self.installing} package(s) into .venv", None
            return f"  installing {self.installing} package(s) into .venv ..."
        elif text.startswith(("ERROR", "error:")) or "WARNING" in text[:10]:
            return text
        return None

    def detail(self) -> str:
        if self.download is not None:
            done = _partial_download_mb(self.tmp, self.download[0])
            if done is not None:
                size = self.download[1]
                done_text = f"{done * 1000:.0f} kB" if size.endswith(" kB") else f"{done:.0f} MB"  # pip's unit
                return f"downloading {self.download[0]}: {done_text} of {size}"
        if self.installing:
            return f"{self.now}: {max(0.0, _size_mb(self.site_packages) - self.installed_before):.0f} MB written"
        return self.now


def _size_mb(folder: Path) -> float:
    total = 0
    for base, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(base, name)).st_size
            except OSError:
                pass
    return total / 1e6


def _partial_download_mb(tmp: Path, name: str) -> float | None:
    """The size of the file pip is downloading now (it writes it under its pip-unpack-* folder)."""
    sizes = [p.stat().st_size for p in tmp.glob(f"pip-unpack-*/{name}") if p.exists()]
    return max(sizes) / 1e6 if sizes else None


def pip(args: list[str], what: str, estimate: str, log=print) -> int:
    """``python -m pip <args>`` with a line at least every ``EVERY_S``: what pip is doing now (collecting,
    downloading with the MB so far, building a wheel, installing with the MB written). Its error lines are
    printed as they come, and its last lines when it fails. Returns pip's exit code."""
    import sysconfig

    tmp = Path(os.environ.get("DELIVERYLAB_STATE") or project_root() / ".state") / "pip-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    watch = PipWatch(Path(sysconfig.get_paths()["purelib"]), tmp)
    env = dict(os.environ, TMPDIR=str(tmp.resolve()), PYTHONUNBUFFERED="1", PIP_PROGRESS_BAR="off")
    env.pop("PYTHONPATH", None)  # set for this command only (make setup runs it before the course is installed)
    lines: list[str] = []
    with Step(what, estimate, detail=watch.detail, log=log) as step:
        proc = subprocess.Popen([sys.executable, "-m", "pip", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=env)
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            shown = watch.read(line)
            if shown:
                _say(log, shown)
        code = proc.wait()
        if code != 0:
            step.failed = True
            _say(log, "\n".join(["pip's last lines:", *lines[-25:]]))
    try:
        tmp.rmdir()  # pip removes what it unpacked; the folder goes once nothing else uses it
    except OSError:
        pass
    return code
