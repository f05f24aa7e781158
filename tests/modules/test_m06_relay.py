"""Module 06's consume-transform-produce relay: its pieces without a broker, then real runs.

The real runs kill the relay process with SIGKILL at each moment of its third transaction
(batches of 50 from a one-partition topic of 300 orders), restart it with the same
transactional id, and reconcile the output topic at both isolation levels.
"""
from __future__ import annotations

import json
from decimal import Decimal

import pytest

import deliverylab
from deliverylab import CourseError
from deliverylab.modules import m06
from deliverylab.modules.m06 import relay
from deliverylab.modules.m06.harness import RelayRun


# --------------------------------------------------------------------------- no broker


def test_enrich_keeps_the_order_and_adds_a_band():
    small = json.loads(m06.enrich(b'{"order_id": "o-1", "amount": "99.99", "status": "paid"}'))
    large = json.loads(m06.enrich(b'{"order_id": "o-2", "amount": "100.00"}'))
    assert small == {"order_id": "o-1", "amount": "99.99", "status": "paid", "band": "small"}
    assert large["band"] == "large" and large["amount"] == "100.00"
    assert Decimal(json.loads(m06.enrich(b'{"order_id": "o-3", "amount": 250.5}'))["amount"]) == Decimal("250.5")


def test_crash_moments_are_in_transaction_order_and_checked():
    assert list(m06.CRASH_MOMENTS) == ["after_send", "before_commit", "after_commit"]
    assert relay.check_moment("after_send") == "after_send"
    with pytest.raises(CourseError, match="Moments: after_send, before_commit, after_commit"):
        relay.check_moment("mid_write")


class Record:
    def __init__(self, order_id):
        self.value = json.dumps({"order_id": order_id, "amount": "1.00"}).encode()


def test_crash_point_logs_and_fires_only_where_armed(monkeypatch):
    events, flushed, kills = [], [], []
    monkeypatch.setattr(relay.os, "kill", lambda pid, sig: kills.append(sig))
    point = relay.CrashPoint("before_commit", 2, events.append, lambda: flushed.append(True))
    point.starting(1, [Record("o-1")])
    point.maybe("before_commit")            # transaction 1: not armed
    point.committed()
    point.starting(2, [Record("o-2"), Record("o-3")])
    point.maybe("after_send")               # transaction 2, another moment
    assert kills == [] and flushed == []
    point.maybe("before_commit")
    assert len(kills) == 1 and flushed == [True]  # the records reach the broker before the kill
    assert [e["event"] for e in events] == ["transaction", "committed", "transaction", "crash"]
    assert events[2]["order_ids"] == ["o-2", "o-3"]


def run_from(events, returncode):
    return RelayRun(returncode, events, "relay-001.jsonl")


def test_a_killed_run_reads_back_its_open_transaction():
    run = run_from([
        {"event": "start"},
        {"event": "transaction", "transaction": 1, "records": 2, "order_ids": ["o-1", "o-2"]},
        {"event": "committed", "transaction": 1},
        {"event": "transaction", "transaction": 2, "records": 2, "order_ids": ["o-3", "o-4"]},
        {"event": "crash", "moment": "after_send", "transaction": 2},
    ], -9)
    assert run.killed_by_sigkill and run.committed == 1 and run.crashed_at == ("after_send", 2)
    assert run.open_ids == ["o-3", "o-4"]
    assert run.line() == ("relay killed by SIGKILL at after_send of transaction 2; 1 transaction committed; "
                          "2 records in the open transaction")


def test_a_drained_run_has_no_open_transaction():
    run = run_from([{"event": "transaction", "transaction": 1, "records": 1, "order_ids": ["o-1"]},
                    {"event": "committed", "transaction": 1},
                    {"event": "end", "reason": "drained", "transactions": 1}], 0)
    assert run.open_ids == [] and run.ended == "drained"
    assert run.line() == "relay drained: 1 transaction committed"


def test_bad_arguments_are_refused_before_anything_starts():
    class Lesson:  # start_relay refuses these before it touches the lesson
        pass

    with pytest.raises(CourseError, match="counts transactions from 1"):
        m06.start_relay(Lesson(), crash_transaction=0)
    with pytest.raises(CourseError, match="batch_size"):
        m06.start_relay(Lesson(), batch_size=0)
    with pytest.raises(CourseError, match="Unknown crash moment"):
        m06.start_relay(Lesson(), crash="now")


def test_source_shows_the_loop_and_names_what_it_can_show():
    assert "send_offsets_to_transaction" in m06.source("relay_batches")
    with pytest.raises(CourseError, match="relay_batches"):
        m06.source("main")


# --------------------------------------------------------------------------- real broker, real processes


@pytest.fixture(scope="module")
def lesson(broker_up):
    lesson = deliverylab.setup("test-m06-relay", quiet=True)
    yield lesson
    lesson.cleanup()


@pytest.mark.stack
@pytest.mark.parametrize("moment", ["after_send", "before_commit"])
def test_killed_mid_transaction_then_restarted_is_exactly_once_for_read_committed(lesson, moment):
    crashed = m06.crash_relay(lesson, orders=300, crash_transaction=3, crash=moment)
    assert crashed.killed_by_sigkill and crashed.crashed_at == (moment, 3) and crashed.committed == 2
    open_ids = set(crashed.open_ids)
    assert len(open_ids) == 50

    # the dead process's transaction is open: read_committed stops before it, read_uncommitted does not
    assert len(m06.output(lesson, "read_committed")) == 100
    assert len(m06.output(lesson, "read_uncommitted")) == 150

    restarted = m06.run_relay(lesson)
    assert restarted.returncode == 0 and restarted.ended == "drained" and restarted.committed == 4
    report = m06.reconcile(lesson, crashed, restarted)
    assert report.committed.verdict == "exactly-once" and report.committed.produced == 300
    # the aborted attempt is still in the log: a read_uncommitted reader counts exactly its orders twice
    assert report.uncommitted.lost == 0 and set(report.uncommitted.duplicated_ids) == open_ids


@pytest.mark.stack
def test_killed_after_commit_leaves_nothing_to_redo(lesson):
    report = m06.crash_and_restart(lesson, orders=300, crash_transaction=2, crash="after_commit")
    assert report.crash_run.committed == 2 and report.crash_run.open_ids == []
    assert report.restart_run.committed == 4
    assert report.committed.verdict == report.uncommitted.verdict == "exactly-once"


@pytest.mark.stack
def test_crash_not_reached_is_an_error(lesson):
    with pytest.raises(CourseError, match="without reaching transaction 99"):
        m06.crash_relay(lesson, orders=300, crash_transaction=99)
