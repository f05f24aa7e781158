"""The price of exactly-once: throughput and batch latency of each variant, measured side by side.

Measured in the matrix's own run (matrix.py), so every variant is timed in the same run,
on the same orders and batch size: each pipeline's first driver run, before its first
crash, processes a few batches of MAX_PER_BATCH orders. Throughput counts the orders those
batches read per second of the batches' own time (Spark's ``triggerExecution``); latency
is the median time of one batch. Batches of a run that recovered from a crash are left out.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from ... import charts
from ...config import CourseError
from ...inspector import TextBlock, text_table


@dataclass
class Price:
    variant: str
    orders: int            # orders read by the timed batches
    batches: int           # batches timed
    orders_per_s: float
    median_batch_ms: float


def of_progress(variant: str, progress: list[dict]) -> Price:
    """A variant's price from progress records (``rows`` and ``ms`` per batch); empty batches are left out."""
    timed = [p for p in progress if p.get("rows") and p.get("ms")]
    rows = sum(p["rows"] for p in timed)
    ms = [p["ms"] for p in timed]
    return Price(variant, rows, len(timed), rows / (sum(ms) / 1000) if ms else 0.0,
                 statistics.median(ms) if ms else 0.0)


def from_matrix(rows) -> list[Price]:
    """The price of every variant in a matrix (``matrix.run``), from its first, uncrashed run."""
    return [of_progress(r.variant, r.pipe.progress(run=1)) for r in rows]


def _fastest(prices: list[Price]) -> float:
    if not prices:
        raise CourseError("No prices to show: measure some with price.from_matrix(rows) first.")
    return max(p.orders_per_s for p in prices) or 1.0


def all_measured_line(prices: list[Price]) -> str:
    """The stable line about a measurement: how many variants were timed, and on how many batches."""
    timed = [p for p in prices if p.batches]
    return (f"every variant timed: {len(timed) == len(prices)} | "
            f"every timed variant had at least 2 batches: {all(p.batches >= 2 for p in timed)}")


def table(prices: list[Price]) -> TextBlock:
    """orders/s, median batch ms and the share of the fastest, fastest first."""
    fastest = _fastest(prices)
    rows = [{"variant": p.variant, "rate": f"{p.orders_per_s:,.0f}", "latency": f"{p.median_batch_ms:,.0f}",
             "ratio": f"{p.orders_per_s / fastest:.2f}", "batches": p.batches}
            for p in sorted(prices, key=lambda p: -p.orders_per_s)]
    return TextBlock(text_table(rows, [("variant", "variant"), ("rate", "orders/s"), ("latency", "median batch ms"),
                                       ("ratio", "x fastest"), ("batches", "batches")],
                                numeric=("rate", "latency", "ratio", "batches")))


def chart(prices: list[Price], title: str | None = None):
    """Orders per second per variant, fastest first, each bar labelled with its share of the fastest."""
    fastest = _fastest(prices)
    shown = sorted(prices, key=lambda p: -p.orders_per_s)
    with charts.course_style():
        fig, ax = charts.new_figure((charts.FIGSIZE[0] + 1.5, 0.3 * len(shown) + 1.2))
        ys = list(range(len(shown)))
        bars = ax.barh(ys, [p.orders_per_s for p in shown], height=0.6, color=charts.PALETTE["written"])
        ax.bar_label(bars, labels=[f"{p.orders_per_s / fastest:.2f}x  ({p.median_batch_ms:,.0f} ms/batch)"
                                   for p in shown], padding=2, fontsize=7)
        ax.set_yticks(ys, [p.variant for p in shown], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, fastest * 1.45)
        ax.set_xlabel("orders per second of batch time")
        ax.set_title(title or "The price of exactly-once: throughput per variant")
    return fig
