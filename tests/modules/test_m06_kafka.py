"""Module 06's claims about producers and Spark's Kafka sink, on the real broker and real Spark.

A produce reply lost on the flaky network: a retry without idempotence duplicates, an
idempotent producer's own retry does not, and a re-send by a new producer does. Spark's
Kafka sink with ``kafka.enable.idempotence=true`` is configured as lesson 06 shows it; that
it still writes the whole crashed batch twice after a crash at ``after_sink_write`` is lesson
06's checked cell (nbval), so it is not run a second time here.
"""
from __future__ import annotations

import inspect

import pytest

import deliverylab
from deliverylab import CourseError
from deliverylab.crashlab import variants
from deliverylab.modules import m06

pytestmark = pytest.mark.stack

IDEMPOTENCE_OFF = dict(enable_idempotence=False, acks="all", retries=5, max_in_flight_requests_per_connection=1)
IDEMPOTENT = dict(enable_idempotence=True, acks="all")
GIVES_UP = dict(enable_idempotence=True, acks="all", request_timeout_ms=1500, delivery_timeout_ms=2500,
                retry_backoff_ms=4000)


@pytest.fixture(scope="module")
def lesson(broker_up):
    lesson = deliverylab.setup("test-m06-kafka", quiet=True)
    yield lesson
    lesson.cleanup()


@pytest.mark.parametrize("name, settings, resend, outcome, copies", [
    ("off", IDEMPOTENCE_OFF, False, "acknowledged", 2),
    ("idempotent", IDEMPOTENT, False, "acknowledged", 1),
    ("gives_up", GIVES_UP, False, "failed: KafkaTimeoutError", 1),   # written once, but the app was told it failed
    ("resent", GIVES_UP, True, "failed: KafkaTimeoutError", 2),
])
def test_a_lost_reply(lesson, name, settings, resend, outcome, copies):
    result = m06.send_with_lost_reply(lesson, name, settings, resend_if_failed=resend)
    assert result.lost_replies == 1
    assert result.outcome == outcome and result.resent == resend
    assert result.copies == copies
    assert result.ledger.lost == 0 and result.ledger.produced == 2
    assert result.line().startswith(name)


def test_settings_must_be_a_dict(lesson):
    with pytest.raises(CourseError, match="as a dict"):
        m06.send_with_lost_reply(lesson, "bad", ["acks", "all"])


def test_the_idempotent_sink_variant_asks_for_idempotence():
    spec = variants.VARIANTS["kafka_sink_idempotent"]
    code = inspect.getsource(spec.start)
    assert '"kafka.enable.idempotence", "true"' in code and '"kafka.acks", "all"' in code
    assert spec.sink_kind == "kafka" and spec.guarantee == "at-least-once"
