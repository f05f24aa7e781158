"""Lab 02's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Every answer is passed as a lambda, so a check whose exercise is not done yet says SKIP. The truth each check
compares with comes from somewhere the learner did not read it: Spark's own progress records (what a batch
really read), or a fresh look at the topic. Each exercise is judged on the run shown and on a hidden run
(checks/hidden.py), so a range or a count typed in from a printout fails:

* exercise 1: ``read_range(pipe, n)`` is called for batch 2 and for another batch, in a copy of the pipeline that
  a crash interrupted in that batch, planned over an uneven share of the records (crashed.py): a range typed in,
  a batch id written into the function, one batch's size taken for another's, or a range read from Spark's
  progress (a crashed batch has none) fails there;
* exercise 2: ``replayed_range(pipe, crash)`` is called for the learner's crash and for a second one, made by the
  check on the same pipeline at another point, batch and run, then restarted and drained. Exercise 1's check
  starts booting the two drivers those restarts take (``boot_two_restarts``), so the check's restart does not
  wait for a boot of its own;
* exercise 3: ``records_behind(pipe)`` is called on the stopped pipeline, again after more orders, and on a copy
  stopped by a crash instead (``offsets/N`` written, ``commits/N`` not), where the two logs disagree.
"""
from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Callable

from ... import checkpoint
from ...checks import hidden
from ...config import CourseError
from .crashed import crashed_copy, planned_ends
from .groups import checkpoint_lag
from .ranges import Range, as_range, spark_range

LAB = "02-anatomy-lab"


def _starts(r: Range | None) -> dict | None:
    return None if r is None else {p: s for p, (s, _) in r.items()}


def _ends(r: Range | None) -> dict | None:
    return None if r is None else {p: e for p, (_, e) in r.items()}


def _sizes(r: Range) -> tuple[int, ...]:
    return tuple(e - s for _, (s, e) in sorted(r.items()))


def _function(checks, description: str, answer: Callable, signature: str, hint: str) -> str:
    checks.that(description, lambda: callable(answer()), expected=signature,
                found=lambda: f"{answer()!r} ({type(answer()).__name__})", hint=hint)
    return description


# --------------------------------------------------------------------------- exercise 1


def hidden_batch(pipe, rng: random.Random, shown: int = 2) -> SimpleNamespace:
    """Exercise 1's hidden run: a copy of the pipeline that a crash interrupted in batch ``h`` (another batch than
    ``shown``, drawn by ``rng``), planned over an uneven share of the records, of a size no real batch had."""
    offsets, _ = pipe.batch_ids()
    ranges = {b: pipe.batch_range(b) for b in sorted(offsets)}
    reach = _ends(ranges[max(offsets)])  # records the topic is known to hold: the last planned batch's ends
    choices = [b for b in sorted(offsets) if b >= 1 and b != shown and b - 1 in offsets
               and any(reach[p] > end for p, end in _ends(ranges[b - 1]).items())]
    if not choices:
        raise CourseError("the pipeline has no batch but the one shown: produce orders and drain it first.")
    batch = rng.choice(choices)
    start = _ends(ranges[batch - 1])
    ends = planned_ends(start, reach, rng, avoid={_sizes(r) for r in ranges.values()})
    twin = crashed_copy(pipe, pipe.lesson.path("hidden", "ex1-crashed"), batch, ends)
    return SimpleNamespace(pipe=twin, batch=batch, truth={p: (start[p], ends[p]) for p in sorted(ends)})


def check_batch_range(checks, read_range: Callable, pipe, batch: int = 2) -> None:
    """Exercise 1: ``read_range(pipe, n)``, a batch's offset range read from the checkpoint's offsets files, for
    batch ``batch`` (compared with what Spark reported for it) and for a hidden batch (``hidden_batch``)."""
    function = _function(checks, "read_range is a function of the pipeline and a batch id", read_range,
                         "def read_range(pipe, batch): ... return {partition: (start, end)}",
                         "Define a function that takes the pipeline and a batch id and returns the range; "
                         "do not call it here.")
    shown = lambda: SimpleNamespace(pipe=pipe, batch=batch,  # noqa: E731
                                    truth=spark_range(pipe, batch, run=1) or pipe.batch_range(batch, run=1))
    runs = hidden.Runs(f"{LAB}:batch-range", shown=shown, hidden=lambda rng: hidden_batch(pipe, rng, batch))

    def got(fn, run):
        return fn(run.pipe, run.batch)

    def shape(fn, run):
        value = got(fn, run)
        return None if as_range(value) is not None else (
            "a dict like {0: (start, end), 1: (start, end)} with int offsets", f"read_range(pipe, {run.batch}) = {value!r}")

    def partitions(fn, run):
        found = as_range(got(fn, run))
        return None if set(found) == set(run.truth) else (
            f"partitions {sorted(run.truth)}", f"read_range(pipe, {run.batch}) has partitions {sorted(found)}")

    def starts(fn, run):
        found = _starts(as_range(got(fn, run)))
        return None if found == _starts(run.truth) else (
            f"the offsets where batch {run.batch - 1} ended", f"batch {run.batch} starts at {found}")

    def ends(fn, run):
        found = _ends(as_range(got(fn, run)))
        return None if found == _ends(run.truth) else (
            f"the offsets in offsets/{run.batch}", f"batch {run.batch} ends at {found}")

    mapped, covered = "read_range(pipe, n) maps each partition to a (start, end) pair", "it covers every partition of the topic"
    checks.on_runs(mapped, read_range, runs, shape, depends_on=function,
                   hint="Read both ends from the checkpoint's offsets files: checkpoint.topic_offsets(line, pipe.topic) "
                        "turns one offsets line into {partition: offset}. A batch that a crash interrupted has its "
                        "offsets file and nothing else.")
    checks.on_runs(covered, read_range, runs, partitions, depends_on=mapped,
                   hint="Use the source's line for this pipeline's topic; it names every partition.")
    checks.on_runs("batch n starts where batch n-1 ended", read_range, runs, starts, depends_on=covered,
                   hint="offsets/n holds only where batch n ends. Where it starts is written in another batch's "
                        "file: which one? Batches need not all be the same size.")
    checks.on_runs("batch n ends where offsets/n says", read_range, runs, ends, depends_on=covered,
                   hint="Read the last line of offsets/n itself, for the batch id the function is given.")
    boot_two_restarts(pipe)


def boot_two_restarts(pipe) -> None:
    """Exercise 2 restarts the pipeline twice: after the learner's crash, then after the check's own
    (``hidden_crash``). A restart takes a standby driver booted ahead of need (crashlab/drivers.py), and a crash
    starts booting only one. So both start booting now, while the learner works on exercise 2, and the check's
    restart does not wait for a boot of its own; later crashes boot one at a time again."""
    from ...crashlab import drivers
    from ...crashlab.pipeline import Pipeline

    if isinstance(pipe, Pipeline) and pipe.running:
        drivers.warm_up(2)
        drivers.warm_up(1)  # the pool's number back to one: the two booting stay


# --------------------------------------------------------------------------- exercise 2

#: Where the check crashes the pipeline on exercise 2's hidden run: points after which the batch is replayed.
HIDDEN_POINTS = ("before_sink_write", "after_sink_write")


def hidden_crash(pipe, rng: random.Random):
    """Exercise 2's hidden run: the same pipeline crashed again, at a point and with a number of orders drawn by
    ``rng`` (always more than one batch takes, so the restart runs a batch after the replay, and as few more as
    that needs), restarted, drained."""
    if not pipe.running:
        raise CourseError("the pipeline is not running: restart it (pipe.restart(), pipe.drain()) and run the check again.")
    per_batch = pipe.max_per_batch or 100
    crash = pipe.crash(rng.choice(HIDDEN_POINTS), orders=rng.randint(per_batch + 20, per_batch + 80))
    pipe.restart()
    pipe.drain()
    return crash


def check_replay(checks, crash: Callable, replayed_range: Callable, pipe) -> None:
    """Exercise 2: a crash between offsets/N and commits/N, then ``replayed_range(pipe, crash)``, the range the
    restart read for batch N, on the learner's crash and on a hidden one (``hidden_crash``)."""
    checks.is_type("crash is what pipe.crash(...) returned", crash, "Crash",
                   hint="Keep the value pipe.crash(point) returns: it names the point and the batch.")
    checks.that("the crash left its batch in the sink but not committed",
                lambda: crash().replayed and crash().point == "after_sink_write",
                expected="a crash point after the sink has batch N and before commits/N is written",
                found=lambda: f"crash at {crash().point}" + ("" if crash().replayed else " (its batch was committed)"),
                hint="Compare the crash points in crashlab.crashpoints.CRASH_POINTS: which one comes after the "
                     "sink write and before commits/N?",
                depends_on="crash is what pipe.crash(...) returned")
    function = _function(checks, "replayed_range is a function of the pipeline and a crash", replayed_range,
                         "def replayed_range(pipe, crash): ... return {partition: (start, end)}",
                         "Define a function that takes the pipeline and a crash and returns the range; "
                         "do not call it here.")

    def restarted_range(c):
        return spark_range(pipe, c.batch, run=c.run + 1)

    def reran():
        if pipe.running:
            pipe.drain()  # a restart that has not finished the replay yet gets its time, whoever calls the check
        return restarted_range(crash()) is not None

    again = "the restarted driver ran the crashed batch again"
    checks.that(again, reran, expected="a progress record for the crashed batch from the next run",
                found="no such record: was the pipeline restarted and drained after the crash?",
                hint="pipe.restart() then pipe.drain(); pipe.progress(run=...) lists what each run did.",
                depends_on="the crash left its batch in the sink but not committed")
    runs = hidden.Runs(f"{LAB}:replay", shown=crash, hidden=lambda rng: hidden_crash(pipe, rng))

    def read(fn, c):
        value = fn(pipe, c)
        return value, as_range(value)

    def judge_reported(fn, c):
        value, found = read(fn, c)
        return None if found is not None and found == restarted_range(c) else (
            f"the range run {c.run + 1} reported for batch {c.batch}",
            f"replayed_range(pipe, crash) = {value!r} for a crash at {c.point} in batch {c.batch} of run {c.run}")

    def judge_planned(fn, c):
        value, found = read(fn, c)
        return None if found == pipe.batch_range(c.batch) else (
            f"the range in offsets/{c.batch}", f"replayed_range(pipe, crash) = {value!r}")

    reported = "replayed_range(pipe, crash) is the range the restart read for that batch"
    checks.on_runs(reported, replayed_range, runs, judge_reported, depends_on=[function, again],
                   hint="Pick the progress record whose batch is crash.batch, in the run after crash.run; its "
                        "start_offset and end_offset are per topic, then per partition. The restart may run more "
                        "batches after it.")
    checks.on_runs("it is exactly the range planned before the crash", replayed_range, runs, judge_planned,
                   depends_on=reported,
                   hint="Compare with pipe.batch_range(crash.batch): the restart does not plan the batch again.")


# --------------------------------------------------------------------------- exercise 3


def hidden_stop(pipe, rng: random.Random):
    """Exercise 3's hidden run: a copy of the stopped pipeline as a crash would have left it instead of pipe.stop():
    either a new batch planned over some of the orders that wait, or its last batch planned and not committed."""
    from ...stack import kafka

    offsets, commits = pipe.batch_ids()
    with_rows = [b for b in sorted(commits) if b >= 1 and b - 1 in offsets and sum(_sizes(pipe.batch_range(b)))]
    done = checkpoint.done_offsets(pipe.checkpoint, pipe.topic)
    end = kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic)
    waiting = bool(commits) and max(offsets) == max(commits) and any(end[p] > done.get(p, 0) for p in end)
    folder = pipe.lesson.path("hidden", "ex3-crashed")
    if waiting and (not with_rows or rng.random() < 0.5):
        return crashed_copy(pipe, folder, max(offsets) + 1, planned_ends(done, end, rng))
    if not with_rows:
        raise CourseError("the pipeline has not finished a batch with orders yet: nothing a crash could leave behind.")
    return crashed_copy(pipe, folder, max(with_rows))


def check_behind(checks, records_behind: Callable, pipe, more: int = 30) -> None:
    """Exercise 3: how far behind a stopped query is, measured from its checkpoint by ``records_behind(pipe)``.

    The check calls the function as the lab left the topic (and on a copy of the pipeline stopped by a crash instead,
    ``hidden_stop``), then after producing ``more`` orders, so a count typed in, the number of orders produced, or
    the last planned batch taken for the last finished one does not pass for a measurement.
    """
    function = _function(checks, "records_behind is a function of the pipeline", records_behind,
                         "def records_behind(pipe): ...",
                         "Define a function that takes the pipeline and returns a number; do not call it here.")
    counted = "records_behind(pipe) is a whole number of records"
    checks.that(counted, lambda: _whole(records_behind()(pipe)), expected="an int",
                found=lambda: f"{records_behind()(pipe)!r} ({type(records_behind()(pipe)).__name__})",
                hint="Add up, over the partitions, the topic's end offset minus where the query has got to.",
                depends_on=function)
    lag = lambda p: checkpoint_lag(p.checkpoint, p.topic, p.lesson.bootstrap)  # noqa: E731
    runs = hidden.Runs(f"{LAB}:behind", shown=lambda: pipe, hidden=lambda rng: hidden_stop(pipe, rng))

    def judge(fn, p):
        found, right = fn(p), lag(p)
        return None if found == right else (f"{right} records, from the checkpoint and the topic",
                                            f"records_behind(pipe) = {found!r}")

    checks.on_runs("it counts every order the query has not finished yet", records_behind, runs, judge,
                   depends_on=counted,
                   hint="A consumer group knows nothing about a Spark query, and a crash can stop a query between "
                        "planning a batch and finishing it. Which checkpoint file says how far the query has got? "
                        "checkpoint.done_offsets reads it.")
    added: list = []

    def after_more():
        if not added:
            added.append(pipe.produce(more))
        return records_behind()(pipe)

    checks.that(f"it still counts after {more} more orders", lambda: after_more() == lag(pipe),
                expected=lambda: f"{lag(pipe)} records", found=lambda: f"records_behind(pipe) = {after_more()}",
                hint="The check produced more orders and called your function again: measure the topic and "
                     "the checkpoint each time, do not count what was produced.", depends_on=counted)
    checks.that("the pipeline is stopped, so nobody reads those orders yet", lambda: not pipe.running,
                expected="a stopped pipeline", found="it is running: it will catch up and the count becomes stale",
                hint="Stop it with pipe.stop() before producing the orders.", depends_on=counted)


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
