"""`make lab` run a second time while JupyterLab runs: it prints the address and stops nothing."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from deliverylab.stack import broker, jupyter
from deliverylab.stack.broker import port_is_free

pytestmark = pytest.mark.stack

ROOT = Path(__file__).resolve().parents[2]


def _free_port(start: int = 18931) -> int:
    return next(p for p in range(start, start + 50) if port_is_free(p))


def _make_lab(port: int, **kwargs) -> subprocess.Popen:
    env = dict(os.environ, DELIVERYLAB_JUPYTER_PORT=str(port))
    return subprocess.Popen(["make", "--no-print-directory", "lab", "LAB_OPTIONS=--no-browser"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            **kwargs)


#: What JupyterLab's own log lines look like ("[I 2025-01-01 10:00:00.000 ServerApp] ..."): never on the terminal.
JUPYTER_LOG_LINE = re.compile(r"^\[[DIWEC] \d{4}-\d\d-\d\d |ServerApp\]|LabApp\]|jupyter_server|To access the server")


def _wait_for_server(first: subprocess.Popen, seen: list[str] | None = None) -> dict:
    """Read the first `make lab`'s output until it prints lesson 00's address (as a learner waits for it)."""
    seen = [] if seen is None else seen
    for line in first.stdout:  # ends if make ends; the test's own timeout covers a hang
        seen.append(line)
        if "Open lesson 00:" in line:
            servers = jupyter.running_servers()
            assert len(servers) == 1, servers
            return servers[0]
    raise AssertionError("the first `make lab` ended before JupyterLab was up:\n" + "".join(seen))


def _lab_defaults(server: dict, plugin: str) -> dict:
    """A plugin's defaults as the running JupyterLab serves them to the page (overrides.json changes them)."""
    url = f"{server['url'].rstrip('/')}/lab/api/settings/{plugin}?token={server['token']}"
    with urllib.request.urlopen(url, timeout=30) as answer:
        schema = json.loads(answer.read())["schema"]
    return {name: prop.get("default") for name, prop in schema["properties"].items()}


def test_the_course_s_jupyterlab_settings_join_other_overrides(tmp_path):
    overrides = tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    overrides.parent.mkdir(parents=True)
    overrides.write_text(json.dumps({"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
                                     "@jupyterlab/apputils-extension:notification": {"doNotDisturbMode": True}}))
    assert jupyter.ship_lab_settings(tmp_path) == overrides
    assert json.loads(overrides.read_text()) == {
        "@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
        "@jupyterlab/apputils-extension:notification": {"doNotDisturbMode": True, "fetchNews": "false",
                                                        "checkForUpdates": False},
        "@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}


def test_a_second_make_lab_leaves_jupyterlab_and_the_broker_running():
    if jupyter.running_servers():
        pytest.skip("a JupyterLab of this course already runs here (a learner's `make lab`)")
    broker.up(log=lambda m: None)
    first = _make_lab(_free_port())
    seen: list[str] = []
    try:
        server = _wait_for_server(first, seen)
        # the terminal shows the course's lines and the address, JupyterLab's own log goes to the file it names
        assert not [line for line in seen if JUPYTER_LOG_LINE.search(line)], "".join(seen)
        log = jupyter.settings().state / jupyter.LOG_FILE
        assert f"Its own messages go to {log.relative_to(ROOT)}" in "".join(seen), "".join(seen)
        deadline = time.monotonic() + 120
        while "ServerApp" not in log.read_text(errors="replace") and time.monotonic() < deadline:
            time.sleep(0.5)  # the server writes its log as it goes: wait for its lines, however slow
        assert "ServerApp" in log.read_text(errors="replace")
        second = _make_lab(server["port"])
        out, _ = second.communicate(timeout=120)
        assert second.returncode == 0, out
        assert "already running" in out and jupyter.lesson_url(server) in out, out
        assert first.poll() is None, "the second `make lab` stopped the first JupyterLab"
        assert [s["pid"] for s in jupyter.running_servers()] == [server["pid"]]
        assert broker.status().answering, "the second `make lab` stopped the broker"
        notification = _lab_defaults(server, "@jupyterlab/apputils-extension:notification")  # no news pop-up
        assert notification["fetchNews"] == "false" and notification["checkForUpdates"] is False, notification
    finally:
        jupyter.stop()
        try:
            first.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert broker.status().answering  # stopping JupyterLab (Ctrl-C, `jupyter stop`) leaves the broker too
