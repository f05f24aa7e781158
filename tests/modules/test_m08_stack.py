"""Module 08 on the real stack: one variant through the matrix's plan, and a learner's pipeline audited."""
import pytest

from deliverylab.modules.m08 import audit, matrix, price

pytestmark = pytest.mark.stack


def orders_to_delta(orders, out):  # the capstone's pipeline: Delta's streaming sink
    return orders.writeStream.format("delta").option("checkpointLocation", out.checkpoint).start(out.sink)


@pytest.fixture(scope="module")
def lesson():
    import deliverylab

    lesson = deliverylab.setup("test-m08", quiet=True)
    yield lesson
    lesson.cleanup()


def test_the_broken_variant_shows_up_broken_and_is_timed(lesson):
    [row] = matrix.run(lesson, ["control_table_after"], orders=40, workers=1)
    assert row.plan == [*matrix.PLAN, "between_data_and_marker"]
    assert (row.observed, row.lost, row.as_expected) == ("at-least-once", 0, True) and row.duplicated > 0
    [p] = price.from_matrix([row])
    assert p.batches >= 1 and p.orders_per_s > 0


def test_a_learners_delta_pipeline_survives_chaos_and_its_history_has_each_batch_once(lesson):
    from deliverylab import get_spark
    from deliverylab.crashlab import chaos

    result = chaos.run_chaos(lesson, orders_to_delta, plan=["after_sink_write", "now"], orders=40,
                             max_per_batch=10, name="m08-audit", keep_pipe=True)
    assert result["verdict"] == "exactly-once"
    pipe = result["pipe"]
    versions = audit.history(get_spark(), pipe.sink)
    lines = audit.audit_lines(versions, audit.batches_with_data(pipe))
    assert lines[:4] == ["every version is a STREAMING UPDATE: True", "writers (query ids) in the history: 1",
                         "a batch id twice: False",
                         "batches with data committed by the checkpoint are all in the history: True"]
