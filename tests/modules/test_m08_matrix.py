"""Module 08's matrix and price, on hand-built rows (no broker, no Spark)."""
from types import SimpleNamespace

import pytest

from deliverylab.config import CourseError
from deliverylab.crashlab.variants import VARIANTS
from deliverylab.modules.m08 import audit, matrix, price
from deliverylab.quiz import Prediction


def row(variant, observed, lost=0, duplicated=0, progress=()):
    pipe = SimpleNamespace(progress=lambda run=None: list(progress))
    return matrix.MatrixRow(variant, VARIANTS[variant].guarantee, observed, 60, lost, duplicated,
                            matrix.plan_for(variant), pipe)


ROWS = [row("at_least_once", "at-least-once", duplicated=12),
        row("delta_sink", "exactly-once"),
        row("control_table_after", "exactly-once")]   # a run that missed the crash window


def test_every_variant_goes_through_the_common_plan_then_its_own_points():
    assert matrix.plan_for("delta_sink") == list(matrix.PLAN)
    assert matrix.plan_for("control_table_after") == [*matrix.PLAN, "between_data_and_marker"]
    assert "exactly-once" in matrix.OUTCOMES and "lost and duplicated" in matrix.OUTCOMES


def test_verdict_lines_say_which_variant_is_not_as_expected():
    lines = matrix.verdict_lines(ROWS).splitlines()
    assert lines[0].split() == ["at_least_once", "at-least-once", "as", "expected"]
    assert lines[2].endswith("NOT as expected") and lines[2].startswith("control_table_after")
    assert len({line.index(line.split()[1]) for line in lines}) == 1  # aligned columns


def test_verdict_lines_refuse_an_empty_matrix():
    with pytest.raises(CourseError, match="matrix.run"):
        matrix.verdict_lines([])
    with pytest.raises(CourseError, match="matrix.run"):
        matrix.summary_lines([])


def test_summary_lines_name_what_is_not_as_expected_and_the_broken_variant():
    assert matrix.summary_lines(ROWS).splitlines() == [
        "every variant observed as the course expects: False",   # control_table_after missed its window
        "verdicts observed: at-least-once, exactly-once",
        "control_table_after (broken on purpose): exactly-once, 0 lost, duplicated: False"]
    good = [ROWS[0], row("control_table_after", "at-least-once", duplicated=3)]
    assert matrix.summary_lines(good).splitlines() == [
        "every variant observed as the course expects: True",
        "verdicts observed: at-least-once",
        "control_table_after (broken on purpose): at-least-once, 0 lost, duplicated: True"]
    assert matrix.summary_lines(ROWS[:2]).splitlines()[2].endswith("not run")


def test_make_test_runs_the_sample_and_a_learner_every_variant(monkeypatch):
    monkeypatch.delenv("DELIVERYLAB_REDUCED", raising=False)
    assert matrix.default_variants() == matrix.runnable()
    monkeypatch.setenv("DELIVERYLAB_REDUCED", "1")
    assert matrix.default_variants() == list(matrix.SAMPLE)
    assert {VARIANTS[v].guarantee for v in matrix.SAMPLE} == {"at-most-once", "at-least-once", "exactly-once"}
    assert matrix.BROKEN_ON_PURPOSE in matrix.SAMPLE and set(matrix.SAMPLE) <= set(matrix.runnable())
    monkeypatch.setenv("DELIVERYLAB_REDUCED", "sometimes")
    with pytest.raises(CourseError, match="DELIVERYLAB_REDUCED"):
        matrix.default_variants()


def test_table_without_predictions_has_no_prediction_column():
    text = matrix.table(ROWS)
    assert "you predicted" not in text and "course expects" in text.splitlines()[0]
    assert text.splitlines()[1].split()[-2:] == ["0", "12"]


def test_table_compares_predictions_given_as_strings_or_widgets():
    widget = Prediction("control_table_after?", list(matrix.OUTCOMES))
    widget.pick("at-least-once")
    text = matrix.table(ROWS, {"at_least_once": "at-least-once", "control_table_after": widget})
    lines = text.splitlines()
    assert "you predicted" in lines[0]
    assert lines[1].endswith("✓") and lines[3].endswith("✗")
    assert "?" in lines[2] and not lines[2].endswith(("✓", "✗"))  # no pick: neither
    assert matrix.score_line(ROWS, {"at_least_once": "at-least-once", "control_table_after": widget}) == \
        "your predictions: 1 of 3 observed"


def test_an_unpicked_widget_counts_as_no_prediction():
    assert matrix.picks({"delta_sink": Prediction("?", list(matrix.OUTCOMES))}) == {"delta_sink": "?"}


def test_run_refuses_an_unknown_variant_before_starting_anything():
    with pytest.raises(CourseError, match="delta_sink"):
        matrix.run(None, ["delta_snik"])


def test_matrix_chart_has_a_bar_per_variant_and_marks_the_unexpected():
    fig = matrix.chart(ROWS)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "at_least_once: at-least-once" and labels[2].endswith("(NOT as expected)")
    assert sorted(p.get_width() for p in ax.patches)[-1] == 12
    assert len(ax.patches) == 2 * len(ROWS)


PROGRESS = [{"rows": 0, "ms": 900}, {"rows": 10, "ms": 100}, {"rows": 10, "ms": 300}, {"rows": 5, "ms": None}]


def test_price_times_only_batches_with_rows_and_a_duration():
    p = price.of_progress("x", PROGRESS)
    assert (p.orders, p.batches, p.orders_per_s, p.median_batch_ms) == (20, 2, 50.0, 200)
    assert price.of_progress("y", []).orders_per_s == 0.0


def test_price_from_matrix_reads_each_pipes_first_run():
    rows = [row("delta_sink", "exactly-once", progress=PROGRESS),
            row("delta_merge", "exactly-once", progress=[{"rows": 10, "ms": 1000}, {"rows": 10, "ms": 1000}])]
    prices = price.from_matrix(rows)
    assert [(p.variant, p.orders_per_s) for p in prices] == [("delta_sink", 50.0), ("delta_merge", 10.0)]
    assert price.all_measured_line(prices) == "every variant timed: True | every timed variant had at least 2 batches: True"
    assert price.all_measured_line(prices + [price.Price("kafka_sink", 0, 0, 0.0, 0.0)]).startswith("every variant timed: False")
    text = price.table(prices).splitlines()
    assert text[1].split()[:4] == ["delta_sink", "50", "200", "1.00"] and text[2].split()[3] == "0.20"
    fig = price.chart(prices)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["delta_sink", "delta_merge"]
    with pytest.raises(CourseError):
        price.table([])


V = audit.Version


def test_audit_lines_on_a_clean_history():
    versions = [V(0, "STREAMING UPDATE", 0, "q"), V(1, "STREAMING UPDATE", 1, "q"), V(2, "STREAMING UPDATE", 3, "q")]
    assert audit.audit_lines(versions, {1, 3}) == [
        "every version is a STREAMING UPDATE: True",
        "writers (query ids) in the history: 1",
        "a batch id twice: False",
        "batches with data committed by the checkpoint are all in the history: True",
        "versions without data (empty batches): 1",
    ]


def test_audit_lines_say_whether_every_version_without_data_is_an_empty_batch():
    versions = [V(0, "STREAMING UPDATE", 0, "q"), V(1, "STREAMING UPDATE", 1, "q"), V(2, "STREAMING UPDATE", 3, "q")]
    lines = audit.audit_lines(versions, {1, 3}, empty={0})
    assert lines[4] == ("every version without data is a batch the checkpoint committed with an empty offset range: "
                        "True")
    assert lines[5] == "versions without data (empty batches): 1"
    assert audit.audit_lines(versions, {1}, empty={0})[4].endswith("False")  # batch 3 had orders, but no record of them


def test_audit_lines_catch_a_batch_twice_and_a_missing_batch():
    versions = [V(0, "STREAMING UPDATE", 1, "q"), V(1, "STREAMING UPDATE", 1, "q"), V(2, "WRITE", None, None)]
    lines = audit.audit_lines(versions, {1, 2})
    assert lines[0].endswith("False") and lines[2].endswith("True") and lines[3].endswith("False")


def test_the_matrix_runs_every_variant_that_needs_no_lesson_settings():
    names = matrix.runnable()
    assert "control_table_after" in names and "dedup_watermark" in names  # .get("delay", default) is fine
    assert set(names) | set(matrix.left_out()) == {n for n in matrix.VARIANTS if n in names or n in VARIANTS}
    assert all(matrix.needs_options(n) for n in matrix.left_out())
