"""Lab 02's checks accept right answers written several ways and reject planted wrong ones, on the run shown and on
hidden runs (no broker needed).

The pipeline is the crash lab's reading half (crashlab/record.py) on files made here: a checkpoint laid out as Spark
writes it (tests/fakes.py) and progress records shaped like the driver's. For exercise 2 it simulates crashes and
restarts the way the crash lab's at-least-once pipeline goes through them.
"""
from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from deliverylab import checkpoint
from deliverylab.checks import Checks, hidden
from deliverylab.crashlab.files import PipelineFolder
from deliverylab.crashlab.pipeline import Crash
from deliverylab.crashlab.record import PipelineRecord
from deliverylab.crashlab.variants import variant
from deliverylab.modules import m02
from deliverylab.modules.m02 import lab
from deliverylab.modules.m02.crashed import crashed_copy
from deliverylab.stack import kafka, processes
from seeds import seed_fixture

from fakes import TOPIC, kafka_json, make_checkpoint, write_commit, write_offsets

#: What the lab's pipeline has after 300 orders at most 100 a batch: an empty batch 0, then 46/54 a batch.
ENDS = [{0: 0, 1: 0}, {0: 46, 1: 54}, {0: 92, 1: 108}, {0: 138, 1: 162}]


def record(run, batch, start, end):
    as_json = lambda offsets: {TOPIC: {str(p): o for p, o in offsets.items()}} if offsets is not None else None  # noqa: E731
    return {"event": "progress", "run": run, "batch": batch, "rows": sum(end.values()) - sum((start or {}).values()),
            "start_offset": as_json(start), "end_offset": as_json(end)}


class Pipe(PipelineRecord):
    """A crash-lab pipeline's reading half on files made here; crash/restart/drain simulate an at-least-once one."""

    def __init__(self, root: Path, ends=ENDS, committed=None):
        root.mkdir(parents=True, exist_ok=True)
        self.lesson = SimpleNamespace(bootstrap="127.0.0.1:1", path=lambda *parts: str(root.joinpath("lesson", *parts)))
        self.variant, self.name, self.topic = variant("at_least_once"), "at_least_once", TOPIC
        self.folder = PipelineFolder(root / "pipe")
        self.folder.path.mkdir()
        self.checkpoint_root = str(make_checkpoint(root, ends, committed=len(ends) if committed is None else committed))
        self.produced, self.crashes, self.starts, self.max_per_batch, self.running = [], [], 1, 100, True
        self.end = dict(ends[-1])
        for batch in range(len(ends) if committed is None else committed):
            self.log(record(1, batch, ends[batch - 1] if batch else None, ends[batch]))

    def log(self, rec):
        processes.append_jsonl(self.folder.progress, rec)

    def produce(self, n):
        for i in range(n):
            self.end[i % 2] += 1
        return [{}] * n

    def _plan(self):
        batch = self.next_batch_id()
        done = checkpoint.done_offsets(self.checkpoint, self.topic)
        waiting = {p: self.end[p] - done[p] for p in self.end}
        share = {p: waiting[p] * self.max_per_batch // max(self.max_per_batch, sum(waiting.values())) for p in waiting}
        write_offsets(Path(self.checkpoint), batch, kafka_json({p: done[p] + share[p] for p in done}))
        return batch

    def crash(self, point, batch=None, orders=500):
        self.produce(orders)
        planned = self._plan()
        if point == "after_commit":
            write_commit(Path(self.checkpoint), planned)
        self.running = False
        crash = Crash(point, planned, -9, run=self.starts)
        self.crashes.append(crash)
        return crash

    def restart(self):
        self.starts, self.running = self.starts + 1, True

    def drain(self):
        while True:
            offsets, commits = self.batch_ids()
            open_ = sorted(offsets - commits)
            batch = open_[0] if open_ else None
            if batch is None:
                if checkpoint.done_offsets(self.checkpoint, self.topic) == self.end:
                    return
                batch = self._plan()
            write_commit(Path(self.checkpoint), batch)
            r = self.batch_range(batch)
            self.log(record(self.starts, batch, {p: s for p, (s, _) in r.items()}, {p: e for p, (_, e) in r.items()}))

    def stop(self):
        self.running = False


seed = seed_fixture()


@pytest.fixture
def pipe(tmp_path):
    return Pipe(tmp_path)


def fresh():
    return Checks("02-anatomy-lab", record=False)


def statuses(checks):
    return {r.description: r.status for r in checks.results}


def first_fail(checks):
    failed = [r for r in checks.results if r.status == "FAIL"]
    assert failed, statuses(checks)
    return "\n".join(failed[0].lines)


def ends_of(pipe, n):
    line = checkpoint.read_offsets_file(Path(pipe.checkpoint, "offsets", str(n)))["sources"][0]
    return checkpoint.topic_offsets(line, pipe.topic)


# --------------------------------------------------------------------------- exercise 1

RIGHT_READERS = {
    "the offsets files, as the solution": lambda pipe, b: {p: (ends_of(pipe, b - 1)[p], e) for p, e in ends_of(pipe, b).items()},
    "the course's batch_range": lambda pipe, b: checkpoint.batch_range(pipe.checkpoint, b, pipe.topic),
    "string keys and lists": lambda pipe, b: {str(p): [ends_of(pipe, b - 1)[p], e] for p, e in ends_of(pipe, b).items()},
}
SHOWN_2 = {0: (46, 92), 1: (54, 108)}
#: (reader, the run it fails on): typed in, a batch written into the function, Spark's progress (a crashed batch has
#: no record), one batch's size taken for every batch's, the previous batch's file.
WRONG_READERS = {
    "typed in from the printout": (lambda pipe, b: SHOWN_2, "a hidden run"),
    "batch 2 whatever batch": (lambda pipe, b: {p: (ends_of(pipe, 1)[p], e) for p, e in ends_of(pipe, 2).items()}, "a hidden run"),
    "Spark's progress record": (lambda pipe, b: m02.reported_range(
        [r for r in pipe.progress() if r["batch"] == b][-1], pipe.topic), "a hidden run"),
    "every batch as big as batch 2": (lambda pipe, b: {p: (e - {0: 46, 1: 54}[p], e) for p, e in ends_of(pipe, b).items()},
                                      "a hidden run"),
    "the previous batch's file": (lambda pipe, b: {p: (ends_of(pipe, b - 2)[p], e) for p, e in ends_of(pipe, b - 1).items()},
                                  None),  # wrong above, and it raises on a hidden batch 1: either FAILs first
    "from the topic's start": (lambda pipe, b: {p: (0, e) for p, e in ends_of(pipe, b).items()}, "the run above"),
}


@pytest.mark.parametrize("name", RIGHT_READERS)
def test_exercise_1_right_readers_pass_on_the_hidden_crash_too(name, pipe, seed):
    checks = fresh()
    lab.check_batch_range(checks, lambda: RIGHT_READERS[name], pipe, batch=2)
    assert set(statuses(checks).values()) == {"PASS"}, checks.results


@pytest.mark.parametrize("name", WRONG_READERS)
def test_exercise_1_wrong_readers_fail_where_they_go_wrong(name, pipe, seed):
    reader, where = WRONG_READERS[name]
    checks = fresh()
    lab.check_batch_range(checks, lambda: reader, pipe, batch=2)
    text = first_fail(checks)
    assert f"on:       {where or ''}" in text and "hint:" in text, text
    if where == "a hidden run":
        assert f"seed {seed}" in text


def test_exercise_1_wants_a_function(pipe):
    checks = fresh()
    lab.check_batch_range(checks, lambda: SHOWN_2, pipe, batch=2)
    got = statuses(checks)
    assert got["read_range is a function of the pipeline and a batch id"] == "FAIL"
    assert got["batch n starts where batch n-1 ended"] == "SKIP"


def test_exercise_1_hidden_batch_is_a_crashed_copy_with_a_size_no_batch_had(tmp_path):
    pipe = Pipe(tmp_path / "real")
    before = sorted(p.name for p in Path(pipe.checkpoint).rglob("*"))
    for s in range(40):
        run = lab.hidden_batch(pipe, random.Random(s))
        twin, h = run.pipe, run.batch
        assert h in (1, 3)
        sizes = tuple(e - b for _, (b, e) in sorted(run.truth.items()))
        assert sum(sizes) > 0 and sizes != (46, 54), s
        assert twin.batch_range(h) == run.truth and m02.spark_range(twin, h) is None
        offsets, commits = twin.batch_ids()
        assert max(offsets) == h and h not in commits and max(commits) == h - 1
        assert twin.batch_range(h - 1) == pipe.batch_range(h - 1)
    assert sorted(p.name for p in Path(pipe.checkpoint).rglob("*")) == before  # the real one is not touched


# --------------------------------------------------------------------------- exercise 2


def crashed_and_restarted(pipe, point="after_sink_write", orders=200):
    crash = pipe.crash(point, orders=orders)
    pipe.restart()
    pipe.drain()
    return crash


def from_progress(pipe, crash):
    return m02.reported_range([r for r in pipe.progress(run=crash.run + 1) if r["batch"] == crash.batch][0], pipe.topic)


RIGHT_REPLAYS = {
    "the restart's progress record": from_progress,
    "m02.spark_range": lambda pipe, crash: m02.spark_range(pipe, crash.batch, run=crash.run + 1),
    "the planned range in offsets/N": lambda pipe, crash: pipe.batch_range(crash.batch),
}
WRONG_REPLAYS = {
    "the range typed in": ("typed", "a hidden run"),
    "run 2 written in": (lambda pipe, crash: m02.reported_range(
        [r for r in pipe.progress(run=2) if r["batch"] == crash.batch][0], pipe.topic), "a hidden run"),
    "the restart's last batch": (lambda pipe, crash: m02.reported_range(pipe.progress(run=crash.run + 1)[-1], pipe.topic),
                                 "the run above"),
    "the batch before the crashed one": (lambda pipe, crash: pipe.batch_range(crash.batch - 1), "the run above"),
}


@pytest.mark.parametrize("name", RIGHT_REPLAYS)
def test_exercise_2_right_answers_pass_on_the_checks_own_crash(name, pipe, seed):
    crash = crashed_and_restarted(pipe)
    checks = fresh()
    lab.check_replay(checks, lambda: crash, lambda: RIGHT_REPLAYS[name], pipe)
    assert set(statuses(checks).values()) == {"PASS"}, checks.results
    hidden_crash = pipe.crashes[-1]
    assert len(pipe.crashes) == 2 and hidden_crash.run == 2 and hidden_crash.point in lab.HIDDEN_POINTS
    assert pipe.starts == 3 and pipe.running


@pytest.mark.parametrize("name", WRONG_REPLAYS)
def test_exercise_2_wrong_answers_fail_where_they_go_wrong(name, pipe, seed):
    replayed, where = WRONG_REPLAYS[name]
    crash = crashed_and_restarted(pipe)
    if replayed == "typed":
        replayed = lambda pipe, c, shown=from_progress(pipe, crash): shown  # noqa: E731
    assert replayed(pipe, crash) != from_progress(pipe, crash) or where == "a hidden run"
    checks = fresh()
    lab.check_replay(checks, lambda: crash, lambda: replayed, pipe)
    text = first_fail(checks)
    assert f"on:       {where}" in text and "hint:" in text, text


def test_exercise_2_planted_crashes_and_no_restart(pipe):
    for point in ("before_sink_write", "after_commit"):
        p = Pipe(Path(pipe.checkpoint_root).parent / point)
        crash = crashed_and_restarted(p, point)
        checks = fresh()
        lab.check_replay(checks, lambda: crash, lambda: from_progress, p)
        assert statuses(checks)["the crash left its batch in the sink but not committed"] == "FAIL"
    crash = pipe.crash("after_sink_write", orders=200)  # not restarted: nothing ran the batch again
    checks = fresh()
    lab.check_replay(checks, lambda: crash, lambda: from_progress, pipe)
    got = statuses(checks)
    assert got["the restarted driver ran the crashed batch again"] == "FAIL"
    assert got["replayed_range(pipe, crash) is the range the restart read for that batch"] == "SKIP"
    assert len(pipe.crashes) == 1  # no hidden crash for an exercise that is not done


def test_exercise_2_a_restart_not_drained_yet_is_drained_by_the_check(pipe):
    crash = pipe.crash("after_sink_write", orders=200)
    pipe.restart()  # the learner forgot pipe.drain(): the check gives the replay its time
    checks = fresh()
    lab.check_replay(checks, lambda: crash, lambda: from_progress, pipe)
    assert set(statuses(checks).values()) == {"PASS"}


def test_exercise_2_rejects_something_else_for_the_crash(pipe):
    checks = fresh()
    lab.check_replay(checks, lambda: "after_sink_write", lambda: from_progress, pipe)
    got = statuses(checks)
    assert got["crash is what pipe.crash(...) returned"] == "FAIL"
    assert got["the crash left its batch in the sink but not committed"] == "SKIP"


# --------------------------------------------------------------------------- exercise 3


@pytest.fixture
def stopped(tmp_path, monkeypatch):
    pipe = Pipe(tmp_path)
    pipe.stop()
    pipe.produce(150)
    monkeypatch.setattr(kafka, "end_offsets", lambda bootstrap, topic: dict(pipe.end))
    return pipe


def measured(pipe):
    done = checkpoint.done_offsets(pipe.checkpoint, pipe.topic)
    return sum(end - done.get(p, 0) for p, end in kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic).items())


def last_planned(pipe):
    offsets, _ = checkpoint.batch_ids(pipe.checkpoint)
    planned = checkpoint.topic_offsets(checkpoint.source_line(pipe.checkpoint, max(offsets)), pipe.topic)
    return sum(end - planned.get(p, 0) for p, end in kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic).items())


def from_last_progress(pipe):
    last = max(pipe.progress(), key=lambda r: r["batch"])
    done = {int(p): o for p, o in last["end_offset"][pipe.topic].items()}
    return sum(end - done.get(p, 0) for p, end in kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic).items())


RIGHT_COUNTS = {
    "done_offsets, as the solution": measured,
    "the pipeline's committed offsets": lambda pipe: sum(
        e - pipe.committed_offsets().get(p, 0) for p, e in kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic).items()),
    "m02.checkpoint_lag": lambda pipe: m02.checkpoint_lag(pipe.checkpoint, pipe.topic, pipe.lesson.bootstrap),
    "the last progress record": from_last_progress,
}
WRONG_COUNTS = {
    "the last planned batch (offsets/, not commits/)": (last_planned, "a hidden run"),
    "the count typed in": (lambda pipe: 150, ""),  # a hidden run whose last batch lost its commit, or 30 more orders
    "a consumer group's view": (lambda pipe: 0, "the run above"),
    "the whole topic": (lambda pipe: sum(kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic).values()), "the run above"),
}


@pytest.mark.parametrize("name", RIGHT_COUNTS)
def test_exercise_3_right_counts_pass_on_a_crashed_copy_too(name, stopped, seed):
    checks = fresh()
    lab.check_behind(checks, lambda: RIGHT_COUNTS[name], stopped)
    assert set(statuses(checks).values()) == {"PASS"}, checks.results
    assert sum(stopped.end.values()) == 300 + 150 + 30  # the check produced 30 more and measured again


@pytest.mark.parametrize("name", WRONG_COUNTS)
def test_exercise_3_wrong_counts_fail_where_they_go_wrong(name, stopped, seed):
    count, where = WRONG_COUNTS[name]
    assert count(stopped) != measured(stopped) or where != "the run above"
    checks = fresh()
    lab.check_behind(checks, lambda: count, stopped)
    text = first_fail(checks)
    assert (f"on:       {where}" if where else "FAIL") in text and "hint:" in text, text
    if where == "a hidden run":
        assert f"seed {seed}" in text and hidden.COPIED in text


def test_exercise_3_hidden_stop_separates_the_two_logs_for_every_seed(stopped):
    kinds = set()
    for s in range(40):
        twin = lab.hidden_stop(stopped, random.Random(s))
        offsets, commits = twin.batch_ids()
        assert max(offsets) not in commits, s
        kinds.add(max(offsets) > max(stopped.batch_ids()[0]))
        assert measured(twin) > last_planned(twin) and from_last_progress(twin) == measured(twin), s
    assert kinds == {True, False}  # both: a new batch planned over waiting orders, the last batch not committed


def test_exercise_3_hidden_stop_without_waiting_orders_uncommits_the_last_batch(tmp_path, monkeypatch):
    pipe = Pipe(tmp_path)
    pipe.stop()
    monkeypatch.setattr(kafka, "end_offsets", lambda bootstrap, topic: dict(pipe.end))
    twin = lab.hidden_stop(pipe, random.Random(1))
    assert twin.batch_ids() == ({0, 1, 2, 3}, {0, 1, 2}) and measured(twin) == 100 and last_planned(twin) == 0


def test_exercise_3_rejects_a_number_a_float_and_a_running_pipeline(stopped):
    checks = fresh()
    lab.check_behind(checks, lambda: 250, stopped)
    assert statuses(checks)["records_behind is a function of the pipeline"] == "FAIL"
    lab.check_behind(checks, lambda: lambda pipe: 250.0, stopped)
    assert statuses(checks)["records_behind(pipe) is a whole number of records"] == "FAIL"
    stopped.running = True
    lab.check_behind(checks, lambda: measured, stopped)
    assert statuses(checks)["the pipeline is stopped, so nobody reads those orders yet"] == "FAIL"


def test_crashed_copy_keeps_the_real_offsets_file_without_ends(tmp_path):
    pipe = Pipe(tmp_path)
    twin = crashed_copy(pipe, tmp_path / "copy", 2)
    assert twin.batch_range(2) == pipe.batch_range(2) and twin.batch_ids() == ({0, 1, 2}, {0, 1})
    assert [r["batch"] for r in twin.progress()] == [0, 1] and twin.checkpoint != pipe.checkpoint
