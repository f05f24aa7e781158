"""Starting and stopping the course's JupyterLab (``make lab`` / ``make stop``).

JupyterLab listens on 127.0.0.1 only, keeps its token authentication on, and opens on
lesson 00 of the learner's own copies (``my-work/``, see workcopy.py). Run as root (common in containers and cloud notebooks) it is started with
``allow_root``, which JupyterLab otherwise refuses. A second ``make lab`` while one runs
prints the running one's address and exits 0, starting and stopping nothing. The browser test starts its
JupyterLab with the same :func:`lab_command`.

The terminal shows the course's lines and lesson 00's address only: JupyterLab's own log (and what its
kernels print outside a cell) goes to ``.state/logs/jupyterlab.log``, which ``make lab`` names; if
JupyterLab stops at once, the end of that log is shown. Its standard input is not the terminal, so
Ctrl-C stops it at once instead of asking a question the terminal no longer shows.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ..config import HOST, CourseError, settings
from . import processes
from .broker import port_is_free

FIRST_LESSON = "notebooks/00-setup-and-tour.ipynb"
#: JupyterLab's own log, under the state folder.
LOG_FILE = "logs/jupyterlab.log"
#: JupyterLab's address of a notebook, below the server's root.
LAB_TREE = "/lab/tree/"


#: JupyterLab settings the course ships (as JupyterLab's overrides.json in the venv): no pop-up asking
#: whether to fetch Jupyter's news, and no update check (the course pins its versions); widget state
#: saved with the notebook, so a lesson reopened after its kernel has gone shows its crash panel and
#: predictions as they were instead of "Error displaying widget: model not found". A learner can
#: still change them in Settings; their own choice wins.
LAB_OVERRIDES = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
                 "@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}


def ship_lab_settings(prefix: str | Path = sys.prefix) -> Path:
    """Write the course's JupyterLab defaults into ``<prefix>/share/jupyter/lab/settings/overrides.json``,
    keeping any other override already there. Returns the file."""
    path = Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    try:
        current = json.loads(path.read_text())
    except (OSError, ValueError):
        current = {}
    merged = {**current, **{plugin: {**current.get(plugin, {}), **values} for plugin, values in LAB_OVERRIDES.items()}}
    if merged != current:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(merged, indent=2) + "\n")
    return path


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def lab_command(port: int, root: Path, open_browser: bool = False, token: str | None = None,
                first: str = FIRST_LESSON) -> list[str]:
    """The JupyterLab command line: loopback, token on, opening ``first``."""
    cmd = [
        sys.executable, "-m", "jupyter", "lab",
        f"--ServerApp.ip={HOST}", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.default_url={LAB_TREE}{first}",  # also the address JupyterLab prints
        "--ServerApp.open_browser=" + ("True" if open_browser else "False"),
        # kernels talk to the server over Unix sockets in Jupyter's runtime folder (this user's only),
        # not over TCP ports that any user of the machine can reach: ipykernel warns of those per kernel
        "--KernelManager.transport=ipc",
    ]
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if running_as_root():
        cmd.append("--ServerApp.allow_root=True")
    return cmd


def running_servers() -> list[dict]:
    """This project's running Jupyter servers (what `jupyter server list --json` reports for them).

    Read from the servers' own files in Jupyter's runtime folder, as that command does, without its
    2.5 CPU-seconds of start-up: ``make lab`` asks this every half second until its server is up.
    """
    from jupyter_core.paths import jupyter_runtime_dir

    from .workcopy import work_dir

    root = str(work_dir().resolve())
    servers = []
    for file in sorted(Path(jupyter_runtime_dir()).glob("jpserver-*.json")):
        try:
            info = json.loads(file.read_text())
        except (OSError, ValueError):  # a server writing or removing its file right now
            continue
        if processes.alive(info.get("pid")) and str(Path(info.get("root_dir", "")).resolve()) == root:
            servers.append(info)
    return servers


def kernel_notebooks(timeout_s: float = 3) -> dict[str, str]:
    """``{kernel id: notebook path}`` of the notebooks open in this project's JupyterLab ({} when none runs or
    answers): what `stack status` and `make doctor` name a kernel by."""
    import urllib.request

    found = {}
    for info in running_servers():
        url = f"{info['url'].rstrip('/')}/api/sessions?token={info.get('token', '')}"
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as answer:
                sessions = json.loads(answer.read())
        except (OSError, ValueError):
            continue
        for session in sessions if isinstance(sessions, list) else []:
            kernel = (session.get("kernel") or {}).get("id")
            if kernel:
                found[kernel] = session.get("path") or ""
    return found


def lesson_url(info: dict, notebook: str = FIRST_LESSON) -> str:
    """The address that opens ``notebook`` in a running server, token included."""
    return f"{info['url'].rstrip('/')}{LAB_TREE}{notebook}?token={info.get('token', '')}"


def lab(open_browser: bool = True) -> int:
    """Run JupyterLab in the foreground on lesson 00 (returns its exit code)."""
    s = settings()
    servers = running_servers()
    if servers:  # the learner ran `make lab` again: point at the running one, change nothing
        print(f"JupyterLab for this course is already running; nothing was started or stopped.\n\n"
              f"    Open lesson 00:  {lesson_url(servers[0])}\n    Stop it: `make stop`.\n", flush=True)
        return 0
    if not port_is_free(s.jupyter_port):
        raise CourseError(
            f"Port {s.jupyter_port} on {HOST} is taken by another program. Stop it, or run "
            f"`DELIVERYLAB_JUPYTER_PORT={s.jupyter_port + 1} make lab`."
        )
    ship_lab_settings()
    from .workcopy import refresh, work_dir

    refresh()  # JupyterLab shows the learner's copies (my-work/), never the files git tracks
    note = " (as root: started with allow_root)" if running_as_root() else ""
    log_file = s.state / LOG_FILE
    log_file.parent.mkdir(parents=True, exist_ok=True)
    print(f"Starting JupyterLab on http://{HOST}:{s.jupyter_port}{note}; it opens on lesson 00 "
          f"(a few seconds). Its own messages go to {_shown(log_file, s.root)}.", flush=True)
    started = time.monotonic()
    with open(log_file, "ab") as log:
        log.write(f"\n---- make lab, {time.strftime('%Y-%m-%d %H:%M:%S')} ----\n".encode())
        log.flush()
        proc = subprocess.Popen(lab_command(s.jupyter_port, work_dir(), open_browser), cwd=s.root,
                                env=dict(os.environ, PYTHONNOUSERSITE="1"), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT)
    try:
        _announce(proc, _shown(log_file, s.root))
        code = proc.wait()
    except KeyboardInterrupt:  # Ctrl-C reached JupyterLab too (one process group): let it finish stopping
        code = _wait_quietly(proc)
    if code not in (0, -2, 130) and time.monotonic() - started < 60:
        tail = "\n".join(log_file.read_text(errors="replace").strip().splitlines()[-20:])
        raise CourseError(f"JupyterLab stopped at once (exit code {code}). The end of its log "
                          f"({_shown(log_file, s.root)}):\n{tail}\nFix what it names and run `make lab` again.")
    if code in (0, -2, 130):
        print("JupyterLab stopped. `make stop` stops the broker and whatever else the course still runs.", flush=True)
    return code


def _wait_quietly(proc: subprocess.Popen, timeout_s: float = 30) -> int:
    """Wait for a JupyterLab that was sent Ctrl-C (a second Ctrl-C here is not a traceback)."""
    try:
        return proc.wait(timeout=timeout_s)
    except (KeyboardInterrupt, subprocess.TimeoutExpired):
        proc.terminate()
        return proc.wait()


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


#: While JupyterLab starts, a line at least this often (seconds) says it is still starting.
STARTING_EVERY_S = 10.0


def _announce(proc: subprocess.Popen, log_file: str | None = None, timeout_s: float = 600) -> None:
    """Print the address of lesson 00 once the server has registered itself; until then, a line every
    ``STARTING_EVERY_S`` says it is still starting (a first start on a busy machine can take a minute)."""
    started = time.monotonic()
    said = started
    while proc.poll() is None and time.monotonic() - started < timeout_s:
        servers = [s for s in running_servers() if s.get("pid") == proc.pid]
        if servers:
            print(f"\n    Open lesson 00:  {lesson_url(servers[0])}\n    Stop: Ctrl-C here, then `make stop`.\n",
                  flush=True)
            return
        if time.monotonic() - said >= STARTING_EVERY_S:
            said = time.monotonic()
            where = f"; its log: {log_file}" if log_file else ""
            print(f"  ... JupyterLab is still starting, {said - started:.0f} s so far{where}", flush=True)
        time.sleep(0.5)
    if proc.poll() is None:
        print(f"JupyterLab has not answered in {timeout_s:.0f} s; it may still come up. Its log"
              f"{' (' + str(log_file) + ')' if log_file else ''} says what it is doing.", flush=True)


def stop() -> int:
    """Stop this project's Jupyter servers. Returns how many were stopped."""
    stopped = 0
    for info in running_servers():
        subprocess.run([sys.executable, "-m", "jupyter", "server", "stop", str(info["port"])],
                       capture_output=True, text=True, timeout=60)
        stopped += 1
    return stopped
