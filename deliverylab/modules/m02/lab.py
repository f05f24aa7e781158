"""Lab 02's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Every answer is passed as a lambda, so a check whose exercise is not done yet says SKIP.
The truth each check compares with comes from somewhere the learner did not read it:
Spark's own progress records (what a batch really read), or a fresh look at the topic.
"""
from __future__ import annotations

from typing import Callable

from .groups import checkpoint_lag
from .ranges import Range, as_range, spark_range


def _starts(r: Range | None) -> dict | None:
    return None if r is None else {p: s for p, (s, _) in r.items()}


def _ends(r: Range | None) -> dict | None:
    return None if r is None else {p: e for p, (_, e) in r.items()}


# --------------------------------------------------------------------------- exercise 1


def check_batch_range(checks, answer: Callable, pipe, batch: int = 2) -> None:
    """Exercise 1: batch ``batch``'s offset range, read from the checkpoint's offsets files."""
    name = f"batch{batch}"
    truth = lambda: spark_range(pipe, batch, run=1) or pipe.batch_range(batch, run=1)  # noqa: E731
    checks.that(f"{name} maps each partition to a (start, end) pair", lambda: as_range(answer()) is not None,
                expected="a dict like {0: (start, end), 1: (start, end)} with int offsets",
                found=lambda: repr(answer()),
                hint="checkpoint.topic_offsets(line, pipe.topic) turns one offsets line into {partition: offset}.")
    checks.that(f"{name} covers every partition of the topic", lambda: set(as_range(answer())) == set(truth()),
                expected="the partitions the topic has", found=lambda: f"partitions {sorted(as_range(answer()))}",
                hint="Use the source's line for this pipeline's topic; it names every partition.",
                depends_on=f"{name} maps each partition to a (start, end) pair")
    checks.that(f"batch {batch} starts where batch {batch - 1} ended", lambda: _starts(as_range(answer())) == _starts(truth()),
                expected="the start offsets Spark reported for this batch",
                found=lambda: f"starts {_starts(as_range(answer()))}",
                hint=f"offsets/{batch} holds only where batch {batch} ends. Where it starts is written in "
                     "another batch's file: which one?",
                depends_on=f"{name} covers every partition of the topic")
    checks.that(f"batch {batch} ends where offsets/{batch} says", lambda: _ends(as_range(answer())) == _ends(truth()),
                expected="the end offsets Spark reported for this batch",
                found=lambda: f"ends {_ends(as_range(answer()))}",
                hint=f"Read the last line of offsets/{batch} itself, not of the file before it.",
                depends_on=f"{name} covers every partition of the topic")


# --------------------------------------------------------------------------- exercise 2


def check_replay(checks, crash: Callable, replayed: Callable, pipe) -> None:
    """Exercise 2: a crash between offsets/N and commits/N, then the range the restart read for batch N."""
    checks.is_type("crash is what pipe.crash(...) returned", crash, "Crash",
                   hint="Keep the value pipe.crash(point) returns: it names the point and the batch.")
    checks.that("the crash left its batch in the sink but not committed",
                lambda: crash().replayed and crash().point == "after_sink_write",
                expected="a crash point after the sink has batch N and before commits/N is written",
                found=lambda: f"crash at {crash().point}" + ("" if crash().replayed else " (its batch was committed)"),
                hint="Compare the crash points in crashlab.crashpoints.CRASH_POINTS: which one comes after the "
                     "sink write and before commits/N?",
                depends_on="crash is what pipe.crash(...) returned")
    restarted_range = lambda: spark_range(pipe, crash().batch, run=crash().run + 1)  # noqa: E731
    checks.that("the restarted driver ran the crashed batch again", lambda: restarted_range() is not None,
                expected="a progress record for the crashed batch from the next run",
                found="no such record: was the pipeline restarted and drained after the crash?",
                hint="pipe.restart() then pipe.drain(); pipe.progress(run=...) lists what each run did.",
                depends_on="the crash left its batch in the sink but not committed")
    checks.that("replayed is the range the restart read for that batch",
                lambda: as_range(replayed()) == restarted_range(),
                expected="the start and end offsets the restarted run reported for the crashed batch",
                found=lambda: repr(replayed()),
                hint="Pick the progress record whose batch is crash.batch, in the run after the crash; "
                     "its start_offset and end_offset are per topic, then per partition.",
                depends_on="the restarted driver ran the crashed batch again")
    checks.that("it is exactly the range planned before the crash",
                lambda: as_range(replayed()) == pipe.batch_range(crash().batch),
                expected="the range in the crashed batch's offsets file",
                found=lambda: repr(replayed()),
                hint="Compare with pipe.batch_range(crash.batch): the restart does not plan the batch again.",
                depends_on="replayed is the range the restart read for that batch")


# --------------------------------------------------------------------------- exercise 3


def check_behind(checks, records_behind: Callable, pipe, more: int = 30) -> None:
    """Exercise 3: how far behind a stopped query is, measured from its checkpoint by ``records_behind(pipe)``.

    The check calls the function twice: as the lab left the topic, then after producing ``more`` orders,
    so a count typed in, or the number of orders the lab produced, does not pass for a measurement.
    """
    function = "records_behind is a function of the pipeline"
    checks.that(function, lambda: callable(records_behind()), expected="def records_behind(pipe): ...",
                found=lambda: f"{records_behind()!r} ({type(records_behind()).__name__})",
                hint="Define a function that takes the pipeline and returns a number; do not call it here.")
    counted = "records_behind(pipe) is a whole number of records"
    checks.that(counted, lambda: _whole(records_behind()(pipe)), expected="an int",
                found=lambda: f"{records_behind()(pipe)!r} ({type(records_behind()(pipe)).__name__})",
                hint="Add up, over the partitions, the topic's end offset minus where the query has got to.",
                depends_on=function)
    lag = lambda: checkpoint_lag(pipe.checkpoint, pipe.topic, pipe.lesson.bootstrap)  # noqa: E731
    checks.that("it counts every order the query has not read yet", lambda: records_behind()(pipe) == lag(),
                expected=lambda: f"{lag()} records, from the checkpoint and the topic",
                found=lambda: f"records_behind(pipe) = {records_behind()(pipe)}",
                hint="A consumer group knows nothing about a Spark query. Which checkpoint file says how far "
                     "the query has got? checkpoint.done_offsets reads it.", depends_on=counted)
    added: list = []

    def after_more():
        if not added:
            added.append(pipe.produce(more))
        return records_behind()(pipe)

    checks.that(f"it still counts after {more} more orders", lambda: after_more() == lag(),
                expected=lambda: f"{lag()} records", found=lambda: f"records_behind(pipe) = {after_more()}",
                hint="The check produced more orders and called your function again: measure the topic and "
                     "the checkpoint each time, do not count what was produced.", depends_on=counted)
    checks.that("the pipeline is stopped, so nobody reads those orders yet", lambda: not pipe.running,
                expected="a stopped pipeline", found="it is running: it will catch up and the count becomes stale",
                hint="Stop it with pipe.stop() before producing the orders.", depends_on=counted)


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
