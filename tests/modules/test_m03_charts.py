"""m03.missing_revenue_chart and m03.checkpoint_folder (no broker, no Spark)."""
from __future__ import annotations

import pytest

from deliverylab import charts, ledger
from deliverylab.config import CourseError
from deliverylab.modules import m03

PRODUCED = [("a", "10.00"), ("b", "20.00"), ("c", "5.50")]


def test_the_chart_stacks_delivered_and_lost_revenue_per_pipeline():
    ledgers = {"lossy": ledger.reconcile(PRODUCED, PRODUCED[:1]), "whole": ledger.reconcile(PRODUCED, PRODUCED)}
    fig = m03.missing_revenue_chart(ledgers)
    assert isinstance(fig, charts.CourseFigure) and fig._repr_png_().startswith(b"\x89PNG")
    ax = fig.axes[0]
    heights = [round(p.get_height(), 2) for p in ax.patches]
    assert heights == [10.0, 35.5, 25.5, 0.0]       # delivered lossy, whole; lost lossy, whole
    assert [t.get_text() for t in ax.get_xticklabels()] == ["lossy\n2 orders lost", "whole\n0 orders lost"]
    assert [t.get_text() for t in ax.texts if t.get_text()] == ["-25.50"]


def test_duplicates_do_not_count_as_missing():
    fig = m03.missing_revenue_chart({"twice": ledger.reconcile(PRODUCED, PRODUCED + PRODUCED[:1])})
    assert [round(p.get_height(), 2) for p in fig.axes[0].patches] == [35.5, 0.0]


def test_no_ledgers_is_an_error_that_says_what_to_pass():
    with pytest.raises(CourseError, match="at least one ledger"):
        m03.missing_revenue_chart({})


def test_checkpoint_folder_needs_a_streaming_query():
    with pytest.raises(CourseError, match="StreamingQuery"):
        m03.checkpoint_folder("not a query")
