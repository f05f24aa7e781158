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
    assert got["the crash left its batch in the sink but not committed"] == "FAIL"
    assert got["replayed is the range the restart read for that batch"] == "SKIP"


def test_exercise_2_rejects_a_crash_before_the_sink_has_the_batch(checks, pipe):
    pipe.records = RUN_1 + RUN_2
    lab.check_replay(checks, lambda: Crash("before_sink_write", 2, -9, run=1), lambda: RIGHT_BATCH_2, pipe)
    assert statuses(checks)["the crash left its batch in the sink but not committed"] == "FAIL"


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
    assert got["the crash left its batch in the sink but not committed"] == "SKIP"


# --------------------------------------------------------------------------- exercise 3


TOPIC_END = {0: 900, 1: 800}  # the checkpoint's last commit (committed=3) is at {0: 750, 1: 700}: 250 behind


class StoppedPipe(FakePipe):
    """A stopped pipeline whose topic grows when the check produces more orders."""

    def __init__(self, ckpt, running=False):
        super().__init__(ckpt, [], running=running)
        self.end = dict(TOPIC_END)

    def produce(self, n):
        self.end[0] += n
        return [{}] * n


@pytest.fixture
def stopped(tmp_path, monkeypatch):
    from deliverylab.stack import kafka

    pipe = StoppedPipe(make_checkpoint(tmp_path, ENDS, committed=3))
    monkeypatch.setattr(kafka, "end_offsets", lambda bootstrap, topic: dict(pipe.end))
    return pipe


def measured(pipe):
    done = checkpoint.done_offsets(pipe.checkpoint, pipe.topic)
    return sum(end - done.get(p, 0) for p, end in pipe.end.items())


def test_exercise_3_right_answer(checks, stopped):
    lab.check_behind(checks, lambda: measured, stopped)
    assert set(statuses(checks).values()) == {"PASS"}
    assert stopped.end[0] == 930  # the check produced 30 more and measured again


@pytest.mark.parametrize("wrong", [
    lambda pipe: 250,                                   # the count of this run, typed in
    lambda pipe: 0,                                     # a consumer group's view: no group, no lag
    lambda pipe: sum(pipe.end.values()),                # every record in the topic
])
def test_exercise_3_rejects_a_count_that_is_not_measured(checks, stopped, wrong):
    lab.check_behind(checks, lambda: wrong, stopped)
    assert "FAIL" in statuses(checks).values()


def test_exercise_3_rejects_the_last_planned_batch_instead_of_the_last_committed(checks, tmp_path, monkeypatch):
    from deliverylab.stack import kafka

    pipe = StoppedPipe(make_checkpoint(tmp_path, ENDS, committed=2))  # offsets/2 planned, not committed
    monkeypatch.setattr(kafka, "end_offsets", lambda bootstrap, topic: dict(pipe.end))
    last = lambda p: checkpoint.topic_offsets(checkpoint.source_line(p.checkpoint, max(checkpoint.batch_ids(  # noqa: E731
        p.checkpoint)[0])), p.topic)
    planned = lambda p: sum(end - last(p).get(q, 0) for q, end in p.end.items())  # noqa: E731
    lab.check_behind(checks, lambda: planned, pipe)
    assert statuses(checks)["it counts every order the query has not read yet"] == "FAIL"


def test_exercise_3_rejects_a_number_a_float_and_a_running_pipeline(checks, stopped):
    lab.check_behind(checks, lambda: 250, stopped)
    assert statuses(checks)["records_behind is a function of the pipeline"] == "FAIL"
    lab.check_behind(checks, lambda: lambda pipe: 250.0, stopped)
    assert statuses(checks)["records_behind(pipe) is a whole number of records"] == "FAIL"
    stopped.running = True
    lab.check_behind(checks, lambda: measured, stopped)
    assert statuses(checks)["the pipeline is stopped, so nobody reads those orders yet"] == "FAIL"
