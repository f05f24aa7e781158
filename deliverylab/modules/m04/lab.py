"""Lab 04's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Every answer is passed as a lambda, so a check whose exercise is not done yet says SKIP. Each exercise is also
judged on a hidden run (checks/hidden.py, built in hidden_runs.py): exercise 1's crash is one, its batch drawn from
the seed (the lab's pipeline sends a crash's orders with producer retries among them); exercise 2's function meets a
sink where retried orders were also replayed; exercise 3's dedupe runs over a trial topic with other event times,
late orders and a retry split across two micro-batches; exercise 4's function meets a trial with another delay.
A hidden run that needs Spark is built once per answer and seed, so running a check cell again costs nothing.
"""
from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Callable

from ...checks import hidden
from . import hidden_runs, trial  # noqa: F401 - the lab's cells call m04.trial.run
from .hidden_runs import Pipeline  # noqa: F401 - the lab's pipeline: lab.Pipeline(lesson, "at_least_once", ...)
from .duplicates import DuplicateKinds, classify
from .watermarks import iso, parse_time

LAB = "04-at-least-once-lab"


def _ids(value) -> set:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"expected a collection of order ids (a list or a set), not {type(value).__name__}")
    return set(value)


def _diff(answer: set, truth: set) -> str:
    extra, missing = sorted(answer - truth), sorted(truth - answer)
    parts = [f"{len(answer)} ids"]
    if extra:
        parts.append(f"{len(extra)} that should not be there (e.g. {extra[0]})")
    if missing:
        parts.append(f"{len(missing)} missing (e.g. {missing[0]})")
    return ", ".join(parts)


# --------------------------------------------------------------------------- exercise 1

POINT = "the driver died after the sink write"
CAUGHT_UP = "the restarted pipeline has caught up with its topic"


def check_crash(checks, pipe: Callable, crash: Callable, retried: Callable) -> None:
    """Exercise 1: the plain-append pipeline, crashed after its write, restarted, with a producer retry. The crash is
    the hidden run: the lab's pipeline (hidden_runs.Pipeline) sends the crash's orders as a retrying producer does,
    some twice as drawn from the exercise's seed, so the batch that crashes begins with an order and its copy."""
    checks.equal("the pipeline is the plain append (at_least_once)", lambda: pipe().variant.name, "at_least_once",
                 hint="Create the pipeline with lab.Pipeline(lesson, \"at_least_once\", ...).")
    checks.equal(POINT, lambda: crash().point, "after_sink_write",
                 hint="Which crash point leaves the whole batch in the sink and commits/N unwritten?")
    checks.that("at least one reply was lost, so the producer sent an order twice", lambda: len(retried().retried) > 0,
                expected="a RetryReport with retried orders", found=lambda: retried().line(),
                hint="produce_with_retries loses a reply every lose_every sends; send more orders than lose_every.")
    checks.that(CAUGHT_UP, lambda: _settled(pipe()) and _caught_up(pipe()),
                expected="a running driver whose commits cover the whole topic", found=lambda: pipe().status_line(),
                hint="After the crash: pipe.restart(), then pipe.drain().", depends_on=POINT)
    runs = _CrashRun(pipe, crash)
    checks.on_runs("a crash there writes the batch twice and loses nothing", lambda: crash().point, runs,
                   _judge_replay, depends_on=[POINT, CAUGHT_UP],
                   hint="After a crash between the sink's write and commits/N, every record of the batch is written "
                        "again, the producer's retried copies too.")


class _CrashRun:
    """The run exercise 1's last check judges: the learner's crash, its batch drawn from the exercise's seed
    (``pipe.seed_drawn``, which a FAIL names); read when the check first asks."""

    def __init__(self, pipe: Callable, crash: Callable):
        self._pipe, self._crash = pipe, crash

    def __iter__(self):
        pipe, crash = self._pipe(), self._crash()
        return iter([hidden.Run("the run above", getattr(pipe, "seed_drawn", None),
                                lambda: hidden_runs.outcome(pipe, crash))])


def _settled(pipe) -> bool:
    """A running pipeline is drained first, so the verdict does not depend on how soon the check ran."""
    if pipe.running:
        pipe.drain()
    return pipe.running


def _caught_up(pipe) -> bool:
    from ...stack import kafka

    done = pipe.committed_offsets()
    return all(done.get(p, -1) >= end for p, end in kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic).items())


def _judge_replay(point, run):
    """Every record of the crashed batch written twice (rows = records + the batch's records of that id), none lost."""
    ledger, records = run.ledger, run.offsets
    if ledger.lost:
        return "0 lost orders", f"{ledger.lost} lost (e.g. {ledger.lost_ids[0]})"
    wrong = [(i, run.batch.count(i)) for i in sorted(set(run.batch))
             if ledger.copies[i] != len(records.get(i, ())) + run.batch.count(i)]
    if not run.batch or wrong:
        where = f"batch {run.crash.batch}" if run.crash.batch is not None else "no batch"
        found = (f"{where} holds no orders" if not run.batch else
                 f"{wrong[0][0]}: {ledger.copies[wrong[0][0]]} rows for {len(records.get(wrong[0][0], ()))} records")
        return "each record of the crashed batch in the sink twice", found
    return None


# --------------------------------------------------------------------------- exercise 2

KINDS = "duplicate_kinds is a function of offsets and copies"


def check_duplicate_kinds(checks, kinds: Callable, shown: Callable) -> None:
    """Exercise 2: ``duplicate_kinds(offsets, copies) -> (source_ids, replay_ids)`` against duplicates.classify, on
    the pipeline's topic and sink (``shown() -> (offsets, copies)``) and on a hidden topic where retried orders
    were also replayed."""
    checks.that(KINDS, lambda: callable(kinds()), expected="def duplicate_kinds(offsets, copies): ... return "
                "source_ids, replay_ids", found=lambda: f"{type(kinds()).__name__}",
                hint="Define a function that takes offsets and copies and returns the two sets; do not call it here.")
    runs = hidden.Runs(f"{LAB}:kinds", shown=lambda: SimpleNamespace(offsets=shown()[0], copies=shown()[1]),
                       hidden=hidden_runs.replayed_topic)
    checks.on_runs("source_ids: the orders at more than one offset of the topic", kinds, runs,
                   lambda fn, run: _judge_kind(fn, run, 0), depends_on=KINDS,
                   hint="Count offsets per order id in `offsets`: a retry is one order id at two offsets, however "
                        "many rows the sink holds for it. The sink cannot tell you this.")
    checks.on_runs("replay_ids: the orders with more rows in the sink than records in the topic", kinds, runs,
                   lambda fn, run: _judge_kind(fn, run, 1), depends_on=KINDS,
                   hint="Compare copies[id] (rows in the sink) with len(offsets[id]) (records in the topic), id by "
                        "id. An order the producer sent twice can also be in a replayed batch: 3 or 4 rows, 2 records.")


def _judge_kind(fn, run, which: int):
    pair = fn(copy.deepcopy(run.offsets), copy.deepcopy(run.copies))
    if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
        raise ValueError(f"duplicate_kinds returned {pair!r:.80}: return the two sets, source_ids and replay_ids")
    truth: DuplicateKinds = classify(run.offsets, run.copies)
    right, answer = set((truth.at_source, truth.replayed)[which]), _ids(pair[which])
    if answer == right:
        return None
    what = ("the order ids that the topic holds more than once", "the order ids the sink holds more often than "
            "the topic does")[which]
    return what, _diff(answer, right)


# --------------------------------------------------------------------------- exercise 3

DEDUPE_CHECKS = ("no order reached the sink twice", "no order was lost", "the query has a watermark",
                 "the dedup state lets go of old orders")


def check_dedupe(checks, result: Callable, lesson=None, trial_again: Callable | None = None) -> None:
    """Exercise 3: a trial.run of the learner's dedupe() on orders with producer retries, and the same dedupe on a
    hidden trial topic (``trial_again(dedupe, rng)``, default hidden_runs.hidden_trial in ``lesson``)."""
    exercise = f"{LAB}:dedupe"
    again = trial_again or (lambda dedupe, rng: hidden_runs.hidden_trial(dedupe, lesson, rng))
    runs = hidden.Runs(exercise, shown=result, hidden=lambda rng: hidden.once(
        ("dedupe", id(result()), hidden.seed_for(exercise)), (result(),), lambda: again(result().dedupe, rng)))
    checks.on_runs(DEDUPE_CHECKS[0], result, runs, lambda _, run: None if run.ledger.duplicated == 0 else (
                   "0 duplicated orders", f"{run.ledger.duplicated} duplicated (e.g. {run.ledger.duplicated_ids[0]})"),
                   hint="A retried order arrives twice, with the same order_id and the same event_time, in the same "
                        "micro-batch or the next one. Which columns identify an order?")
    checks.on_runs(DEDUPE_CHECKS[1], result, runs, lambda _, run: None if run.ledger.lost == 0 else (
                   "0 lost orders", f"{run.ledger.lost} lost, {run.late_rows} rows dropped as too late"),
                   hint="Rows behind the watermark are dropped as too late; is your delay long enough for orders that "
                        "arrive out of order, some of them tens of seconds behind the latest?")
    checks.on_runs(DEDUPE_CHECKS[2], result, runs, lambda _, run: None if run.has_watermark else (
                   "a watermark on event_time", "no watermark in the query's progress"),
                   hint="Without a watermark nothing tells Spark when an order id can be forgotten.")
    checks.on_runs(DEDUPE_CHECKS[3], result, runs, _judge_state,
                   hint="State is evicted only when the watermark can say a key is old: the key must include the "
                        "event-time column, or use dropDuplicatesWithinWatermark.")


def _judge_state(_, run):
    if run.final_state_rows is not None and run.final_state_rows < len(run.produced):
        return None
    found = ("no dedup state at all" if run.final_state_rows is None
             else f"{run.final_state_rows} rows after the last batch")
    return f"fewer rows than distinct orders ({len(run.produced)}): old order ids forgotten", found


# --------------------------------------------------------------------------- exercise 4

WATERMARK_FN = "watermark_of is a function of a trial"


def check_watermark(checks, fn: Callable, result: Callable) -> None:
    """Exercise 4: ``watermark_of(result)``, the watermark of a trial's last batch computed from its event times and
    delay: against Spark's on the trial above, and against Spark's rule on a hidden trial with another delay."""
    checks.that(WATERMARK_FN, lambda: callable(fn()), expected="def watermark_of(result): ... return a datetime",
                found=lambda: f"{fn()!r:.80} ({type(fn()).__name__})", depends_on="the query has a watermark",
                hint="Define a function that takes a trial's result and returns its watermark; do not call it here.")
    runs = hidden.Runs(f"{LAB}:watermark", shown=result, hidden=hidden_runs.trial_times)
    checks.on_runs("your watermark is the one Spark used in the last batch", fn, runs, _judge_watermark,
                   depends_on=WATERMARK_FN,
                   hint="Start from the largest event time the query read (result.event_times, in any order), not the "
                        "clock on the wall, and subtract the trial's delay (result.delay).")


def _judge_watermark(fn, run):
    right = run.watermark if run.history else max(parse_time(t) for t in run.event_times) - run.delay
    answer = fn(run)
    if answer is None:
        return iso(right), "None (the hidden trial carries its event times and delay, no report from Spark)"
    found = parse_time(answer)
    return None if found == right else (iso(right), iso(found))

