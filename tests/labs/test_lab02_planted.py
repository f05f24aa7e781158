"""Lab 02 with planted wrong answers on a real pipeline (make test-labs): ranges read from its real
checkpoint, crashes at real crash points with a real restart, and a stopped query's lag measured on
the real topic. Each wrong answer ends in FAIL with a hint; the lab's own answer passes."""
from __future__ import annotations

from pathlib import Path

import pytest
from planted import assert_all_pass, assert_fails_with_a_hint

from deliverylab import checkpoint
from deliverylab.checks import Checks
from deliverylab.modules import m02
from deliverylab.modules.m02 import lab
from deliverylab.stack import kafka

pytestmark = [pytest.mark.stack, pytest.mark.labs]


@pytest.fixture(scope="module")
def pipe():
    import deliverylab
    from deliverylab import crashlab

    lesson = deliverylab.setup("test-lab02-planted", quiet=True)
    pipe = crashlab.Pipeline(lesson, "at_least_once", max_per_batch=100).start()
    pipe.produce(300)
    pipe.drain()
    yield pipe
    lesson.cleanup()


def fresh_checks():
    return Checks("02-anatomy-lab", record=False)


def ends_of(pipe, batch):
    line = checkpoint.read_offsets_file(Path(pipe.checkpoint, "offsets", str(batch)))["sources"][0]
    return checkpoint.topic_offsets(line, pipe.topic)


# ---------------------------------------------------------------- exercise 1: a batch's range from the files

def test_exercise_1_right_and_planted_ranges(pipe):
    right = {p: (ends_of(pipe, 1)[p], end) for p, end in ends_of(pipe, 2).items()}
    checks = fresh_checks()
    lab.check_batch_range(checks, lambda: right, pipe, batch=2)
    assert_all_pass(checks)
    planted = {
        "only the ends": ends_of(pipe, 2),
        "batch 1's range": {p: (ends_of(pipe, 0)[p], end) for p, end in ends_of(pipe, 1).items()},
        "from the topic's start": {p: (0, end) for p, end in ends_of(pipe, 2).items()},
    }
    for name, answer in planted.items():
        checks = fresh_checks()
        lab.check_batch_range(checks, lambda: answer, pipe, batch=2)
        assert_fails_with_a_hint(checks), name


# ---------------------------------------------------------------- exercise 2: a replay reads the same range

def replayed_range(pipe, crash, run):
    records = [r for r in pipe.progress(run=run) if r["batch"] == crash.batch]
    return m02.reported_range(records[0], pipe.topic) if records else None


def test_exercise_2_planted_crashes_and_ranges(pipe):
    for point in ("before_sink_write", "after_commit"):  # its batch not yet in the sink; nothing left to replay
        crash = pipe.crash(point, orders=100)
        pipe.restart()
        pipe.drain()
        checks = fresh_checks()
        lab.check_replay(checks, lambda: crash, lambda: replayed_range(pipe, crash, crash.run + 1), pipe)
        statuses = assert_fails_with_a_hint(checks)
        assert statuses["the crash left its batch in the sink but not committed"] == "FAIL", point

    crash = pipe.crash("after_sink_write", orders=100)
    checks = fresh_checks()  # not restarted yet: nothing ran the batch again
    lab.check_replay(checks, lambda: crash, lambda: pipe.batch_range(crash.batch), pipe)
    assert assert_fails_with_a_hint(checks)["the restarted driver ran the crashed batch again"] == "FAIL"
    pipe.restart()
    pipe.produce(100)  # so the restart runs a batch after the replay
    pipe.drain()
    checks = fresh_checks()
    lab.check_replay(checks, lambda: crash, lambda: replayed_range(pipe, crash, crash.run + 1), pipe)
    assert_all_pass(checks)
    next_batch = type(crash)(crash.point, crash.batch + 1, crash.returncode, crash.run)
    checks = fresh_checks()  # the range of the batch after the crashed one
    lab.check_replay(checks, lambda: crash, lambda: replayed_range(pipe, next_batch, crash.run + 1), pipe)
    assert assert_fails_with_a_hint(checks)["replayed is the range the restart read for that batch"] == "FAIL"


# ---------------------------------------------------------------- exercise 3: how far behind a stopped query is

def records_behind(pipe):
    done = checkpoint.done_offsets(pipe.checkpoint, pipe.topic)
    end = kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic)
    return sum(end[p] - done.get(p, 0) for p in end)


def test_exercise_3_right_and_planted_counts(pipe):
    pipe.stop()
    while_stopped = pipe.produce(150)
    checks = fresh_checks()
    lab.check_behind(checks, lambda: records_behind, pipe)
    assert_all_pass(checks)
    planted = {
        "the orders produced, counted": lambda p: len(while_stopped),
        "a consumer group's lag": lambda p: sum(m02.group_lag(p.lesson.bootstrap, p.topic).values()),
        "the whole topic": lambda p: sum(kafka.end_offsets(p.lesson.bootstrap, p.topic).values()),
        "the number typed in": lambda p: 150,
    }
    for name, wrong in planted.items():
        checks = fresh_checks()
        lab.check_behind(checks, lambda: wrong, pipe)
        assert_fails_with_a_hint(checks), name
