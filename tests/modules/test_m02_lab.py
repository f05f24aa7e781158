"""Lab 02's checks accept the right answers and reject planted wrong ones (no broker needed).

The pipeline is a stand-in built on a real checkpoint folder laid out as Spark 4.0 writes it
(tests/fakes.py), with progress records shaped like the crash lab's.
"""
from __future__ import annotations

import pytest

from deliverylab import checkpoint
from deliverylab.checks import Checks
from deliverylab.crashlab.pipeline import Crash
from deliverylab.modules.m02 import lab

from fakes import ENDS, TOPIC, make_checkpoint, write_commit


def record(run, batch, start, end):
    as_json = lambda offsets: {TOPIC: {str(p): o for p, o in offsets.items()}} if offsets else None  # noqa: E731
    return {"event": "progress", "run": run, "batch": batch, "rows": 1,
            "start_offset": as_json(start), "end_offset": as_json(end)}


class FakePipe:
    """What the checks read of a crash-lab pipeline: checkpoint, topic, progress, batch ranges, running."""

    def __init__(self, ckpt, records, running=False):
        self.checkpoint, self.topic, self.records, self.running = str(ckpt), TOPIC, records, running
        self.lesson = type("Lesson", (), {"bootstrap": "127.0.0.1:1"})()

    def progress(self, run=None):
        return [r for r in self.records if run is None or r["run"] == run]

    def batch_range(self, batch, run=None):
        return checkpoint.batch_range(self.checkpoint, batch, self.topic)


#: Run 1 finished batches 0 and 1 and crashed in batch 2 (offsets/2 written, no commit);
#: run 2 ran batch 2 again with the same range and committed it.
RUN_1 = [record(1, 0, None, ENDS[0]), record(1, 1, ENDS[0], ENDS[1])]
RUN_2 = [record(2, 2, ENDS[1], ENDS[2])]
RIGHT_BATCH_2 = {0: (500, 750), 1: (500, 700)}


@pytest.fixture
def checks():
    return Checks("02-anatomy-lab", record=False)


@pytest.fixture
def pipe(tmp_path):
    ckpt = make_checkpoint(tmp_path, ENDS, committed=2)
    write_commit(ckpt, 2)
    return FakePipe(ckpt, RUN_1 + [record(1, 2, ENDS[1], ENDS[2])])


def statuses(checks):
    return {r.description: r.status for r in checks.results}


# --------------------------------------------------------------------------- exercise 1


def test_exercise_1_right_answer_and_string_partitions(checks, pipe):
    lab.check_batch_range(checks, lambda: RIGHT_BATCH_2, pipe, batch=2)
    assert set(statuses(checks).values()) == {"PASS"}
    lab.check_batch_range(checks, lambda: {"0": [500, 750], "1": [500, 700]}, pipe, batch=2)
    assert set(statuses(checks).values()) == {"PASS"}


def test_exercise_1_rejects_the_previous_batchs_file(checks, pipe):
    # planted: the range written in offsets/1 (batch 1's range) instead of batch 2's
    lab.check_batch_range(checks, lambda: {0: (250, 500), 1: (250, 500)}, pipe, batch=2)
    got = statuses(checks)
    assert got["batch 2 starts where batch 1 ended"] == "FAIL"
    assert got["batch 2 ends where offsets/2 says"] == "FAIL"


def test_exercise_1_rejects_a_start_read_from_the_batchs_own_file(checks, pipe):
    # planted: start and end both from offsets/2, or a start at 0
    for wrong in ({0: (750, 750), 1: (700, 700)}, {0: (0, 750), 1: (0, 700)}):
        lab.check_batch_range(checks, lambda: wrong, pipe, batch=2)
        got = statuses(checks)
        assert got["batch 2 starts where batch 1 ended"] == "FAIL"
        assert got["batch 2 ends where offsets/2 says"] == "PASS"


def test_exercise_1_rejects_a_wrong_shape_and_a_missing_partition(checks, pipe):
    lab.check_batch_range(checks, lambda: [(500, 750), (500, 700)], pipe, batch=2)
    got = statuses(checks)
    assert got["batch2 maps each partition to a (start, end) pair"] == "FAIL"
    assert got["batch 2 starts where batch 1 ended"] == "SKIP"
    lab.check_batch_range(checks, lambda: {0: (500, 750)}, pipe, batch=2)
    assert statuses(checks)["batch2 covers every partition of the topic"] == "FAIL"


def test_exercise_1_skips_until_batch2_exists(checks, pipe):
    lab.check_batch_range(checks, lambda: undefined_name, pipe, batch=2)  # noqa: F821
    assert set(statuses(checks).values()) == {"SKIP"}


# --------------------------------------------------------------------------- exercise 2


def test_exercise_2_right_answer(checks, pipe):
    pipe.records = RUN_1 + RUN_2
    crash = Crash("after_sink_write", 2, -9, run=1)
    lab.check_replay(checks, lambda: crash, lambda: RIGHT_BATCH_2, pipe)
    assert set(statuses(checks).values()) == {"PASS"}


def test_exercise_2_rejects_a_crash_after_the_commit(checks, pipe):
    # planted: after_commit leaves nothing to replay; the restart goes on with the next batch
    pipe.records = RUN_1 + [record(1, 2, ENDS[1], ENDS[2]), record(2, 3, ENDS[2], {0: 800, 1: 800})]
    crash = Crash("after_commit", 2, -9, run=1)
    lab.check_replay(checks, lambda: crash, lambda: {0: (750, 800), 1: (700, 800)}, pipe)
    got = statuses(checks)
    assert got["the crash left its batch planned but not committed"] == "FAIL"
    assert got["replayed is the range the restart read for that batch"] == "SKIP"


def test_exercise_2_rejects_the_range_of_another_batch(checks, pipe):
    pipe.records = RUN_1 + RUN_2
    crash = Crash("after_sink_write", 2, -9, run=1)
    for wrong in ({0: (250, 500), 1: (250, 500)}, {0: (750, 800), 1: (700, 800)}):  # batch 1's, the next one's
        lab.check_replay(checks, lambda: crash, lambda: wrong, pipe)
        got = statuses(checks)
        assert got["replayed is the range the restart read for that batch"] == "FAIL"
        assert got["it is exactly the range planned before the crash"] == "SKIP"


def test_exercise_2_fails_when_the_pipeline_was_not_restarted(checks, pipe):
    crash = Crash("after_sink_write", 2, -9, run=1)
    lab.check_replay(checks, lambda: crash, lambda: RIGHT_BATCH_2, pipe)
    assert statuses(checks)["the restarted driver ran the crashed batch again"] == "FAIL"


def test_exercise_2_rejects_something_else_for_the_crash(checks, pipe):
    lab.check_replay(checks, lambda: "after_sink_write", lambda: RIGHT_BATCH_2, pipe)
    got = statuses(checks)
    assert got["crash is what pipe.crash(...) returned"] == "FAIL"
    assert got["the crash left its batch planned but not committed"] == "SKIP"


# --------------------------------------------------------------------------- exercise 3


@pytest.fixture
def topic_end(monkeypatch):
    from deliverylab.stack import kafka

    monkeypatch.setattr(kafka, "end_offsets", lambda bootstrap, topic: {0: 900, 1: 800})


def test_exercise_3_right_answer(checks, tmp_path, topic_end):
    pipe = FakePipe(make_checkpoint(tmp_path, ENDS, committed=3), [])
    lab.check_behind(checks, lambda: 250, pipe, lambda: [{}] * 250)  # done {0: 750, 1: 700}, end {0: 900, 1: 800}
    assert set(statuses(checks).values()) == {"PASS"}


def test_exercise_3_rejects_a_consumer_groups_view_and_the_whole_topic(checks, tmp_path, topic_end):
    pipe = FakePipe(make_checkpoint(tmp_path, ENDS, committed=3), [])
    for wrong in (0, 900 + 800):  # no group, so "no lag"; every record in the topic
        lab.check_behind(checks, lambda: wrong, pipe, lambda: [{}] * 250)
        assert statuses(checks)["behind counts every order the query has not read yet"] == "FAIL"


def test_exercise_3_rejects_the_last_planned_batch_instead_of_the_last_committed(checks, tmp_path, topic_end):
    # offsets/2 is planned but not committed: the query has not finished it
    pipe = FakePipe(make_checkpoint(tmp_path, ENDS, committed=2), [])
    lab.check_behind(checks, lambda: 250, pipe, lambda: [{}] * 250)
    assert statuses(checks)["behind counts every order the query has not read yet"] == "FAIL"


def test_exercise_3_rejects_a_float_and_a_running_pipeline(checks, tmp_path, topic_end):
    pipe = FakePipe(make_checkpoint(tmp_path, ENDS, committed=3), [], running=True)
    lab.check_behind(checks, lambda: 250.0, pipe, lambda: [])
    assert statuses(checks)["behind is a whole number of records"] == "FAIL"
    lab.check_behind(checks, lambda: 250, pipe, lambda: [])
    assert statuses(checks)["the pipeline is stopped, so nobody reads those orders yet"] == "FAIL"
