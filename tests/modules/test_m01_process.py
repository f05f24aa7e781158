"""Module 01's consumer loop when its group rebalances: a polled batch is put back and read again.

kafka-python refuses an offset commit while the consumer's group is rebalancing. The loop
(process.py) checks the group before a batch's first step and, if it is not stable, seeks
back and polls again; the run log's "put_back" events keep the harness's counts right.
"""
from __future__ import annotations

import os
import time

import pytest

import deliverylab
from deliverylab.modules.m01.harness import RunResult
from deliverylab.config import CourseError
from deliverylab.modules.m01 import process
from deliverylab.modules.m01.process import group_is_stable, put_back

ORDERS = 30
#: Each run's groups get names of their own: a consumer left "rebalancing" by the stuck tests leaves its group
#: only when its session times out, so a rerun a few seconds later that reused the name would wait for it.
RUN = f"run{os.getpid()}"


# --------------------------------------------------------------------------- the run log, no broker


def run_of(events, returncode=-9) -> RunResult:
    return RunResult(variant="write_then_commit", returncode=returncode, crash=None, crash_batch=None,
                     seconds=1.0, events=events, log_path="run.jsonl")


def batch(n, ids, first=0):
    return {"event": "batch", "batch": n, "records": len(ids), "offsets": {"0": [first, first + len(ids) - 1]},
            "order_ids": ids}


def test_a_batch_put_back_after_a_refused_commit_counts_once_under_its_number():
    run = run_of([batch(1, ["o-1", "o-2"]), {"event": "batch_done", "batch": 1},
                  batch(2, ["o-3", "o-4"], 2), {"event": "put_back", "batch": 2, "records": 2,
                                                "reason": "RebalanceInProgressError"},
                  {"event": "put_back", "records": 2, "reason": "the consumer group is rebalancing"},
                  batch(2, ["o-3", "o-4"], 2), {"event": "batch_done", "batch": 2},
                  batch(3, ["o-5"], 4)])
    assert run.records_done == 4
    assert run.batches_done == 2
    assert run.in_flight_ids == ["o-5"]
    assert [b["batch"] for b in run.batches] == [1, 2, 3]
    assert run.batches_put_back == 2


def test_a_batch_put_back_and_not_read_again_is_not_in_flight():
    run = run_of([batch(1, ["o-1"]), {"event": "batch_done", "batch": 1},
                  batch(2, ["o-2"], 1), {"event": "put_back", "batch": 2, "records": 1, "reason": "CommitFailedError"}])
    assert run.in_flight_ids == []
    assert run.records_done == 1 and [b["batch"] for b in run.batches] == [1]


# --------------------------------------------------------------------------- a real group


@pytest.fixture(scope="module")
def lesson():
    lesson = deliverylab.setup("test-m01-process", quiet=True)
    lesson.produce_orders(ORDERS, progress=False)
    yield lesson
    lesson.cleanup()


def consumer_for(lesson, group, knows_partitions_first: bool = False):
    """A test's consumer of the lesson's orders. ``knows_partitions_first``: it fetches the topic's
    partitions before it joins its group, as the course's consumer process does; one that joined first
    was once assigned nothing ("No partition metadata for topic") and, with kafka-python's 5-minute
    metadata refresh, polled nothing for 30 s. The tests of the group's state keep a plain subscribe."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=lesson.bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest", max_poll_records=10)
    if knows_partitions_first:
        assert consumer.partitions_for_topic(lesson.topic("orders")), "the lesson's orders topic has no partitions"
    consumer.subscribe([lesson.topic("orders")])
    return consumer


def poll_some(consumer, timeout_s=30) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        polled = consumer.poll(timeout_ms=200)
        if polled:
            return polled
    raise AssertionError("no records polled")


@pytest.mark.stack
def test_a_group_is_stable_only_once_joined(lesson):
    consumer = consumer_for(lesson, f"{lesson.topic_prefix}stable-{RUN}")
    try:
        assert not group_is_stable(consumer)  # subscribed, not joined yet
        poll_some(consumer)
        assert group_is_stable(consumer)
    finally:
        consumer.close(autocommit=False)


@pytest.mark.stack
def test_put_back_makes_the_next_poll_return_the_same_records(lesson):
    consumer = consumer_for(lesson, f"{lesson.topic_prefix}put-back-{RUN}", knows_partitions_first=True)
    try:
        first = poll_some(consumer)
        put_back(consumer, first)
        seen = {}  # partition -> first offset polled after put_back
        deadline = time.monotonic() + 30
        while not set(first) <= set(seen) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=200).items():
                seen.setdefault(tp, records[0].offset)
        assert {tp: seen.get(tp) for tp in first} == {tp: records[0].offset for tp, records in first.items()}
    finally:
        consumer.close(autocommit=False)


def _stuck_rebalancing(consumer) -> bool:
    """Put the consumer in the state a make test run's consumer was left in: kafka-python's
    coordinator says "rebalancing", and no rejoin is scheduled. False (nothing changed) when a
    rejoin is already scheduled, e.g. a heartbeat just heard that the broker is rebalancing the
    group: that consumer rejoins on its next poll, it is not stuck."""
    from kafka.coordinator.base import MemberState

    with consumer._coordinator._lock:
        if consumer._coordinator.need_rejoin():
            return False
        consumer._coordinator.state = MemberState.REBALANCING
    return True


@pytest.mark.stack
def test_polling_alone_never_settles_a_group_stuck_rebalancing_but_put_back_does(lesson):
    consumer = consumer_for(lesson, f"{lesson.topic_prefix}stuck-{RUN}")
    try:
        deadline = time.monotonic() + 30
        while not (poll_some(consumer) and group_is_stable(consumer) and _stuck_rebalancing(consumer)):
            assert time.monotonic() < deadline, "the group never settled with no rejoin scheduled"
            consumer.seek_to_beginning()  # records left for the polls below
        polled = {}
        for _ in range(5):  # kafka-python keeps handing out records and never rejoins by itself
            polled = consumer.poll(timeout_ms=200) or polled
            assert not group_is_stable(consumer)
        assert polled, "no records while stuck: the loop would not have spun"
        put_back(consumer, polled)
        deadline = time.monotonic() + 30
        while not group_is_stable(consumer) and time.monotonic() < deadline:
            consumer.poll(timeout_ms=200)
        assert group_is_stable(consumer)
    finally:
        consumer.close(autocommit=False)


def _consume_with_a_consumer_that_gets_stuck(lesson, monkeypatch, group: str, always: bool) -> list[dict]:
    """Run the real loop (commit_then_write) in this process; its consumer gets stuck once (or every time) it has joined."""
    import kafka

    class StuckOnce(kafka.KafkaConsumer):
        stuck = 0

        def poll(self, *args, **kwargs):
            polled = super().poll(*args, **kwargs)
            if polled and group_is_stable(self) and (always or not StuckOnce.stuck) and _stuck_rebalancing(self):
                StuckOnce.stuck += 1
            return polled

    monkeypatch.setattr(kafka, "KafkaConsumer", StuckOnce)
    events = []
    process.consume("commit_then_write", bootstrap=lesson.bootstrap, topic=lesson.topic("orders"), group=group,
                    db_path=lesson.folder / f"{group.rsplit('.', 1)[-1]}.sqlite", batch_size=10, until_drained=True,
                    log=events.append)
    return events


@pytest.mark.stack
def test_the_loop_gets_through_a_group_stuck_rebalancing(lesson, monkeypatch):
    events = _consume_with_a_consumer_that_gets_stuck(lesson, monkeypatch, f"{lesson.topic_prefix}loop-{RUN}", always=False)
    assert [e["event"] for e in events].count("put_back") >= 1
    # how many batches it takes is the broker's timing (a poll may hand out fewer than batch_size records);
    # what holds is that every order went through exactly once
    done, last = [], None
    for event in events:
        if event["event"] == "batch":
            last = event["order_ids"]
        elif event["event"] == "batch_done":
            done += last
    assert sorted(done) == sorted(set(done)) and len(done) == ORDERS
    assert events[-1]["reason"] == "drained" and events[-1]["records"] == ORDERS


@pytest.mark.stack
def test_the_loop_stops_with_a_clear_error_if_the_group_never_settles(lesson, monkeypatch):
    monkeypatch.setattr(process, "MAX_PUT_BACKS", 5)
    with pytest.raises(CourseError, match="kept rebalancing: 5 batches in a row"):
        _consume_with_a_consumer_that_gets_stuck(lesson, monkeypatch, f"{lesson.topic_prefix}never-{RUN}", always=True)
