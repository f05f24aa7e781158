"""make site: executed lessons as HTML pages, charts embedded, prev/next links, a contents page."""
import base64
import io
from pathlib import Path

import nbformat
import pytest

from deliverylab.config import settings
from deliverylab.stack import nbcapture
from deliverylab.workshop import site


def png() -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(2, 1))
    axes.bar(["lost", "duplicated"], [3, 5])
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode()


def lesson(next_link: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A lesson\n\n**Lab:** [lab](../labs/01-three-guarantees-lab.ipynb) · "
                                      f"**Next:** [next]({next_link})"),
        nbformat.v4.new_code_cell("charts.duplicate_count_chart(ledgers)"),
        nbformat.v4.new_code_cell("panel"),
    ]
    return nb


def executed(nb):
    nb = nbformat.from_dict(nb)
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={"image/png": png(), "text/plain": "<Figure>"})]
    nb.cells[2].outputs = [nbformat.v4.new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2, "version_minor": 0},
        "text/plain": "VBox(...)"})]
    return nb


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    first, second = lesson("01-three-guarantees.ipynb"), lesson("02-anatomy.ipynb")
    nbformat.write(first, str(root / "notebooks" / "00-setup-and-tour.ipynb"))
    nbformat.write(second, str(root / "notebooks" / "01-three-guarantees.ipynb"))
    copy = nbcapture.executed_dir() / "notebooks" / "00-setup-and-tour.ipynb"  # as nbval keeps it
    copy.parent.mkdir(parents=True)
    nbformat.write(executed(first), str(copy))
    return root


def test_every_lesson_becomes_a_page_with_its_chart_and_links(project):
    ran = []

    def run(path):
        ran.append(path)
        return executed(nbformat.read(path, as_version=4))

    pages = site.build(root=project, run=run, log=lambda m: None)
    out = settings().state / "site"
    assert [p.source for p in pages] == ["test run", "run now"]  # 00 from nbval's copy, 01 executed now
    assert [path.rsplit("/", 1)[1] for path in ran] == ["01-three-guarantees.ipynb"]
    first = (out / "00-setup-and-tour.html").read_text()
    second = (out / "01-three-guarantees.html").read_text()
    assert "data:image/png;base64," in first and "data:image/png;base64," in second
    assert "href='01-three-guarantees.html'" in first and "href='index.html'" in first
    assert "href='00-setup-and-tour.html'" in second
    assert 'href="01-three-guarantees.html"' in first  # the lesson's own "Next" link, to the page
    assert 'href="../../project/labs/01-three-guarantees-lab.ipynb"' in first  # other links: the files
    assert "Open the notebook in JupyterLab" in first and "widget-view+json" not in first
    index = (out / "index.html").read_text()
    assert "href='00-setup-and-tour.html'" in index and "href='01-three-guarantees.html'" in index
    assert "02 · Anatomy of a micro-batch <em>(planned)</em>" in index


def test_a_copy_executed_by_an_earlier_build_is_reused(project):
    site.build(root=project, run=lambda path: executed(nbformat.read(path, as_version=4)), log=lambda m: None)
    again = site.build(root=project, run=lambda path: pytest.fail("ran a lesson again"), log=lambda m: None)
    assert [p.source for p in again] == ["test run", "earlier site build"]


def test_a_changed_lesson_is_not_fresh(project):
    path = project / "notebooks" / "00-setup-and-tour.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    nb.cells[1].source += "  # edited"
    nbformat.write(nb, str(path))
    pages = site.build(root=project, execute=False, log=lambda m: None)
    assert [p.source for p in pages] == ["not rendered", "not rendered"]
    assert "not rendered: run <code>make site</code>" in (settings().state / "site" / "index.html").read_text()


def test_it_says_what_running_costs_before_it_runs(project):
    said = []
    site.build(root=project, run=lambda path: executed(nbformat.read(path, as_version=4)), log=said.append)
    assert said[0].startswith("1 lesson(s) have no fresh executed copy (01): running them now takes about 2 minutes")
    assert said[1] == "running 01-three-guarantees.ipynb (no fresh executed copy) ..."
    note = site.cost_note([Path("notebooks/08-capstone.ipynb"), Path("notebooks/09-beyond-the-driver.ipynb")])
    assert "starts the local Spark and Kafka clusters (about 6 GB of memory) and stops them afterwards" in note


@pytest.mark.parametrize("was_up", [False, True])
def test_a_lesson_run_for_the_site_leaves_the_clusters_as_it_found_them(monkeypatch, was_up):
    from types import SimpleNamespace

    from deliverylab.stack import brokers, cluster

    state = {"spark": was_up, "kafka": was_up}
    monkeypatch.setattr(cluster, "status", lambda: SimpleNamespace(running=state["spark"]))
    monkeypatch.setattr(brokers, "status", lambda: SimpleNamespace(running=state["kafka"]))
    monkeypatch.setattr(cluster, "down", lambda log: state.update(spark=False))
    monkeypatch.setattr(brokers, "down", lambda log: state.update(kafka=False))
    said = []
    with site.clusters_stopped_after(True, said.append):
        state.update(spark=True, kafka=True)  # what lesson 09's first cell does
    assert state == {"spark": was_up, "kafka": was_up}
    assert len(said) == (0 if was_up else 2)
