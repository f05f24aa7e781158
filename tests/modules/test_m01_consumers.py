"""Module 01's consumers against the real broker, each in a real process killed by SIGKILL.

300 orders, batches of 50, a crash between the two steps of batch 2, then a restart that
drains the topic. Losses and duplicates are counted id by id against what was produced.
"""
from __future__ import annotations

import signal
import time
from collections import Counter

import pytest

import deliverylab
from deliverylab.modules import m01 as consumers
from deliverylab.config import CourseError

pytestmark = pytest.mark.stack

ORDERS = 300
BATCH = 50


@pytest.fixture(scope="module")
def lesson():
    lesson = deliverylab.setup("test-consumers", quiet=True)
    lesson.produced = lesson.produce_orders(ORDERS, progress=False)
    yield lesson
    lesson.cleanup()


def outcome(lesson, variant):
    """(lost ids, {duplicated id: copies}, ids never produced) for the variant's SQLite sink."""
    produced = {order["order_id"] for order in lesson.produced}
    copies = Counter(order_id for order_id, _ in consumers.delivered(lesson, variant))
    lost = produced - set(copies)
    duplicated = {order_id: n for order_id, n in copies.items() if n > 1}
    return lost, duplicated, set(copies) - produced


@pytest.mark.parametrize("variant", list(consumers.VARIANTS))
def test_crash_between_steps_then_restart(lesson, variant):
    crashed = consumers.run_consumer(variant, lesson, crash_batch=2, batch_size=BATCH)
    assert crashed.returncode == -signal.SIGKILL == -9, crashed.stderr
    assert crashed.killed_by_sigkill
    assert crashed.crashed_at == ("between_steps", 2)
    assert crashed.batches_done == 1
    in_flight = set(crashed.in_flight_ids)
    assert 0 < len(in_flight) <= BATCH

    restarted = consumers.run_consumer(variant, lesson, batch_size=BATCH)
    assert restarted.returncode == 0 and restarted.ended == "drained", restarted.stderr
    assert not restarted.in_flight_ids

    lost, duplicated, unexpected = outcome(lesson, variant)
    assert not unexpected
    if variant == "commit_then_write":      # at-most-once: exactly the crashed batch is lost
        assert lost == in_flight and not duplicated
    elif variant == "write_then_commit":    # at-least-once: exactly the crashed batch is written twice
        assert not lost and duplicated == dict.fromkeys(in_flight, 2)
    else:                                   # exactly-once
        assert not lost and not duplicated
    assert len(consumers.delivered(lesson, variant)) == ORDERS - len(lost) + sum(n - 1 for n in duplicated.values())

    # every variant now resumes at the end of the topic: from Kafka's group, or from its database
    assert sum(consumers.resume_offsets(lesson, variant).values()) == ORDERS


def test_offsets_with_data_keeps_kafka_out_of_it(lesson):
    consumers.reset_variant(lesson, "offsets_with_data")
    consumers.run_consumer("offsets_with_data", lesson, crash_batch=1, batch_size=BATCH)
    # the crash rolled the one transaction back: no rows, no offsets
    assert consumers.delivered(lesson, "offsets_with_data") == []
    assert consumers.resume_offsets(lesson, "offsets_with_data") == {}
    consumers.run_consumer("offsets_with_data", lesson, batch_size=BATCH)
    lost, duplicated, _ = outcome(lesson, "offsets_with_data")
    assert not lost and not duplicated


def test_crash_and_recover_reports_the_guarantee(lesson):
    for variant, crash, verdict in [("write_then_commit", "between_steps", "at-least-once"),
                                    ("commit_then_write", "after_batch", "exactly-once")]:
        report = consumers.crash_and_recover(variant, lesson, orders_total=ORDERS, crash_batch=2,
                                             crash=crash, batch_size=BATCH)
        assert report.crash_run.killed_by_sigkill
        assert report.expected == verdict == report.verdict, report.summary()
        assert report.ledger.produced == ORDERS
        assert verdict in report.summary()


def test_max_records_and_stop(lesson):
    consumers.reset_variant(lesson, "upsert_by_id")
    first = consumers.run_consumer("upsert_by_id", lesson, batch_size=BATCH, max_records=120, until_drained=False)
    assert first.returncode == 0 and first.ended == "max_records" and first.records_done == 120
    assert sum(consumers.resume_offsets(lesson, "upsert_by_id").values()) == 120

    proc = consumers.start_consumer("upsert_by_id", lesson, batch_size=BATCH, until_drained=False)
    deadline = time.monotonic() + 20
    while sum(consumers.resume_offsets(lesson, "upsert_by_id").values()) < ORDERS and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.running  # caught up, still waiting for more orders until told to stop
    stopped = proc.stop()
    assert stopped.returncode == 0 and stopped.ended == "stopped"
    assert len(consumers.delivered(lesson, "upsert_by_id")) == ORDERS


def test_crash_not_reached_is_an_error(lesson):
    with pytest.raises(CourseError, match="without reaching batch 99"):
        consumers.crash_and_recover("write_then_commit", lesson, orders_total=ORDERS, crash_batch=99, batch_size=BATCH)


def test_unknown_names_list_the_valid_ones(lesson):
    with pytest.raises(CourseError, match="commit_then_write, write_then_commit, offsets_with_data"):
        consumers.run_consumer("exactly_once_please", lesson)
    with pytest.raises(CourseError, match="after_poll, between_steps, after_batch"):
        consumers.run_consumer("write_then_commit", lesson, crash="halfway", crash_batch=1)


def test_variant_code_shows_one_crash_hook():
    for variant in consumers.VARIANTS:
        code = consumers.source(variant)
        assert code.count('crash_point.maybe_crash("between_steps")') == 1
        assert len(code.splitlines()) <= 10
    assert "seek" in consumers.source("offsets_with_data", start=True)
