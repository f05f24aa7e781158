"""Lab 02 with planted answers on a real pipeline (make test-labs): ranges read from its real checkpoint and from
a copy that a crash interrupted, crashes at real crash points with real restarts (the learner's, and the check's own
hidden one), and a stopped query's lag measured on the real topic and on a copy stopped by a crash. Right answers
written differently pass; each wrong one, of the four kinds (copied from a printout, right only on the demo's data,
a probe missing, a race), ends in FAIL with a hint."""
from __future__ import annotations

from pathlib import Path

import pytest
from planted import assert_all_pass, assert_fails_with_a_hint, outcome

from deliverylab import checkpoint
from deliverylab.checks import Checks
from deliverylab.modules import m02
from deliverylab.modules.m02 import lab
from deliverylab.stack import kafka

pytestmark = [pytest.mark.stack, pytest.mark.labs]


@pytest.fixture(scope="module")
def pipe(lesson):
    from deliverylab import crashlab

    pipe = crashlab.Pipeline(lesson, "at_least_once", max_per_batch=100).start()
    pipe.produce(300)
    pipe.drain()
    return pipe


def fresh_checks():
    return Checks("02-anatomy-lab", record=False)


def ends_of(pipe, batch):
    line = checkpoint.read_offsets_file(Path(pipe.checkpoint, "offsets", str(batch)))["sources"][0]
    return checkpoint.topic_offsets(line, pipe.topic)


def judged(check, *args, right: bool, name: str):
    checks = fresh_checks()
    check(checks, *args)
    if right:
        assert_all_pass(checks)
    else:
        assert_fails_with_a_hint(checks), name
    return checks


# ---------------------------------------------------------------- exercise 1: a batch's range from the files

def test_exercise_1_right_and_planted_readers(pipe):
    shown = {p: (ends_of(pipe, 1)[p], end) for p, end in ends_of(pipe, 2).items()}
    sizes = {p: e - s for p, (s, e) in shown.items()}
    rights = {
        "the offsets files, as the solution": lambda p, b: {q: (ends_of(p, b - 1)[q], e) for q, e in ends_of(p, b).items()},
        "source_line, text keys and lists": lambda p, b: {
            str(q): [checkpoint.topic_offsets(checkpoint.source_line(p.checkpoint, b - 1), p.topic)[q], e]
            for q, e in checkpoint.topic_offsets(checkpoint.source_line(p.checkpoint, b), p.topic).items()},
        "the pipeline's batch_range": lambda p, b: p.batch_range(b),
    }
    planted = {
        "batch 2's range typed in (kind 1)": lambda p, b: shown,
        "batch 2's files whatever batch is asked (kind 1)": lambda p, b: {
            q: (ends_of(p, 1)[q], e) for q, e in ends_of(p, 2).items()},
        "every batch as big as batch 2 (kind 2)": lambda p, b: {q: (e - sizes[q], e) for q, e in ends_of(p, b).items()},
        "Spark's progress record, which a crashed batch lacks (kind 3)": lambda p, b: m02.reported_range(
            [r for r in p.progress() if r["batch"] == b][-1], p.topic),
        "only the ends": lambda p, b: ends_of(p, b),
        "the batch before": lambda p, b: {q: (ends_of(p, b - 2)[q], e) for q, e in ends_of(p, b - 1).items()},
        "from the topic's start": lambda p, b: {q: (0, e) for q, e in ends_of(p, b).items()},
    }
    for name, reader in rights.items():
        judged(lab.check_batch_range, lambda: reader, pipe, 2, right=True, name=name)
    for name, reader in planted.items():
        judged(lab.check_batch_range, lambda: reader, pipe, 2, right=False, name=name)


# ---------------------------------------------------------------- exercise 2: a replay reads the same range

def from_progress(pipe, crash):
    return m02.reported_range([r for r in pipe.progress(run=crash.run + 1) if r["batch"] == crash.batch][0], pipe.topic)


def test_exercise_2_right_and_planted_ranges_then_planted_crashes(pipe):
    crash = pipe.crash("after_sink_write", orders=200)  # the learner's crash: the pipeline's first
    pipe.restart()
    pipe.drain()
    assert crash.run == 1
    shown = from_progress(pipe, crash)
    rights = {  # each one meets the check's own crash too: a second real crash, restart and drain
        "the restart's progress record, as the solution": from_progress,
        "the planned range in offsets/N": lambda p, c: p.batch_range(c.batch),
    }
    for name, replayed in rights.items():
        judged(lab.check_replay, lambda: crash, lambda: replayed, pipe, right=True, name=name)
    planted = {
        "the range typed in (kind 1)": lambda p, c: shown,
        "run 2 written in: right only for a first crash (kind 2)": lambda p, c: m02.reported_range(
            [r for r in p.progress(run=2) if r["batch"] == c.batch][0], p.topic),
        "the restart's last batch, right only before it ran the next one (kind 4)": lambda p, c: m02.reported_range(
            p.progress(run=c.run + 1)[-1], p.topic),
        "the batch after the crashed one": lambda p, c: m02.reported_range(
            [r for r in p.progress(run=c.run + 1) if r["batch"] == c.batch + 1][0], p.topic),
    }
    for name, replayed in planted.items():
        judged(lab.check_replay, lambda: crash, lambda: replayed, pipe, right=False, name=name)

    for point in ("before_sink_write", "after_commit"):  # its batch not yet in the sink; nothing left to replay
        other = pipe.crash(point, orders=100)
        pipe.restart()
        pipe.drain()
        checks = judged(lab.check_replay, lambda: other, lambda: from_progress, pipe, right=False, name=point)
        assert outcome(checks)["the crash left its batch in the sink but not committed"] == "FAIL"
    other = pipe.crash("after_sink_write", orders=200)
    checks = judged(lab.check_replay, lambda: other, lambda: from_progress, pipe, right=False, name="not restarted")
    assert outcome(checks)["the restarted driver ran the crashed batch again"] == "FAIL"
    pipe.restart()
    pipe.drain()


# ---------------------------------------------------------------- exercise 3: how far behind a stopped query is

def records_behind(pipe):
    done = checkpoint.done_offsets(pipe.checkpoint, pipe.topic)
    end = kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic)
    return sum(end[p] - done.get(p, 0) for p in end)


def from_last_progress(pipe):
    last = max(pipe.progress(), key=lambda r: r["batch"])
    done = {int(p): o for p, o in last["end_offset"][pipe.topic].items()}
    return sum(e - done.get(p, 0) for p, e in kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic).items())


def last_planned(pipe):
    offsets, _ = checkpoint.batch_ids(pipe.checkpoint)
    planned = checkpoint.topic_offsets(checkpoint.source_line(pipe.checkpoint, max(offsets)), pipe.topic)
    return sum(e - planned.get(p, 0) for p, e in kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic).items())


def test_exercise_3_right_and_planted_counts(pipe):
    pipe.stop()
    while_stopped = pipe.produce(150)
    rights = {
        "done_offsets, as the solution": records_behind,
        "m02.checkpoint_lag": lambda p: m02.checkpoint_lag(p.checkpoint, p.topic, p.lesson.bootstrap),
        "the last progress record": from_last_progress,
    }
    for name, count in rights.items():
        judged(lab.check_behind, lambda: count, pipe, right=True, name=name)
    assert last_planned(pipe) == records_behind(pipe)  # after a clean stop the two logs agree
    planted = {
        "the number typed in (kind 1)": lambda p: 150,
        "the last planned batch in offsets/, right only after a clean stop (kind 2)": last_planned,
        "the orders produced, counted": lambda p: len(while_stopped),
        "a consumer group's lag": lambda p: sum(m02.group_lag(p.lesson.bootstrap, p.topic).values()),
        "the whole topic": lambda p: sum(kafka.end_offsets(p.lesson.bootstrap, p.topic).values()),
    }
    for name, count in planted.items():
        judged(lab.check_behind, lambda: count, pipe, right=False, name=name)
