"""The course's charts: they build under Agg, show the right numbers and never change for the same input."""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from deliverylab import charts  # noqa: E402
from deliverylab.config import CourseError  # noqa: E402
from deliverylab.ledger import reconcile  # noqa: E402

PRODUCED = [(f"o-{n:06d}", "10.00") for n in range(10)]


def _ledgers():
    at_most = reconcile(PRODUCED, PRODUCED[:8], label="at-most-once")
    at_least = reconcile(PRODUCED, PRODUCED + PRODUCED[:3] + PRODUCED[:1], label="at-least-once")
    exactly = reconcile(PRODUCED, PRODUCED, label="exactly-once")
    return {"no retries": at_most, "replay": at_least, "idempotent": exactly}


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _bar_heights(ax):
    return [[round(patch.get_height()) for patch in container] for container in ax.containers]


def test_duplicate_count_chart_bars_labels_and_colours():
    fig = charts.duplicate_count_chart(_ledgers())
    ax = fig.axes[0]
    # one container per role, each with one bar per pipeline in the given order
    assert _bar_heights(ax) == [[10, 10, 10], [8, 7, 10], [0, 3, 0], [2, 0, 0]]
    assert [c.get_label() for c in ax.containers] == ["produced", "delivered once", "duplicated", "lost"]
    assert [to_hex(c.patches[0].get_facecolor()).upper() for c in ax.containers] == [
        charts.PALETTE[r] for r in ("produced", "delivered once", "duplicated", "lost")]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "no retries\nat-most-once", "replay\nat-least-once", "idempotent\nexactly-once"]
    assert ax.get_ylabel() == "order ids" and ax.get_xlabel() == "pipeline"
    assert ax.get_title() == "What reached the sink, per pipeline"
    assert ax.get_legend() is not None
    value_labels = [t.get_text() for t in ax.texts]
    assert value_labels[:3] == ["10", "10", "10"] and "3" in value_labels


def test_duplicate_count_chart_accepts_a_list_of_ledgers():
    ledgers = list(_ledgers().values()) + [reconcile(PRODUCED, PRODUCED)]
    ax = charts.duplicate_count_chart(ledgers).axes[0]
    names = [t.get_text().split("\n")[0] for t in ax.get_xticklabels()]
    assert names == ["at-most-once", "at-least-once", "exactly-once", "pipeline 4"]


def test_duplicate_count_chart_needs_a_ledger():
    with pytest.raises(CourseError):
        charts.duplicate_count_chart({})


def test_copies_histogram_buckets():
    ledger = _ledgers()["replay"]
    ax = charts.copies_histogram(ledger).axes[0]
    assert _bar_heights(ax) == [[0, 7, 2, 1]]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2", "3+"]
    assert ax.get_title() == "at-least-once: copies per order id"
    assert ax.get_xlabel() == "copies of the order in the sink"


def test_copies_histogram_mentions_unexpected_ids():
    ledger = reconcile(PRODUCED, PRODUCED + [("x-1", "1.00")])
    legend = charts.copies_histogram(ledger).axes[0].get_legend()
    assert "+1 ids never produced" in [t.get_text() for t in legend.get_texts()]


BATCHES = [
    {"batch_id": 1, "rows": 500},
    {"batch_id": 0, "rows": 500, "replay": False},
    {"batch_id": 2, "rows": 500},
    {"batch_id": 2, "rows": 500, "replay": True},
    {"batch_id": 3, "rows": 250},
]
CRASHES = [{"batch_id": 2, "point": "after-sink-write"}, {"batch_id": 2, "point": "before-commit"}]


def test_batch_timeline_stacks_replays_and_marks_crashes():
    ax = charts.batch_timeline(BATCHES, CRASHES).axes[0]
    first, replay = ax.containers
    assert [p.get_height() for p in first] == [500, 500, 500, 250]
    assert [p.get_x() + p.get_width() / 2 for p in first] == [0, 1, 2, 3]
    assert [p.get_height() for p in replay] == [0, 0, 500, 0]
    assert [p.get_y() for p in replay] == [500, 500, 500, 250]  # stacked on the first run
    crash_lines = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert [line.get_xdata()[0] for line in crash_lines] == [2]
    assert [t.get_text() for t in ax.texts] == ["crash: after-sink-write\ncrash: before-commit"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["rows written", "rows re-written on replay", "crash"]
    assert ax.get_xlabel() == "batch id" and ax.get_ylabel() == "rows written"


def test_batch_timeline_without_replays_or_crashes():
    ax = charts.batch_timeline([{"batch_id": 0, "rows": 10}]).axes[0]
    assert len(ax.containers) == 1
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["rows written"]


def test_batch_timeline_empty_and_bad_input():
    ax = charts.batch_timeline([]).axes[0]
    assert [t.get_text() for t in ax.texts] == ["no batches yet"]
    with pytest.raises(CourseError, match="'rows'"):
        charts.batch_timeline([{"batch_id": 0}])
    with pytest.raises(CourseError, match="'point'"):
        charts.batch_timeline([], [{"batch_id": 0}])


@pytest.mark.parametrize("build", [
    lambda: charts.duplicate_count_chart(_ledgers()),
    lambda: charts.copies_histogram(_ledgers()["replay"]),
    lambda: charts.batch_timeline(BATCHES, CRASHES),
])
def test_same_input_draws_the_same_png(build):
    assert _png(build()) == _png(build())


def test_charts_leave_no_pyplot_figures_behind():
    before = plt.get_fignums()
    fig = charts.duplicate_count_chart(_ledgers())
    charts.batch_timeline(BATCHES, CRASHES)
    assert plt.get_fignums() == before
    plt.close(fig)  # harmless on a figure pyplot never saw


def test_default_size_and_font():
    fig = charts.copies_histogram(_ledgers()["replay"])
    assert tuple(fig.get_size_inches()) == charts.FIGSIZE
    assert fig.axes[0].title.get_fontfamily() == ["sans-serif"]
    assert fig.axes[0].title.get_fontsize() == 10


def test_style_context_restores_and_setter_applies():
    original = matplotlib.rcParams["font.size"]
    with matplotlib.rc_context():
        with charts.course_style():
            assert matplotlib.rcParams["font.size"] == 9
            assert tuple(matplotlib.rcParams["figure.figsize"]) == charts.FIGSIZE
        assert matplotlib.rcParams["font.size"] == original
        charts.use_course_style()
        assert matplotlib.rcParams["axes.spines.top"] is False
    assert matplotlib.rcParams["font.size"] == original


def test_palette_is_okabe_ito():
    assert set(charts.PALETTE.values()) <= set(charts.OKABE_ITO.values())
    roles = ("produced", "delivered once", "duplicated", "lost", "crash")
    assert len({charts.PALETTE[r] for r in roles}) == len(roles)


@pytest.mark.parametrize("build", [
    lambda: charts.duplicate_count_chart(_ledgers()),
    lambda: charts.copies_histogram(_ledgers()["replay"]),
    lambda: charts.batch_timeline([{"batch_id": 1, "rows": 5}]),
])
def test_a_chart_shows_itself_as_a_png_without_the_inline_backend(build):
    from IPython.core.formatters import DisplayFormatter

    data, _ = DisplayFormatter().format(build())  # what a kernel sends for a cell's last expression
    assert data["image/png"].startswith(b"\x89PNG")
    assert data["text/plain"].startswith("<CourseFigure size")


def test_a_chart_of_many_pipelines_is_no_wider_than_the_notebook_shows_unscaled():
    """JupyterLab scales down an image wider than its output area: a 13.5-inch chart of six pipelines
    showed its 8-point labels 6 pixels tall. Charts stop at MAX_WIDTH and grow a little taller instead."""
    produced = [(f"o-{n}", "1.00") for n in range(10)]
    many = {f"pipeline_{n}": reconcile(produced, produced, label=f"pipeline_{n}") for n in range(6)}
    width, height = charts.duplicate_count_chart(many).get_size_inches()
    assert width <= charts.MAX_WIDTH and height > charts.FIGSIZE[1]
