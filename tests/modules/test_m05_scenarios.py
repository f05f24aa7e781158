"""Module 05's scenarios on the real stack: a planted wrong writer fails the lab's check for real."""
import pytest

from deliverylab.checks import Checks
from deliverylab.modules.m05 import lab, scenarios

pytestmark = pytest.mark.stack


def plain_append(orders, out):  # the obvious wrong answer to exercise 1: no txnAppId / txnVersion
    def write(batch, batch_id):
        batch.write.format("delta").mode("append").save(out.sink)

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def test_a_plain_append_fails_exercise_1_for_real():
    import deliverylab

    lesson = deliverylab.setup("test-m05-lab", quiet=True)
    try:
        pipe, crash = scenarios.crash_and_replay(lesson, plain_append, "after_sink_write", orders=100)
        assert not pipe.running  # stopped once it caught up: the checks read its sink and checkpoint
        checks = Checks("05-exactly-once-sinks-lab", record=False)
        lab.check_idempotent_writer(checks, lambda: pipe, lambda: crash)
        assert [r.status for r in checks.results] == ["PASS", "PASS", "FAIL"]
        assert [(point, read == planned > 0) for point, _, read, planned in scenarios.replays(pipe)] == [("after_sink_write", True)]
    finally:
        lesson.cleanup()

