"""What a learner sees in JupyterLab, checked in a real browser (headless Chromium).

nbval compares text only: it cannot see a chart that renders as ``<Figure ...>``, a red
stderr box, or a button that fails after Run All. This test can:

* **Live**: lesson 01 and lab 01 are opened and run with Run > Run All Cells, as a
  learner runs them (lesson 01 has what lesson 00 has, the setup cell, Spark, a chart, plus
  a crash panel and predictions; lesson 00 is checked in its executed copy below). No cell may show an error or a stderr box, every chart cell
  shows an image, the crash panel's buttons change its status line after Run All, a
  Prediction keeps its pick when its cell is run again, and a lab's unfinished TODO
  shows the course's one-line message.
* **Every notebook**: the copy of each lesson, lab and solution that nbval executed in
  this ``make test`` run (kept by ``deliverylab.stack.nbcapture``) is opened in JupyterLab
  (module 09's, which run on the local clusters, in ``make test-cluster``):
  every chart cell must show an image and no lesson cell an error or a stderr box (one
  JupyterLab for all of them, opened one after the other from its File menu, not waiting
  for their kernels, since they show stored outputs). So
  each new module is checked in the browser the day it lands, without running it twice.
* **Module 10's kernel**: lesson 10, its lab and its solution open on the second kernel, and the
  notebook's toolbar says so: "Python 3 (Spark 4.1 + Iceberg)" (course.ICEBERG_MODULES).

Screenshots of failures go to ``.state/browser/`` and are named in the failure message.
"""
from __future__ import annotations

import ast
import re
import time
from pathlib import Path

import nbformat
import pytest

from deliverylab import course
from deliverylab.config import settings
from deliverylab.stack import runner
from deliverylab.stack.nbcapture import executed_dir
from labpage import RED_BOX, LabServer, NotebookPage

pytestmark = pytest.mark.browser

ROOT = settings().root
LIVE_LESSONS = ["01-three-guarantees"]


def code_cell_count(path: Path) -> int:
    return sum(1 for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "code")


def open_notebook(page, server: LabServer, relative: str) -> NotebookPage:
    return NotebookPage(page, server, relative, code_cell_count(ROOT / relative))


def draws_a_chart(source: str) -> bool:
    """True when a cell's last statement calls a chart function, whose figure the cell then shows:
    one of a ``charts`` module (``charts.batch_timeline(...)``) or one named ``...chart`` (``matrix.chart(rows)``)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    call = body[-1].value if body and isinstance(body[-1], ast.Expr) else None
    if not isinstance(call, ast.Call):
        return False
    names = [node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
             for node in ast.walk(call.func)]  # the called name first, then what it hangs on
    return names[0].endswith("chart") or "charts" in names[1:]


def chart_cells(path: Path) -> list[int]:
    """Indexes (among code cells) of the cells that draw a course chart."""
    nb = nbformat.read(str(path), as_version=4)
    return [index for index, cell in enumerate(c for c in nb.cells if c.cell_type == "code")
            if draws_a_chart(cell.source)]


def image_cells(path: Path) -> list[int]:
    """Indexes (among code cells) of the cells whose stored outputs hold an image."""
    nb = nbformat.read(str(path), as_version=4)
    return [index for index, cell in enumerate(c for c in nb.cells if c.cell_type == "code")
            if any("image/png" in output.get("data", {}) for output in cell.get("outputs", []))]


def raising_cells(path: Path) -> list[int]:
    nb = nbformat.read(str(path), as_version=4)
    return [i for i, c in enumerate(c for c in nb.cells if c.cell_type == "code")
            if "raises-exception" in c.get("metadata", {}).get("tags", [])]


def assert_what_a_learner_sees(nb: NotebookPage, source: Path, label: str) -> None:
    """Charts are images; no red box (stderr or error) except where the notebook expects one (a lab's TODO)."""
    problems = []
    cells = nb.code_cells()
    assert cells.count() == code_cell_count(source), f"{nb.name}: {cells.count()} code cells on the page"
    for index in chart_cells(source):
        if cells.nth(index).locator(".jp-OutputArea-output img").count() == 0:
            problems.append(f"chart cell {index + 1} shows no image: "
                            f"{cells.nth(index).locator('.jp-OutputArea').inner_text()[:80]!r}")
    allowed = set(raising_cells(source))
    for index in range(cells.count()):
        boxes = cells.nth(index).locator(RED_BOX)
        if index not in allowed and boxes.count():
            problems.append(f"code cell {index + 1} shows a red box: {boxes.first.inner_text()[:200]!r}")
    if problems:
        shot = nb.screenshot(label)
        raise AssertionError(f"{nb.name}: " + "; ".join(problems) + f" (screenshot: {shot})")


# --------------------------------------------------------------------------- live


@pytest.fixture(scope="module")
def live_server(tmp_path_factory, chromium_path):
    server = LabServer(tmp_path_factory.mktemp("live"), {"notebooks": ROOT / "notebooks", "labs": ROOT / "labs"})
    yield server
    server.stop()


@pytest.mark.parametrize("lesson", LIVE_LESSONS)
def test_a_lesson_runs_top_to_bottom_in_jupyterlab(live_server, page, lesson):
    nb = open_notebook(page, live_server, f"notebooks/{lesson}.ipynb")
    status_lines = StatusLines(nb)
    seconds = nb.run_all(watch=status_lines.look)
    assert_what_a_learner_sees(nb, ROOT / "notebooks" / f"{lesson}.ipynb", "run-all")
    print(f"{lesson}: Run All took {seconds:.0f} s in the browser")
    if lesson == "01-three-guarantees":
        saved = live_server.root / "notebooks" / f"{lesson}.ipynb"
        status_lines.check_shown_then_closed(saved)
        check_the_crash_panel_after_run_all(nb)
        check_a_prediction_keeps_its_pick(nb)
        check_it_reopens_without_a_dead_widget(nb, live_server, saved)


#: Lessons with the longest cells, run with Run All by `make test-run-all` (too long for `make test`).
LONG_LESSONS = {"04-at-least-once": r"crash armed|not yet committed|trial query",
                "08-capstone": r"guarantee matrix · \d+ of \d+ done",
                "10-iceberg": r"crash armed|starting a driver"}  # on its own kernel, Spark 4.1 + Iceberg


@pytest.mark.run_all
@pytest.mark.parametrize("lesson", sorted(LONG_LESSONS))
def test_a_long_lesson_says_what_its_long_cells_wait_for(live_server, page, lesson):
    nb = open_notebook(page, live_server, f"notebooks/{lesson}.ipynb")
    status_lines = StatusLines(nb)
    seconds = nb.run_all(timeout_s=900, watch=status_lines.look)
    print(f"{lesson}: Run All took {seconds:.0f} s in the browser; status lines seen: {len(status_lines.seen)}")
    assert_what_a_learner_sees(nb, ROOT / "notebooks" / f"{lesson}.ipynb", "run-all")
    assert any(re.search(LONG_LESSONS[lesson], t) for t in status_lines.seen), sorted(status_lines.seen)[:10]
    status_lines.check_shown_then_closed(live_server.root / "notebooks" / f"{lesson}.ipynb")


class StatusLines:
    """The status line under a long cell (deliverylab.statusline), as the learner sees it during Run All."""

    MARK = "⏳"

    def __init__(self, nb: NotebookPage):
        self.nb = nb
        self.seen: set[str] = set()

    def look(self) -> None:
        lines = self.nb.find(".widget-html").filter(has_text=self.MARK)
        try:
            self.seen.update(t.strip() for t in lines.all_inner_texts())
        except Exception:  # noqa: BLE001 - a line closed while it was read
            pass

    def check_shown_then_closed(self, saved: Path) -> None:
        waits = [t for t in self.seen if re.search(r"starting a driver|crash armed|not yet committed", t)]
        assert waits, f"no status line said what a long cell waited for; seen: {sorted(self.seen)[:5]}"
        assert re.search(r" · \d+ s$", waits[0]), waits[0]  # with its clock
        left = self.nb.find(".widget-html").filter(has_text=self.MARK).count()
        assert left == 0, f"{left} status lines still shown after Run All (screenshot: {self.nb.screenshot('status')})"
        self.nb.save(saved)  # a finished line is saved as its last text: the notebook reopens without a dead widget
        lines = [o["data"] for cell in nbformat.read(str(saved), as_version=4).cells for o in cell.get("outputs", [])
                 if o.get("metadata", {}).get(runner.STATUS_LINE)]
        assert lines and all(list(data) == ["text/plain"] and data["text/plain"].startswith("✓ ") for data in lines), \
            f"status lines saved as: {lines[:3]}"


def panel_status(nb: NotebookPage) -> str:
    return nb.find(".widget-html").filter(has_text=re.compile(r"^at_least_once: ")).last.inner_text()


def wait_for_status(nb: NotebookPage, pattern: str, timeout_s: float = 300) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = panel_status(nb)
        if re.search(pattern, status):
            return status
        time.sleep(0.3)
    shot = nb.screenshot("panel")
    raise AssertionError(f"the crash panel's status never matched {pattern!r}: {panel_status(nb)!r} (screenshot: {shot})")


def check_the_crash_panel_after_run_all(nb: NotebookPage) -> None:
    before = wait_for_status(nb, r"running")
    nb.find("button").filter(has_text="Crash driver").last.click()
    crashed = wait_for_status(nb, r"crashed \(SIGKILL\)")
    assert crashed != before
    nb.find("button").filter(has_text="Restart").last.click()
    wait_for_status(nb, r": running")
    messages = nb.find(".widget-output").last.inner_text()
    assert "driver killed at after_sink_write" in messages and "restarted" in messages, messages


def check_it_reopens_without_a_dead_widget(nb: NotebookPage, server: LabServer, saved: Path) -> None:
    """Saved, its kernel shut down, opened again (as the next day): the crash panel and the predictions
    show as they were saved, no 'Error displaying widget: model not found'."""
    nb.save(saved)
    nb.menu("Kernel", "Shut Down Kernel")
    confirm = nb.page.locator(".jp-Dialog button", has_text=re.compile("^Shut Down$"))
    if confirm.count():
        confirm.click()
    nb.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='unknown'], "
                              ".jp-Notebook-ExecutionIndicator[data-status='dead']", timeout=30_000)
    again = NotebookPage(nb.page, server, nb.name, code_cell_count(ROOT / nb.name), wait_for_kernel=False)
    # widgets render from the saved state a moment after the cells: wait for the panel, however long it takes
    try:
        again.find("button").filter(has_text="Crash driver").first.wait_for(timeout=120_000)
    except Exception as error:  # noqa: BLE001 - Playwright's timeout, said with a screenshot
        raise AssertionError(f"no crash panel after reopening (screenshot: {again.screenshot('reopen')})") from error
    text = again.text()
    assert "Error displaying widget" not in text, f"a dead widget after reopening (screenshot: {again.screenshot('reopen')})"


def check_a_prediction_keeps_its_pick(nb: NotebookPage) -> None:
    """Pick an answer, then Shift+Enter on the same cell (what the lesson invites): the pick stays."""
    cell = nb.code_cells().filter(has_text="guess = Prediction(").first

    def run_cell_again():
        nb.run_cell(cell)

    run_cell_again()  # after Run All the first prediction is revealed and locked: show it afresh
    radios = cell.locator(".widget-radio-box")
    radios.get_by_text("some orders are written twice").click()
    assert radios.locator("input:checked").count() == 1
    run_cell_again()
    checked = cell.locator(".widget-radio-box input:checked")
    assert checked.count() == 1, f"the pick was lost (screenshot: {nb.screenshot('prediction')})"
    picked = cell.locator(".widget-radio-box label").filter(has=nb.page.locator("input:checked"))
    assert "written twice" in picked.inner_text()


def test_an_unfinished_lab_todo_shows_the_friendly_message(live_server, page):
    nb = open_notebook(page, live_server, "labs/01-three-guarantees-lab.ipynb")
    nb.run_all()
    source = ROOT / "labs" / "01-three-guarantees-lab.ipynb"
    first_todo = min(raising_cells(source))
    message = nb.code_cell(first_todo).locator(RED_BOX).inner_text()
    assert message.startswith("TODO not done yet:") and "Traceback" not in message, \
        f"{message!r} (screenshot: {nb.screenshot('todo')})"
    assert_what_a_learner_sees(nb, source, "todo")  # red boxes only in the TODO cells
    assert "SKIP" in nb.text()  # the checks of the unfinished step say so, instead of failing


# --------------------------------------------------------------------------- every executed notebook


def executed_notebooks() -> list[Path]:
    folders = ("notebooks", "labs", "solutions")
    return sorted(p for folder in folders for p in (ROOT / folder).glob("*.ipynb"))


@pytest.fixture(scope="module")
def executed_server(tmp_path_factory, chromium_path):
    folders = {name: executed_dir() / name for name in ("notebooks", "labs", "solutions")
               if (executed_dir() / name).is_dir()}
    if not folders:
        pytest.fail("No executed notebooks in .state/executed: run nbval first (`make test` does, "
                    "with -p deliverylab.stack.nbcapture).")
    server = LabServer(tmp_path_factory.mktemp("executed"), folders)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def executed_page(browser):
    """One tab for every executed notebook: JupyterLab loads once, then each notebook replaces the one
    before it through File > Open from Path... (about 1 s each; loading JupyterLab afresh took about 3 s)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("source", executed_notebooks(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_notebook_shows_what_it_promises(executed_server, executed_page, source):
    relative = source.relative_to(ROOT).as_posix()
    copy = executed_dir() / relative
    if course.needs_clusters(source.name) and not copy.exists():
        pytest.skip(f"{relative} runs on the local clusters: `make test-cluster` executes it and opens it here")
    assert copy.exists(), f"{relative} was not executed in this run: run nbval on it first (make test does)"
    assert copy.stat().st_mtime >= source.stat().st_mtime, f"{relative} changed after its last nbval run"
    # the browser checks the chart cells for an image: they must be the cells that drew one under nbval
    assert image_cells(copy) == chart_cells(source), f"{relative}: cells with an image != cells that call a chart"
    # what it shows is its stored outputs: no need to wait for its kernel
    nb = NotebookPage(executed_page, executed_server, relative, code_cell_count(ROOT / relative),
                      wait_for_kernel=False, in_open_lab=True)
    assert_what_a_learner_sees(nb, source, "executed")


def iceberg_notebooks() -> list:
    """Lesson, solution and lab of each module on the Iceberg kernel; one not written yet is skipped, saying so."""
    wanted = [f"{folder}/{module}{suffix}.ipynb" for module in sorted(course.ICEBERG_MODULES)
              for folder, suffix in (("notebooks", ""), ("solutions", course.LAB_SUFFIX), ("labs", course.LAB_SUFFIX))]
    return [pytest.param(relative, marks=pytest.mark.skipif(
        not (ROOT / relative).exists(), reason=f"{relative} is not written yet (module 10 is being built)"))
        for relative in wanted]


@pytest.mark.parametrize("relative", iceberg_notebooks())
def test_module_10_opens_on_its_own_kernel(executed_server, executed_page, relative):
    copy = executed_dir() / relative
    assert copy.exists(), f"{relative} was not executed in this run: run nbval on it first"
    assert copy.stat().st_mtime >= (ROOT / relative).stat().st_mtime, f"{relative} changed after its last nbval run"
    nb = NotebookPage(executed_page, executed_server, relative, code_cell_count(ROOT / relative),
                      wait_for_kernel=False, in_open_lab=True)
    shown = executed_page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-KernelName")
    try:  # the toolbar names the kernel once JupyterLab has started the one the notebook asks for
        shown.filter(has_text=course.ICEBERG_KERNEL_DISPLAY_NAME).first.wait_for(timeout=120_000)
    except Exception as error:  # noqa: BLE001 - Playwright's timeout, said with what the toolbar shows
        named = shown.first.inner_text() if shown.count() else "no kernel"
        raise AssertionError(f"{relative} shows the kernel {named!r}, not {course.ICEBERG_KERNEL_DISPLAY_NAME!r} "
                             f"(screenshot: {nb.screenshot('kernel')})") from error


def test_every_module_lesson_is_checked():
    lessons = {p.stem for p in course.lesson_notebooks(ROOT)}
    assert set(LIVE_LESSONS) <= lessons
    assert {p.stem for p in executed_notebooks() if p.parent.name == "notebooks"} == lessons
