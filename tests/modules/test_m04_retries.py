"""Module 04: producer retries through the flaky network write real source duplicates."""
from collections import Counter
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.config import CourseError
from deliverylab.modules.m04 import retries


def test_lost_replies_sit_in_the_middle_of_each_block():
    assert retries.lost_reply_positions(200, 50) == [25, 75, 125, 175]
    assert retries.lost_reply_positions(100, 100) == [50]
    assert retries.lost_reply_positions(10, None) == []
    for bad in (1, 0, -5, 2.5, True):
        with pytest.raises(CourseError):
            retries.lost_reply_positions(10, bad)


def test_copies_keep_or_restamp_the_event_time():
    order = {"order_id": "o-1", "event_time": "2026-01-01T00:00:00Z", "amount": "1.00"}
    assert retries.copy_of(order) == order and retries.copy_of(order) is not order
    assert retries.copy_of(order, "2026-01-01T00:05:00Z")["event_time"] == "2026-01-01T00:05:00Z"
    assert order["event_time"] == "2026-01-01T00:00:00Z"


def test_report_line_reads_well():
    one = retries.RetryReport(orders=[{}] * 100, retried=["o-50"], lost_replies=1)
    assert one.line() == ("100 orders sent by a producer without idempotence; 1 reply lost, "
                          "so 1 order sent a second time")


@pytest.fixture(scope="module")
def lesson(broker_up):
    import deliverylab

    return deliverylab.setup("test-m04-retries", quiet=True)


def fake_pipe(lesson, name):
    from deliverylab.stack import kafka

    topic = lesson.topic(name)
    kafka.delete_topics(lesson.bootstrap, [topic])
    return SimpleNamespace(lesson=lesson, topic=topic, seed=7, produced=[])


@pytest.mark.stack
def test_a_lost_reply_puts_one_order_at_two_offsets(lesson):
    pipe = fake_pipe(lesson, "retries")
    sent = retries.produce_with_retries(pipe, 60, lose_every=20)
    assert sent.retried == ["o-000010", "o-000030", "o-000050"] and sent.lost_replies == 3
    assert [o["order_id"] for o in pipe.produced] == [f"o-{n:06d}" for n in range(60)]  # the truth: once each
    found = Counter(order_id for order_id, _ in ledger.read_kafka_topic(lesson.bootstrap, pipe.topic))
    assert {i for i, n in found.items() if n == 2} == set(sent.retried) and sum(found.values()) == 63
    # the next call numbers on, as pipe.produce would
    assert retries.produce_with_retries(pipe, 5, lose_every=None).orders[0]["order_id"] == "o-000060"


@pytest.mark.stack
def test_idempotence_keeps_one_copy(lesson):
    assert retries.records_after_lost_reply(lesson, idempotent=False) == 2
    assert retries.records_after_lost_reply(lesson, idempotent=True) == 1


@pytest.mark.stack
def test_copies_must_be_of_known_orders(lesson):
    pipe = fake_pipe(lesson, "copies")
    retries.produce_with_retries(pipe, 3, lose_every=None)
    retries.send_copies(pipe, [retries.copy_of(pipe.produced[0], "2026-01-01T01:00:00Z")])
    assert len(pipe.produced) == 3
    assert len(ledger.read_kafka_topic(lesson.bootstrap, pipe.topic)) == 4
    with pytest.raises(CourseError, match="pipe.send"):
        retries.send_copies(pipe, [{"order_id": "o-999999", "amount": "1.00"}])
