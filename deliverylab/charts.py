"""The course's one chart style: the same colours, sizes and fonts in every lesson.

Colours come from the Okabe-Ito palette, which stays distinguishable for the common
kinds of colour blindness, and every role keeps its colour across all charts: green
is always "delivered once", orange "duplicated", vermillion "lost".

Each chart function returns a :class:`CourseFigure`: a matplotlib ``Figure`` built
without pyplot, so nothing is left open in pyplot's figure list and no backend is needed
(it renders with Agg). A plain ``Figure`` only shows as the text ``<Figure size ...>``
in a kernel where nobody ran ``%matplotlib inline``; a ``CourseFigure`` shows itself as a
PNG image wherever it is a cell's last expression: JupyterLab, nbval, ``nbconvert
--execute``. The same input always draws the same picture: there is no randomness and
every mapping is drawn in a fixed order.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypedDict

import matplotlib
from matplotlib import cycler
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from .config import CourseError

if TYPE_CHECKING:
    from .ledger import Ledger

# Okabe-Ito colours by name (Okabe & Ito, "Color Universal Design", 2008).
OKABE_ITO = {
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
    "black": "#000000",
}

#: What each colour means in this course. Charts only ever use these roles.
PALETTE = {
    "produced": OKABE_ITO["blue"],
    "delivered once": OKABE_ITO["bluish green"],
    "duplicated": OKABE_ITO["orange"],
    "lost": OKABE_ITO["vermillion"],
    "written": OKABE_ITO["sky blue"],
    "replayed": OKABE_ITO["reddish purple"],
    "crash": OKABE_ITO["black"],
}

FIGSIZE = (6.0, 3.0)
#: The widest a chart is drawn, in inches (at 100 dpi): JupyterLab shows an image wider than its
#: output area scaled down, and a 13-inch chart's 8-point labels came out 6 pixels tall.
MAX_WIDTH = 9.0

#: Matplotlib settings behind the course look. DejaVu Sans ships with matplotlib, so
#: the text renders the same on every machine.
COURSE_RC: dict[str, Any] = {
    "figure.figsize": FIGSIZE,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "axes.axisbelow": True,
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.6,
    "axes.prop_cycle": cycler(color=list(OKABE_ITO.values())),
    "svg.hashsalt": "deliverylab",
}

# The ledger's four counts in the order every comparison chart draws them.
_LEDGER_BARS = (
    ("produced", "produced"),
    ("delivered once", "delivered_once"),
    ("duplicated", "duplicated"),
    ("lost", "lost"),
)


def use_course_style() -> None:
    """Make the course style the default for every later plot in this process (pyplot too)."""
    matplotlib.rcParams.update(COURSE_RC)


@contextmanager
def course_style() -> Iterator[None]:
    """Use the course style inside a ``with`` block only; earlier settings come back afterwards."""
    with matplotlib.rc_context(COURSE_RC):
        yield


class CourseFigure(Figure):
    """A Figure that a notebook shows as a PNG image, with or without matplotlib's inline backend."""

    def _repr_png_(self) -> bytes:
        import io

        from matplotlib.backends.backend_agg import FigureCanvasAgg

        buffer = io.BytesIO()
        FigureCanvasAgg(self).print_png(buffer)
        return buffer.getvalue()


def new_figure(figsize: tuple[float, float] = FIGSIZE) -> tuple[CourseFigure, Any]:
    """A pyplot-free figure with one axes, laid out so labels are never clipped."""
    fig = CourseFigure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def headroom(ax, tallest: float, text_lines: int = 1) -> None:
    """Leave space above the tallest bar for its value label (and any stacked crash labels);
    counts are whole numbers, so the y ticks are too."""
    ax.set_ylim(0, max(tallest, 1) * (1.08 + 0.1 * text_lines))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


# --------------------------------------------------------------------------- ledgers


def _named_ledgers(ledgers: Mapping[str, Ledger] | Sequence[Ledger]) -> list[tuple[str, Ledger]]:
    """(name, ledger) pairs in the caller's order: a dict by its keys, a list by each label."""
    if isinstance(ledgers, Mapping):
        pairs = [(str(name), ledger) for name, ledger in ledgers.items()]
    else:
        pairs = [(ledger.label or f"pipeline {i + 1}", ledger) for i, ledger in enumerate(ledgers)]
    if not pairs:
        raise CourseError("duplicate_count_chart needs at least one ledger; run reconcile() first.")
    return pairs


def duplicate_count_chart(ledgers: Mapping[str, Ledger] | Sequence[Ledger], title: str | None = None) -> Figure:
    """Pipelines side by side: produced, delivered once, duplicated and lost order ids.

    Pipelines keep the order given (dict order or list order) so a lesson can line
    them up as it tells the story. Each group's tick label carries the verdict.
    """
    named = _named_ledgers(ledgers)
    width = 0.2
    with course_style():
        fig, ax = new_figure((min(MAX_WIDTH, max(FIGSIZE[0], 2.0 * len(named) + 1.5)),
                              FIGSIZE[1] + (0.6 if len(named) > 3 else 0)))
        for slot, (role, attribute) in enumerate(_LEDGER_BARS):
            xs = [group + (slot - 1.5) * width for group in range(len(named))]
            heights = [getattr(ledger, attribute) for _, ledger in named]
            bars = ax.bar(xs, heights, width=width, color=PALETTE[role], label=role)
            ax.bar_label(bars, padding=2, fontsize=7)
        ax.set_xticks(range(len(named)), [f"{name}\n{ledger.verdict}" for name, ledger in named],
                      fontsize=8 if len(named) <= 3 else 7)
        ax.set_ylabel("order ids")
        ax.set_xlabel("pipeline")
        ax.set_title(title or "What reached the sink, per pipeline")
        headroom(ax, max(ledger.produced for _, ledger in named))
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def copies_histogram(ledger: Ledger, title: str | None = None) -> Figure:
    """How many produced order ids ended up with 0, 1, 2 and 3 or more copies in the sink."""
    buckets = ledger.copy_buckets()
    roles = {"0": "lost", "1": "delivered once", "2": "duplicated", "3+": "duplicated"}
    with course_style():
        fig, ax = new_figure()
        labels = list(buckets)
        bars = ax.bar(labels, [buckets[b] for b in labels], width=0.6, color=[PALETTE[roles[b]] for b in labels])
        ax.bar_label(bars, padding=2, fontsize=8)
        ax.set_xlabel("copies of the order in the sink")
        ax.set_ylabel("order ids")
        name = f"{ledger.label}: " if ledger.label else ""
        ax.set_title(title or f"{name}copies per order id")
        headroom(ax, max(buckets.values()))
        legend = [Patch(color=PALETTE[r], label=r) for r in ("lost", "delivered once", "duplicated")]
        if ledger.unexpected:
            legend.append(Patch(color="none", label=f"+{ledger.unexpected} ids never produced"))
        ax.legend(handles=legend, loc="upper right")
    return fig


# --------------------------------------------------------------------------- batches


class _BatchRequired(TypedDict):
    batch_id: int
    rows: int


class BatchWrite(_BatchRequired, total=False):
    """Rows one attempt of a micro-batch wrote. ``replay=True`` marks a re-run after a crash."""

    replay: bool


class CrashMark(TypedDict):
    """A crash during ``batch_id`` at the named crash point (e.g. ``"after-sink-write"``)."""

    batch_id: int
    point: str


def _field(record: Mapping[str, Any], key: str, kind: str) -> Any:
    if not isinstance(record, Mapping) or key not in record:
        raise CourseError(f"each {kind} must be a dict with {key!r}; got {record!r}.")
    return record[key]


def _rows_per_batch(batches: Iterable[BatchWrite]) -> dict[int, list[int]]:
    """batch id -> [rows on first runs, rows on replays], sorted by batch id."""
    totals: dict[int, list[int]] = {}
    for record in batches:
        batch_id = int(_field(record, "batch_id", "batch"))
        rows = int(_field(record, "rows", "batch"))
        totals.setdefault(batch_id, [0, 0])[1 if record.get("replay", False) else 0] += rows
    return dict(sorted(totals.items()))


def _crash_points(crashes: Iterable[CrashMark]) -> dict[int, list[str]]:
    """batch id -> crash point names, both sorted, so the labels stack the same way every time."""
    points: dict[int, list[str]] = {}
    for record in crashes:
        batch_id = int(_field(record, "batch_id", "crash"))
        points.setdefault(batch_id, []).append(str(_field(record, "point", "crash")))
    return {batch_id: sorted(names) for batch_id, names in sorted(points.items())}


def batch_timeline(batches: Iterable[BatchWrite], crashes: Iterable[CrashMark] = (), title: str | None = None) -> Figure:
    """Rows written per micro-batch, replays stacked on top in their own colour, crashes marked.

    ``batches``: dicts ``{"batch_id": 3, "rows": 500, "replay": False}``; a batch that ran
    twice appears twice, the second time with ``"replay": True``.
    ``crashes``: dicts ``{"batch_id": 3, "point": "after-sink-write"}``; the dashed line
    stands at the batch that was running when the process died.
    """
    per_batch = _rows_per_batch(batches)
    crash_points = _crash_points(crashes)
    with course_style():
        fig, ax = new_figure()
        ids = list(per_batch)
        first = [per_batch[b][0] for b in ids]
        again = [per_batch[b][1] for b in ids]
        ax.bar(ids, first, width=0.6, color=PALETTE["written"], label="rows written")
        if any(again):
            ax.bar(ids, again, bottom=first, width=0.6, color=PALETTE["replayed"], hatch="//",
                   edgecolor="white", linewidth=0, label="rows re-written on replay")
        tallest = max([f + a for f, a in zip(first, again)] or [0])
        headroom(ax, tallest, 1 + max((len(n) for n in crash_points.values()), default=0))
        for batch_id, names in crash_points.items():
            ax.axvline(batch_id, color=PALETTE["crash"], linestyle="--", linewidth=1.2)
            ax.annotate("\n".join(f"crash: {n}" for n in names), xy=(batch_id, 1.0),
                        xycoords=("data", "axes fraction"), xytext=(3, -3), textcoords="offset points",
                        va="top", ha="left", fontsize=7, color=PALETTE["crash"])
        all_ids = sorted(set(ids) | set(crash_points))
        ax.set_xticks(all_ids)
        if all_ids:
            ax.set_xlim(min(all_ids) - 0.7, max(all_ids) + 1.3)
        else:
            ax.text(0.5, 0.5, "no batches yet", transform=ax.transAxes, ha="center", va="center")
        ax.set_xlabel("batch id")
        ax.set_ylabel("rows written")
        ax.set_title(title or "Rows written per micro-batch")
        handles, _ = ax.get_legend_handles_labels()
        if crash_points:
            handles.append(Line2D([], [], color=PALETTE["crash"], linestyle="--", label="crash"))
        if handles:
            ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig
