"""``make site``: every lesson, executed, as HTML pages with their charts, to read without running.

For learners who want to browse a lesson before running it, and for instructors projecting
one. Each lesson in ``notebooks/`` is taken from the freshest executed copy there is:

1. the copy nbval kept in ``.state/executed/notebooks/`` (stack/nbcapture.py), when its cells
   are the lesson's cells as they are now;
2. else the copy a previous ``make site`` executed (``.state/site/.executed/``), on the same terms;
3. else the lesson is run now, in a fresh kernel (stack/runner.py), and that copy is kept.

Pages are rendered with nbconvert (charts are embedded in the page as images), get
previous / contents / next links, and ``index.html`` lists the modules of course.MODULES.
Widgets (quizzes, predictions, crash panels) cannot work in a static page; each one is
replaced by a short note. Links between lessons point at their pages; other links (labs,
files) point at the files in the project.
"""
from __future__ import annotations

import argparse
import contextlib
import html
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .. import course
from ..config import settings
from ..stack import nbcapture, runner

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = ("<p class='xo-widget-note'><em>An interactive widget is here (a quiz, a prediction, a crash panel "
               "or a button). Open the notebook in JupyterLab to use it.</em></p>")
STYLE = """<style>
.xo-nav{font-family:sans-serif;display:flex;justify-content:space-between;gap:1em;padding:.6em 1em;
        background:#f4f4f4;border-bottom:1px solid #ddd}
.xo-nav a{text-decoration:none} .xo-widget-note{color:#555}
</style>"""
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+?\.ipynb)(#[^)\s]*)?\)")


@dataclass
class Page:
    module: str
    title: str
    source: str  # where its outputs came from: "test run", "earlier site build", "run now", or "not rendered"

    @property
    def file(self) -> str:
        return f"{self.module}.html"


def site_dir() -> Path:
    return settings().state / "site"


def _cells(nb) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source) for cell in nb.cells]


def fresh_copy(lesson, candidates: list[Path]):
    """The first executed copy whose cells are the lesson's cells, with outputs; or None."""
    import nbformat

    for path in candidates:
        if not path.is_file():
            continue
        try:
            copy = nbformat.read(str(path), as_version=4)
        except Exception:  # noqa: BLE001 - a broken copy is just not fresh
            continue
        ran = any(cell.get("outputs") for cell in copy.cells if cell.cell_type == "code")
        if ran and _cells(copy) == _cells(lesson):
            return copy
    return None


def _link(target: str, anchor: str, pages: set[str], notebooks: Path, out: Path) -> str:
    stem = Path(target).stem
    if "/" not in target and stem in pages:
        return f"]({stem}.html{anchor})"
    if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
        return f"]({target}{anchor})"
    real = (notebooks / target).resolve()
    return f"]({Path(os.path.relpath(real, out)).as_posix()}{anchor})"


def prepare(nb, pages: set[str], notebooks: Path, out: Path):
    """The executed notebook, ready for a static page: widgets replaced by a note, links rewritten."""
    for cell in nb.cells:
        if "outputs" in cell:
            cell.outputs = runner.without_status_lines(cell.outputs)
        if cell.cell_type == "markdown":
            cell.source = MARKDOWN_LINK.sub(lambda m: _link(m.group(1), m.group(2) or "", pages, notebooks, out),
                                            cell.source)
        for output in cell.get("outputs", []):
            if WIDGET_MIME in output.get("data", {}):
                output["data"] = {"text/html": WIDGET_NOTE}
    nb.metadata.pop("widgets", None)
    return nb


def _nav(previous: Page | None, following: Page | None) -> str:
    left = f"<a href='{previous.file}'>← {html.escape(previous.title)}</a>" if previous else "<span></span>"
    right = f"<a href='{following.file}'>{html.escape(following.title)} →</a>" if following else "<span></span>"
    return f"<nav class='xo-nav'>{left}<a href='index.html'>Contents</a>{right}</nav>"


def render_page(nb, title: str, previous: Page | None, following: Page | None) -> str:
    """One lesson as a standalone HTML page (images embedded) with navigation at the top and bottom."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(embed_images=True)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    nav = _nav(previous, following)
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + STYLE + nav, body, count=1)
    return body.replace("</body>", nav + "</body>", 1)


def render_index(pages: list[Page], built: str) -> str:
    items = []
    for module, module_title in course.MODULES.items():
        page = next((p for p in pages if p.module == module), None)
        label = html.escape(f"{module[:2]} · {module_title}")
        if page is None:
            items.append(f"<li>{label} <em>(planned)</em></li>")
        elif page.source == "not rendered":
            items.append(f"<li>{label} <em>(not rendered: run <code>make site</code>)</em></li>")
        else:
            items.append(f"<li><a href='{page.file}'>{label}</a> <small>(outputs from the {page.source})</small></li>")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>Exactly Once, For Real</title>"
            "<style>body{font-family:sans-serif;max-width:46em;margin:2em auto;line-height:1.6}</style></head><body>"
            "<h1>Exactly Once, For Real</h1><p>Every lesson of the course, executed, with its charts. To run them "
            "yourself, open the notebooks in JupyterLab (<code>make lab</code>).</p>"
            f"<ul style='list-style:none;padding:0'>{''.join(items)}</ul><p><small>Built {html.escape(built)}.</small></p>"
            "</body></html>")


def build(root: Path | None = None, out: Path | None = None, execute: bool = True, run=runner.run,
          log=print) -> list[Page]:
    """Render every lesson of the project at ``root`` into ``out`` (default .state/site/)."""
    import nbformat

    root = root or settings().root
    out = out or site_dir()
    cache = out / ".executed"
    cache.mkdir(parents=True, exist_ok=True)
    lessons = course.lesson_notebooks(root)
    pages, notebooks, found = [], {}, {}
    for path in lessons:
        lesson = nbformat.read(str(path), as_version=4)
        copy = fresh_copy(lesson, [nbcapture.executed_dir() / "notebooks" / path.name])
        source = "test run"
        if copy is None:
            copy, source = fresh_copy(lesson, [cache / path.name]), "earlier site build"
        found[path] = (copy, source)
    to_run = [path for path, (copy, _) in found.items() if copy is None] if execute else []
    if to_run:
        log(cost_note(to_run))
    for path, (copy, source) in found.items():
        if path in to_run:
            log(f"running {path.name} (no fresh executed copy) ...")
            with clusters_stopped_after(course.needs_clusters(path.name), log):
                copy, source = run(str(path)), "run now"
            nbformat.write(copy, str(cache / path.name))
        page = Page(path.stem, f"{path.stem[:2]} · {course.title(path.stem)}", source if copy else "not rendered")
        pages.append(page)
        notebooks[page.module] = copy
    shown = [p for p in pages if notebooks[p.module] is not None]
    names = {p.module for p in shown}
    for index, page in enumerate(shown):
        nb = prepare(notebooks[page.module], names, root / "notebooks", out)
        previous = shown[index - 1] if index else None
        following = shown[index + 1] if index + 1 < len(shown) else None
        (out / page.file).write_text(render_page(nb, page.title, previous, following), encoding="utf-8")
        log(f"wrote {page.file} (outputs from the {page.source})")
    (out / "index.html").write_text(render_index(pages, f"{datetime.now():%Y-%m-%d %H:%M}"), encoding="utf-8")
    skipped = [p.module for p in pages if p.source == "not rendered"]
    log(f"site: {len(shown)} lesson page(s) in {out}/index.html" + (f"; not rendered: {', '.join(skipped)}" if skipped else ""))
    return pages


def cost_note(to_run: list[Path]) -> str:
    """What running the lessons without a fresh executed copy will cost, said before it starts."""
    names = ", ".join(p.name[:2] for p in to_run)
    note = (f"{len(to_run)} lesson(s) have no fresh executed copy ({names}): running them now takes about "
            f"{max(1, round(1.5 * len(to_run)))} minutes on two cores")
    if any(course.needs_clusters(p.name) for p in to_run):
        note += ("; lesson 09 starts the local Spark and Kafka clusters (about 6 GB of memory) and stops them "
                 "afterwards (`make test-cluster` leaves an executed copy of it instead)")
    return note + ". `make test` leaves fresh copies of the others."


@contextlib.contextmanager
def clusters_stopped_after(needed: bool, log):
    """Around running a lesson that starts the local clusters: stop afterwards those it started."""
    from ..stack import brokers, cluster

    was_up = (cluster.status().running, brokers.status().running) if needed else (True, True)
    try:
        yield
    finally:
        quiet = lambda message: None  # noqa: E731
        if not was_up[0] and cluster.status().running:
            cluster.down(log=quiet)
            log("stopped the Spark cluster that the lesson started")
        if not was_up[1] and brokers.status().running:
            brokers.down(log=quiet)
            log("stopped the Kafka cluster that the lesson started")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab site",
                                     description="Render every lesson, executed, to HTML in .state/site/.")
    parser.add_argument("--no-execute", action="store_true",
                        help="render only lessons with a fresh executed copy; run none")
    parser.add_argument("--out", type=Path, help="folder for the pages (default .state/site)")
    args = parser.parse_args(argv)
    build(out=args.out, execute=not args.no_execute)
    return 0
