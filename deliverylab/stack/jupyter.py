"""Starting and stopping the course's JupyterLab (``make lab`` / ``make stop``).

JupyterLab listens on 127.0.0.1 only and keeps its token authentication on. A second
``make lab`` while one runs points at the running one instead of starting another.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .broker import port_is_free
from ..config import CourseError, settings

FIRST_LESSON = "notebooks/00-setup-and-tour.ipynb"


def running_servers() -> list[dict]:
    """This project's running Jupyter servers (as `jupyter server list --json` reports them)."""
    proc = subprocess.run([sys.executable, "-m", "jupyter", "server", "list", "--json"],
                          capture_output=True, text=True, timeout=60)
    root = str(settings().root)
    servers = []
    for line in proc.stdout.splitlines():
        try:
            info = json.loads(line)
        except json.JSONDecodeError:
            continue
        if str(Path(info.get("root_dir", "")).resolve()) == root:
            servers.append(info)
    return servers


def _url(info: dict) -> str:
    return f"{info['url'].rstrip('/')}/lab?token={info.get('token', '')}"


def lab(open_browser: bool = True) -> int:
    """Run JupyterLab in the foreground on lesson 00 (returns its exit code)."""
    s = settings()
    servers = running_servers()
    if servers:
        raise CourseError(
            f"JupyterLab for this course is already running: {_url(servers[0])}\n"
            "Open that address, or stop it first with `make stop`."
        )
    if not port_is_free(s.jupyter_port):
        raise CourseError(
            f"Port {s.jupyter_port} on 127.0.0.1 is taken by another program. Stop it, or run "
            f"`DELIVERYLAB_JUPYTER_PORT={s.jupyter_port + 1} make lab`."
        )
    cmd = [
        sys.executable, "-m", "jupyter", "lab",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={s.jupyter_port}", "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={s.root}",
        "--ServerApp.open_browser=" + ("True" if open_browser else "False"),
        FIRST_LESSON,
    ]
    print(f"JupyterLab on http://127.0.0.1:{s.jupyter_port} (token printed below). Stop it with Ctrl-C, then `make stop`.")
    return subprocess.call(cmd, cwd=s.root, env=dict(os.environ, PYTHONNOUSERSITE="1"))


def stop() -> int:
    """Stop this project's Jupyter servers. Returns how many were stopped."""
    stopped = 0
    for info in running_servers():
        subprocess.run([sys.executable, "-m", "jupyter", "server", "stop", str(info["port"])],
                       capture_output=True, text=True, timeout=60)
        stopped += 1
    return stopped
