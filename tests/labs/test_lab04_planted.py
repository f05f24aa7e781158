"""Lab 04 with planted wrong answers run for real (make test-labs): a real pipeline crashed after its write
with real producer retries (exercises 1 and 2), and real dedup trials (exercises 3 and 4). The right answers
pass; no dedup, no watermark, a key without event time, a query Spark refuses, a crash elsewhere, a sink's
view of duplicates and watermarks computed from the wrong time each end in FAIL with a hint or one line."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from planted import assert_all_pass, assert_fails_with_a_hint

from deliverylab.checks import Checks
from deliverylab.modules.m04 import lab, trial

pytestmark = [pytest.mark.stack, pytest.mark.labs]

DEDUPE_CHECKS = ("no order reached the sink twice", "no order was lost", "the query has a watermark",
                 "the dedup state lets go of old orders")


def statuses(checks):
    return {r.description: r.status for r in checks.results}


def dedupe_statuses(checks, result):
    lab.check_dedupe(checks, lambda: result)
    got = statuses(checks)
    return tuple(got[d] for d in DEDUPE_CHECKS)


def watermark_status(checks, answer, result):
    lab.check_watermark(checks, lambda: answer, lambda: result)
    return statuses(checks)["your watermark is the one Spark used in the last batch"]


# --------------------------------------------------------------------------- real planted answers


WRONG_DEDUPES = {
    "no dedup": (lambda orders: orders, ("FAIL", "PASS", "FAIL", "FAIL")),
    "no watermark": (lambda orders: orders.dropDuplicates(["order_id"]), ("PASS", "PASS", "FAIL", "FAIL")),
    "watermark, key without event time": (
        lambda orders: orders.withWatermark("event_time", "1 minute").dropDuplicates(["order_id"]),
        ("PASS", "PASS", "PASS", "FAIL")),
}


def test_real_trials_of_the_right_and_wrong_dedupes(broker_up):
    import deliverylab

    lesson = deliverylab.setup("test-m04-lab", quiet=True)
    right = trial.run(lambda o: o.withWatermark("event_time", "1 minute").dropDuplicates(["order_id", "event_time"]),
                      lesson)
    assert right.records == trial.ORDERS + 10  # the producer's retries are in the topic
    checks = Checks("04-at-least-once-lab", record=False)
    assert dedupe_statuses(checks, right) == ("PASS",) * 4
    assert watermark_status(checks, max(datetime.fromisoformat(t.replace("Z", "+00:00"))
                                        for t in right.event_times) - timedelta(minutes=1), right) == "PASS"
    for name, (dedupe, expected) in WRONG_DEDUPES.items():
        checks = Checks("04-at-least-once-lab", record=False)
        assert dedupe_statuses(checks, trial.run(dedupe, lesson)) == expected, name
    lesson.cleanup()


# --------------------------------------------------------------------------- Spark refuses the learner's query

@pytest.mark.parametrize("dedupe, error_class", [
    (lambda orders: orders.dropDuplicatesWithinWatermark(["order_id"]), "not supported .* without watermark"),
    (lambda orders: orders.withWatermark("event_time", "1 minute").dropDuplicates(["order"]),
     r"\[UNRESOLVED_COLUMN"),  # a column name misspelt
])
def test_a_query_spark_refuses_is_one_line(broker_up, dedupe, error_class, capfd):
    import deliverylab
    from deliverylab.config import CourseError

    lesson = deliverylab.setup("test-m04-lab", quiet=True)
    with pytest.raises(CourseError, match=f"^Spark refused your dedupe's query: .*{error_class}"):
        trial.run(dedupe, lesson)
    assert len(capfd.readouterr().err) < 2000


# --------------------------------------------------------------------------- exercises 1 and 2 on one real pipeline

def test_exercises_1_and_2_right_and_planted(broker_up):
    import deliverylab
    from deliverylab import crashlab
    from deliverylab.modules import m04

    lesson = deliverylab.setup("test-lab04-planted", quiet=True)
    try:
        pipe = crashlab.Pipeline(lesson, "at_least_once", max_per_batch=100).start()
        pipe.produce(200)
        pipe.drain()
        retried = m04.produce_with_retries(pipe, 200, lose_every=50)
        pipe.drain()
        crash = pipe.crash("after_sink_write", orders=100)
        checks = Checks("04-at-least-once-lab", record=False)  # planted: not restarted and drained
        lab.check_crash(checks, lambda: pipe, lambda: crash, lambda: retried)
        assert assert_fails_with_a_hint(checks)["the restarted pipeline has caught up with its topic"] == "FAIL"
        pipe.restart()
        pipe.drain()
        checks = Checks("04-at-least-once-lab", record=False)
        lab.check_crash(checks, lambda: pipe, lambda: crash, lambda: retried)
        assert_all_pass(checks)
        no_loss = m04.produce_with_retries(pipe, 20, lose_every=1000)  # planted: no reply lost
        checks = Checks("04-at-least-once-lab", record=False)
        lab.check_crash(checks, lambda: pipe, lambda: crash, lambda: no_loss)
        assert_fails_with_a_hint(checks)
        pipe.drain()
        late = pipe.crash("after_commit", orders=50)  # planted: a crash that leaves nothing to replay
        pipe.restart()
        pipe.drain()
        checks = Checks("04-at-least-once-lab", record=False)
        lab.check_crash(checks, lambda: pipe, lambda: late, lambda: retried)
        assert assert_fails_with_a_hint(checks)["the driver died after the sink write"] == "FAIL"

        offsets = m04.topic_offsets(lesson.bootstrap, pipe.topic)
        copies = pipe.ledger().copies
        truth = m04.classify(offsets, copies)
        source_ids = {i for i, where in offsets.items() if len(where) > 1}
        replay_ids = {i for i, n in copies.items() if n > len(offsets.get(i, []))}
        assert source_ids and replay_ids
        right = Checks("04-at-least-once-lab", record=False)
        lab.check_duplicate_kinds(right, lambda: source_ids, lambda: replay_ids, lambda: truth)
        assert_all_pass(right)
        in_the_sink_twice = {i for i, n in copies.items() if n > 1}
        for wrong_source, wrong_replay in ((in_the_sink_twice, replay_ids),   # the sink cannot tell a retry
                                           (source_ids, in_the_sink_twice),   # a retried order is not a replay
                                           (replay_ids, source_ids)):         # the two swapped
            checks = Checks("04-at-least-once-lab", record=False)
            lab.check_duplicate_kinds(checks, lambda: wrong_source, lambda: wrong_replay, lambda: truth)
            assert_fails_with_a_hint(checks)
    finally:
        lesson.cleanup()


# --------------------------------------------------------------------------- exercise 4 on a real trial

def test_exercise_4_planted_watermarks(broker_up):
    import deliverylab

    lesson = deliverylab.setup("test-m04-lab", quiet=True)
    result = trial.run(lambda o: o.withWatermark("event_time", "1 minute").dropDuplicates(["order_id", "event_time"]),
                       lesson)
    times = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in result.event_times]
    wrong = {
        "the latest event time, no delay subtracted": max(times),
        "the earliest event time minus the delay": min(times) - timedelta(minutes=1),
        "the wall clock minus the delay": datetime.now().astimezone() - timedelta(minutes=1),
        "a delay of 10 seconds": max(times) - timedelta(seconds=10),
    }
    for name, answer in wrong.items():
        checks = Checks("04-at-least-once-lab", record=False)
        lab.check_dedupe(checks, lambda: result)
        lab.check_watermark(checks, lambda: answer, lambda: result)
        assert statuses(checks)["your watermark is the one Spark used in the last batch"] == "FAIL", name
        assert_fails_with_a_hint(checks)
