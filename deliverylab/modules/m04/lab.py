"""Lab 04's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Every answer is passed as a lambda, so a check whose exercise is not done yet says SKIP.
"""
from __future__ import annotations

from typing import Callable

from .duplicates import DuplicateKinds
from .trial import ORDERS
from .watermarks import iso, parse_time


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


def check_crash(checks, pipe: Callable, crash: Callable, retried: Callable) -> None:
    """Exercise 1: the plain-append pipeline, crashed after its write, restarted, with a producer retry."""
    checks.equal("the pipeline is the plain append (at_least_once)", lambda: pipe().variant.name, "at_least_once",
                 hint="Create the pipeline with crashlab.Pipeline(lesson, \"at_least_once\", ...).")
    checks.equal("the driver died after the sink write", lambda: crash().point, "after_sink_write",
                 hint="Which crash point leaves the whole batch in the sink and commits/N unwritten?")
    checks.that("at least one reply was lost, so the producer sent an order twice", lambda: len(retried().retried) > 0,
                expected="a RetryReport with retried orders", found=lambda: retried().line(),
                hint="produce_with_retries loses a reply every lose_every sends; send more orders than lose_every.")
    checks.that("the restarted pipeline has caught up with its topic",
                lambda: pipe().running and _caught_up(pipe()),
                expected="a running driver whose commits cover the whole topic",
                found=lambda: pipe().status_line(),
                hint="After the crash: pipe.restart(), then pipe.drain().",
                depends_on="the driver died after the sink write")


def _caught_up(pipe) -> bool:
    from ...stack import kafka

    done = pipe.committed_offsets()
    return all(done.get(p, -1) >= end for p, end in kafka.end_offsets(pipe.lesson.bootstrap, pipe.topic).items())


def check_duplicate_kinds(checks, source_ids: Callable, replay_ids: Callable, truth: Callable[[], DuplicateKinds]) -> None:
    """Exercise 2: the learner's two sets against duplicates.classify (``truth``) on the same pipeline."""
    checks.that("source_ids: the orders at more than one offset of the topic",
                lambda: _ids(source_ids()) == set(truth().at_source),
                expected="the order ids that the topic holds more than once",
                found=lambda: _diff(_ids(source_ids()), set(truth().at_source)),
                hint="Count offsets per order id in `offsets`: a retry is one order id at two offsets. "
                     "The sink cannot tell you this.")
    checks.that("replay_ids: the orders with more rows in the sink than records in the topic",
                lambda: _ids(replay_ids()) == set(truth().replayed),
                expected="the order ids the sink holds more often than the topic does",
                found=lambda: _diff(_ids(replay_ids()), set(truth().replayed)),
                hint="Compare copies[id] (rows in the sink) with len(offsets[id]) (records in the topic), "
                     "id by id. A retried order has two rows and two records: that is not a replay.")


def check_dedupe(checks, result: Callable) -> None:
    """Exercise 3: a trial.run of the learner's dedupe() on orders with producer retries."""
    checks.that("no order reached the sink twice", lambda: result().ledger.duplicated == 0,
                expected="0 duplicated orders", found=lambda: f"{result().ledger.duplicated} duplicated",
                hint="A retried order arrives twice, with the same order_id and the same event_time. "
                     "Which columns identify an order?")
    checks.that("no order was lost", lambda: result().ledger.lost == 0,
                expected="0 lost orders", found=lambda: f"{result().ledger.lost} lost",
                hint="Rows behind the watermark are dropped as too late; is your delay long enough for "
                     "orders that arrive a few seconds out of order?")
    checks.that("the query has a watermark", lambda: result().has_watermark,
                expected="a watermark on event_time", found=lambda: "no watermark in the query's progress",
                hint="Without a watermark nothing tells Spark when an order id can be forgotten.")
    checks.that("the dedup state lets go of old orders",
                lambda: result().final_state_rows is not None
                and result().final_state_rows < len(result().produced),
                expected=f"fewer rows than distinct orders ({ORDERS}): old order ids forgotten",
                found=lambda: ("no dedup state at all" if result().final_state_rows is None
                               else f"{result().final_state_rows} rows after the last batch"),
                hint="State is evicted only when the watermark can say a key is old: the key must include "
                     "the event-time column, or use dropDuplicatesWithinWatermark.")


def check_watermark(checks, answer: Callable, result: Callable) -> None:
    """Exercise 4: the watermark the trial's last batch used, computed from event times."""
    checks.that("your watermark is the one Spark used in the last batch",
                lambda: parse_time(answer()) == result().watermark,
                expected="the watermark Spark reported for the trial's last batch",
                found=lambda: f"{iso(parse_time(answer()))}",
                hint="Start from the largest event time the query read (result.event_times), not the "
                     "clock on the wall, and subtract the delay you gave withWatermark.",
                depends_on="the query has a watermark")
