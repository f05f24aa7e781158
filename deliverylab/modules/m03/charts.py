"""Module 03's chart: the revenue an at-most-once pipeline never delivered.

    missing_revenue_chart({"no checkpoint": ledger, ...})

One bar per pipeline: the revenue that reached the sink, with the revenue that was produced
but never arrived stacked on top in the course's colour for "lost", labelled with its amount.
It uses the course style (charts.course_style, new_figure, PALETTE, headroom).
"""
from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from ... import charts
from ...config import CourseError


def missing_revenue_chart(ledgers: Mapping, title: str | None = None):
    """Revenue delivered (green) and missing (vermillion, labelled) per pipeline, in the order given."""
    if not ledgers:
        raise CourseError("missing_revenue_chart needs at least one ledger: {'name': pipe.ledger(), ...}.")
    names = [str(name) for name in ledgers]
    delivered = [min(l.revenue_observed, l.revenue_expected) for l in ledgers.values()]
    missing = [max(Decimal(0), l.revenue_expected - l.revenue_observed) for l in ledgers.values()]
    with charts.course_style():
        fig, ax = charts.new_figure((min(charts.MAX_WIDTH, max(charts.FIGSIZE[0], 1.8 * len(names) + 2.0)),
                                     charts.FIGSIZE[1]))
        xs = range(len(names))
        ax.bar(xs, [float(d) for d in delivered], width=0.55, color=charts.PALETTE["delivered once"],
               label="revenue delivered")
        bars = ax.bar(xs, [float(m) for m in missing], bottom=[float(d) for d in delivered], width=0.55,
                      color=charts.PALETTE["lost"], label="revenue lost")
        ax.bar_label(bars, labels=[f"-{m:,.2f}" if m else "" for m in missing], padding=2, fontsize=7)
        ax.set_xticks(list(xs), [f"{n}\n{l.lost} orders lost" for n, l in zip(names, ledgers.values())])
        ax.set_ylabel("revenue")
        ax.set_title(title or "Revenue produced, and what never arrived")
        charts.headroom(ax, float(max(l.revenue_expected for l in ledgers.values())))
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig
