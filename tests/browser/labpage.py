"""JupyterLab in headless Chromium, driven by Playwright, as a learner uses it.

The server is started with the same command as ``make lab`` (``stack.jupyter.lab_command``:
loopback, token on, allow_root when root), on copies of the notebooks in a temporary
folder, so Run All never writes into the repository. Chromium is Debian's package, never
a browser Playwright downloads.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from deliverylab.config import settings
from deliverylab.stack import jupyter

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: JupyterLab settings for the test: render every cell (no windowing), no news pop-up.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                         "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}
#: JupyterLab shows both a stderr stream and an error (a traceback) as this kind of red box.
RED_BOX = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
#: The notebook in the tab on show (other tabs stay in the page, hidden).
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"
SCREENSHOTS = settings().state / "browser"


def chromium() -> str | None:
    """Debian's Chromium (or DELIVERYLAB_CHROMIUM), or None when it is not installed."""
    wanted = os.environ.get("DELIVERYLAB_CHROMIUM")
    if wanted:
        return wanted if Path(wanted).exists() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """A JupyterLab on copies of ``folders`` (paths relative to the project root)."""

    def __init__(self, workdir: Path, folders: dict[str, Path]):
        self.root = workdir / "root"
        for name, source in folders.items():
            shutil.copytree(source, self.root / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        lab_settings = workdir / "lab-settings"
        for relative, values in LAB_SETTINGS.items():
            path = lab_settings / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        jupyter.ship_lab_settings()  # the course's own defaults, as `make lab` writes them
        self.token = secrets.token_hex(16)
        self.port = free_port()
        env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(lab_settings),
                   JUPYTER_CONFIG_DIR=str(workdir / "jupyter-config"))
        self.log = workdir / "server.log"
        self.proc = subprocess.Popen(jupyter.lab_command(self.port, self.root, token=self.token), cwd=self.root,
                                     env=env, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        self._wait_up()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, notebook: str) -> str:
        """Open ``notebook`` alone (``reset``: no tabs restored from an earlier page)."""
        return f"{self.base}{jupyter.LAB_TREE}{notebook}?token={self.token}&reset"

    def _wait_up(self, timeout_s: float = 180) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited ({self.proc.returncode}): {self.log.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{self.base}/api/status?token={self.token}", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"JupyterLab did not answer within {timeout_s} s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class NotebookPage:
    """One notebook open in JupyterLab, every cell rendered and (``wait_for_kernel``) its kernel ready.

    ``in_open_lab=True``: if the tab already shows this server's JupyterLab, its notebook tab is
    closed and ``notebook`` is opened with File > Open from Path..., as a learner opens the next
    notebook (about 0.7 s, against about 3 s for loading JupyterLab afresh).
    """

    def __init__(self, page, server: LabServer, notebook: str, code_cells: int, timeout_s: float = 180,
                 wait_for_kernel: bool = True, in_open_lab: bool = False):
        self.page, self.name = page, notebook
        if in_open_lab and page.url.startswith(server.base) and self.code_cells().count():
            self._close_tab()
            self.menu("File", "Open from Path…")
            page.locator(".jp-Dialog input").fill(notebook)
            page.keyboard.press("Enter")
        else:
            page.goto(server.url(notebook))
        deadline = time.monotonic() + timeout_s
        while not (self._shows(notebook) and self.code_cells().count() >= code_cells):
            if time.monotonic() > deadline:
                raise AssertionError(f"{notebook} did not open with its {code_cells} code cells within {timeout_s} s "
                                     f"(screenshot: {self.screenshot('open')})")
            time.sleep(0.1)  # cells render a few at a time
        if wait_for_kernel:
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=timeout_s * 1000)

    def _close_tab(self, timeout_s: float = 30) -> None:
        """File > Close Tab, discarding what JupyterLab changed on opening it (it asks first)."""
        self.menu("File", "Close Tab")
        notebooks = self.page.locator(".jp-NotebookPanel")  # a Launcher takes the last one's place
        discard = self.page.locator(".jp-Dialog button", has_text=re.compile("^Discard$"))
        deadline = time.monotonic() + timeout_s
        while notebooks.count():
            if discard.count():
                discard.click()
            if time.monotonic() > deadline:
                raise AssertionError(f"the tab of {self.name} did not close (screenshot: {self.screenshot('close')})")
            time.sleep(0.05)

    def _shows(self, notebook: str) -> bool:
        """True when the tab on show is ``notebook`` (its tab's tooltip names its path)."""
        tab = self.page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")
        return tab.count() == 1 and f"Path: {notebook}" in (tab.get_attribute("title") or "")

    def screenshot(self, label: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{Path(self.name).stem}-{label}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def menu(self, menu: str, item: str) -> None:
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu}$")).first.click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}$")).first.click()

    def prompts(self) -> list[str]:
        return [p.strip() for p in self.page.locator(f"{NOTEBOOK} .jp-CodeCell .jp-InputArea-prompt").all_inner_texts()]

    def run_all(self, timeout_s: float = 240, watch=None) -> float:
        """Run > Run All Cells, then wait until every code cell has run. Returns the seconds it took.

        A click that lands before the kernel is connected runs nothing; then it is clicked again.
        ``watch()``, if given, is called about twice a second while the cells run.
        """
        started = time.monotonic()
        for _ in range(3):
            self.menu("Run", "Run All Cells")
            queued = time.monotonic() + 60  # a generous limit: a second click would run every cell twice
            while time.monotonic() < queued and all(p == "[ ]:" for p in self.prompts()):
                time.sleep(0.2)
            if not all(p == "[ ]:" for p in self.prompts()):
                break
        self.wait_idle(timeout_s, started, watch)
        return time.monotonic() - started

    def run_cell(self, cell, timeout_s: float = 240, watch=None) -> None:
        """Shift+Enter in ``cell``, then wait until it has run (its prompt shows a new number); ``watch()``,
        if given, is called about twice a second meanwhile."""
        before = self.prompts()
        cell.locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Shift+Enter")
        self.wait_idle(timeout_s, before=before, watch=watch)

    def run_this_cell(self, cell, timeout_s: float = 300, watch=None) -> None:
        """Run ``cell`` alone (Shift+Enter) and wait until its own prompt shows a new run number; ``watch()``
        is called about twice a second meanwhile. Other cells may stay unrun."""
        prompt = cell.locator(".jp-InputArea-prompt")
        before = prompt.inner_text().strip()
        cell.locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Shift+Enter")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            now = prompt.inner_text().strip()
            if re.fullmatch(r"\[\d+\]:", now) and now != before:
                return
            if watch is not None:
                watch()
            time.sleep(0.5)
        raise AssertionError(f"{self.name}: a cell still runs after {timeout_s} s (see {self.screenshot('cell')})")

    def wait_idle(self, timeout_s: float = 240, started: float | None = None, watch=None,
                  before: list[str] | None = None) -> None:
        """Wait until every code cell shows a run number (and, given ``before``, the prompts changed from it:
        a cell that was just queued may not show ``[*]`` yet)."""
        started = started or time.monotonic()
        while time.monotonic() - started < timeout_s:
            prompts = self.prompts()
            if prompts and all(re.fullmatch(r"\[\d+\]:", p) for p in prompts) and prompts != before:
                return
            if watch is not None:
                watch()
            time.sleep(0.5)
        shot = self.screenshot("timeout")
        raise AssertionError(f"{self.name}: cells still running after {timeout_s} s: {self.prompts()} (see {shot})")

    def code_cells(self):
        return self.page.locator(f"{NOTEBOOK} .jp-CodeCell")

    def code_cell(self, index: int):
        return self.code_cells().nth(index)

    def text(self) -> str:
        """Everything the notebook on show says, as text."""
        return self.page.locator(NOTEBOOK).inner_text()

    def save(self, path: Path, timeout_s: float = 30) -> None:
        """File > Save Notebook; returns once ``path`` (the notebook's file on the server) has changed."""
        before = path.stat().st_mtime_ns
        self.menu("File", "Save Notebook")
        deadline = time.monotonic() + timeout_s
        while path.stat().st_mtime_ns == before:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name} was not saved within {timeout_s} s (screenshot: {self.screenshot('save')})")
            time.sleep(0.2)

    def find(self, selector: str):
        """``selector`` inside the notebook on show."""
        return self.page.locator(f"{NOTEBOOK} {selector}")
