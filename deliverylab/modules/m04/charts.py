"""Module 04's chart: rows kept in the dedup state after each micro-batch, one line per pipeline.

Drawn in the course style (deliverylab/charts.py); it shows as an image wherever it is a
cell's last expression.
"""
from __future__ import annotations

from collections.abc import Mapping

from ...charts import OKABE_ITO, course_style, headroom, new_figure
from ...config import CourseError

#: A line colour per pipeline, in the order given (Okabe-Ito, as everywhere in the course).
LINE_COLOURS = (OKABE_ITO["vermillion"], OKABE_ITO["blue"], OKABE_ITO["bluish green"], OKABE_ITO["reddish purple"])
MARKERS = ("o", "s", "^", "D")


def state_rows_chart(histories: Mapping[str, list[dict]], distinct_orders: int | None = None, title: str | None = None):
    """State rows after each micro-batch (``watermarks.state_history`` per pipeline), with the
    number of distinct orders seen as a dashed reference line."""
    if not histories or not any(histories.values()):
        raise CourseError("state_rows_chart needs the state history of at least one pipeline that ran a batch: "
                          "{name: watermarks.state_history(pipe.progress())}.")
    with course_style():
        fig, ax = new_figure()
        tallest = distinct_orders or 0
        for i, (name, history) in enumerate(histories.items()):
            xs = [h["batch"] for h in history]
            ys = [h["state_rows"] for h in history]
            ax.plot(xs, ys, color=LINE_COLOURS[i % len(LINE_COLOURS)], marker=MARKERS[i % len(MARKERS)],
                    markersize=4, linewidth=1.6, label=name)
            tallest = max([tallest, *ys])
        if distinct_orders:
            ax.axhline(distinct_orders, color=OKABE_ITO["black"], linestyle="--", linewidth=0.9,
                       label=f"distinct orders ({distinct_orders})")
        headroom(ax, tallest)
        ax.set_xlabel("batch id")
        ax.set_ylabel("rows in the dedup state")
        ax.set_title(title or "Dedup state after each micro-batch")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig
