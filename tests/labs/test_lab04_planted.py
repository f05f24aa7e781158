"""Lab 04 with planted answers run for real (make test-labs): a real pipeline (the lab's: its crash sends some
orders twice, as drawn from the seed) crashed after its write with real producer retries (exercises 1 and 2), and
real dedup trials in the notebook's Spark, on the trial topic and on a hidden one (exercises 3 and 4).

Right answers written differently pass; wrong ones of the four kinds end in FAIL with a hint: a value copied
from a printout (kind 1), a rule right only on the demo's data (kind 2), an answer a check without the hidden run
lacked the probe for (kind 3), and an answer whose verdict depended on a race (kind 4)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from planted import assert_all_pass, assert_fails_with_a_hint, outcome

from deliverylab.checks import Checks
from deliverylab.modules.m04 import lab, trial
from deliverylab.modules.m04.watermarks import parse_time

pytestmark = [pytest.mark.stack, pytest.mark.labs]


def fresh():
    return Checks("04-at-least-once-lab", record=False)


# --------------------------------------------------------------------------- exercises 1 and 2 on one real pipeline

def source(offsets):
    return {i for i, where in offsets.items() if len(where) > 1}


RIGHT_KINDS = {
    "the lab's sets": lambda offsets, copies: (source(offsets), {i for i, n in copies.items()
                                                                 if n > len(offsets.get(i, []))}),
    "counts per id, lists": lambda offsets, copies: (
        [i for i in offsets if len(offsets[i]) >= 2], [i for i in copies if copies[i] - len(offsets.get(i, ())) > 0]),
}


def test_exercises_1_and_2_right_and_planted(lesson):
    from deliverylab.modules import m04

    pipe = lab.Pipeline(lesson, "at_least_once", max_per_batch=100).start()
    pipe.produce(200)
    pipe.drain()
    retried = m04.produce_with_retries(pipe, 200, lose_every=50)
    pipe.drain()
    crash = pipe.crash("after_sink_write", orders=100)
    checks = fresh()  # planted: not restarted
    lab.check_crash(checks, lambda: pipe, lambda: crash, lambda: retried)
    assert assert_fails_with_a_hint(checks)[lab.CAUGHT_UP] == "FAIL"
    pipe.restart()
    pipe.drain()
    checks = fresh()  # right: the lab's steps; the crash's batch began with an order and its retried copy
    lab.check_crash(checks, lambda: pipe, lambda: crash, lambda: retried)
    assert_all_pass(checks)
    no_loss = m04.produce_with_retries(pipe, 20, lose_every=1000)  # planted: no reply lost
    checks = fresh()
    lab.check_crash(checks, lambda: pipe, lambda: crash, lambda: no_loss)
    assert assert_fails_with_a_hint(checks)["at least one reply was lost, so the producer sent an order twice"] == "FAIL"
    # right, written differently: the crash armed for a batch id, fewer orders, restarted without a drain (the
    # check drains before it judges, so the verdict does not depend on how soon it ran: that race is gone)
    pipe.drain()
    before = len(pipe.produced)
    named = pipe.crash("after_sink_write", batch=pipe.next_batch_id(), orders=60)
    named_orders = {o["order_id"] for o in pipe.produced[before:]}
    pipe.restart()
    checks = fresh()
    lab.check_crash(checks, lambda: pipe, lambda: named, lambda: retried)
    assert_all_pass(checks)
    late = pipe.crash("after_commit", orders=50)  # planted: a crash that leaves nothing to replay
    pipe.restart()
    pipe.drain()
    checks = fresh()
    lab.check_crash(checks, lambda: pipe, lambda: late, lambda: retried)
    assert assert_fails_with_a_hint(checks)[lab.POINT] == "FAIL"

    offsets = m04.topic_offsets(lesson.bootstrap, pipe.topic)
    copies = pipe.ledger().copies
    truth = m04.classify(offsets, copies)
    assert set(truth.at_source) & set(truth.replayed)  # the crashes replayed retried orders
    for name, kinds in RIGHT_KINDS.items():
        checks = fresh()
        lab.check_duplicate_kinds(checks, lambda: kinds, lambda: (offsets, copies))
        assert_all_pass(checks)
    shown = RIGHT_KINDS["the lab's sets"](offsets, copies)
    planted = {
        "kind 1: the sets typed in from the printout": lambda o, c: shown,
        "kind 2: a replay is a duplicate the producer did not make": lambda o, c: (
            source(o), {i for i, n in c.items() if n > 1} - source(o)),
        "kind 2: exactly two rows for one record, two rows for two records": lambda o, c: (
            {i for i in o if len(o[i]) == 2 and c[i] == 2}, {i for i in c if c[i] == 2 and len(o.get(i, ())) == 1}),
        # kind 4: right only when the crashed batch happened to hold every order the crash sent, and no other
        # batch was replayed: the producer races the batch planner; the hidden sink holds a split batch
        "kind 4: the orders a crash sent": lambda o, c: (source(o), named_orders),
        "the sink's duplicates for the producer's": lambda o, c: ({i for i, n in c.items() if n > 1}, shown[1]),
        "the two swapped": lambda o, c: (shown[1], shown[0]),
        "a value, not a function": shown,
    }
    for name, kinds in planted.items():
        checks = fresh()
        lab.check_duplicate_kinds(checks, lambda: kinds, lambda: (offsets, copies))
        assert_fails_with_a_hint(checks), name


# --------------------------------------------------------------------------- exercises 3 and 4 on real trials

DEDUPE_CHECKS = lab.DEDUPE_CHECKS


def judged(lesson, dedupe):
    checks = fresh()
    result = trial.run(dedupe, lesson)
    lab.check_dedupe(checks, lambda: result, lesson)
    return checks, result


def right_within(orders):
    return orders.withWatermark("event_time", "1 minute").dropDuplicatesWithinWatermark(["order_id"])


def right_with_time(orders):
    return orders.withWatermark("event_time", "60 seconds").dropDuplicates(["order_id", "event_time"])


def short_delay(orders):  # kind 2: the trial above is at most 4 s out of order; the hidden one is not
    return orders.withWatermark("event_time", "10 seconds").dropDuplicatesWithinWatermark(["order_id"])


WRONG_DEDUPES = {
    "no dedup": (lambda orders: orders, ("FAIL", "PASS", "FAIL", "FAIL")),
    "no watermark": (lambda orders: orders.dropDuplicates(["order_id"]), ("PASS", "PASS", "FAIL", "FAIL")),
    "watermark, key without event time": (
        lambda orders: orders.withWatermark("event_time", "1 minute").dropDuplicates(["order_id"]),
        ("PASS", "PASS", "PASS", "FAIL")),
    "kind 2: a 10-second delay": (short_delay, ("PASS", "FAIL", "PASS", "PASS")),
}


def test_exercises_3_and_4_right_and_planted(lesson):
    for dedupe in (right_within, right_with_time):
        checks, result = judged(lesson, dedupe)
        assert_all_pass(checks)
        assert result.records == trial.ORDERS + 10 and result.delay == timedelta(minutes=1)
    for name, (dedupe, expected) in WRONG_DEDUPES.items():
        checks, _ = judged(lesson, dedupe)
        assert tuple(outcome(checks)[d] for d in DEDUPE_CHECKS) == expected, name
        assert_fails_with_a_hint(checks)

    checks, result = judged(lesson, right_within)  # exercise 4 on the trial of the lab's answer
    rights = {
        "the lab's answer": lambda r: max(datetime.fromisoformat(t.replace("Z", "+00:00"))
                                          for t in r.event_times) - r.delay,
        "sorted text, back as ISO text": lambda r: (parse_time(sorted(r.event_times)[-1]) - r.delay).strftime(
            "%Y-%m-%dT%H:%M:%SZ"),
    }
    for name, fn in rights.items():
        marks = fresh()
        lab.check_dedupe(marks, lambda: result, lesson)
        lab.check_watermark(marks, lambda: fn, lambda: result)
        assert_all_pass(marks)
    shown = result.watermark
    times = [parse_time(t) for t in result.event_times]
    wrong = {
        "kind 1: the printout's watermark": lambda r: shown,
        "kind 2: the delay typed in": lambda r: max(parse_time(t) for t in r.event_times) - timedelta(minutes=1),
        "kind 2: the last record read": lambda r: parse_time(r.event_times[-1]) - r.delay,
        "kind 3: Spark's own report": lambda r: r.watermark,
        "the latest event time, no delay subtracted": lambda r: max(parse_time(t) for t in r.event_times),
        "the earliest event time minus the delay": lambda r: min(times) - r.delay,
        "the wall clock minus the delay": lambda r: datetime.now(timezone.utc) - r.delay,
        "a value, not a function": max(times) - timedelta(minutes=1),
    }
    for name, fn in wrong.items():
        marks = fresh()
        lab.check_dedupe(marks, lambda: result, lesson)
        lab.check_watermark(marks, lambda: fn, lambda: result)
        assert_fails_with_a_hint(marks), name


# --------------------------------------------------------------------------- Spark refuses the learner's query

@pytest.mark.parametrize("dedupe, error_class", [
    (lambda orders: orders.dropDuplicatesWithinWatermark(["order_id"]), "not supported .* without watermark"),
    (lambda orders: orders.withWatermark("event_time", "1 minute").dropDuplicates(["order"]),
     r"\[UNRESOLVED_COLUMN"),  # a column name misspelt
])
def test_a_query_spark_refuses_is_one_line(lesson, dedupe, error_class, capfd):
    from deliverylab.config import CourseError

    with pytest.raises(CourseError, match=f"^Spark refused your dedupe's query: .*{error_class}"):
        trial.run(dedupe, lesson)
    assert len(capfd.readouterr().err) < 2000
