"""Lab 03's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Every answer is passed as a lambda, so a check whose exercise is not done yet says SKIP.
Exercise 3 runs the learner's query for real (``stop_and_restart``); its checks only read
the result, so tests can give them planted results as well as real runs.
"""
from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Callable

from ... import ledger as ledgers
from ...config import CourseError

# --------------------------------------------------------------------------- exercise 1


def check_loss_while_down(checks, pipe: Callable, while_down: Callable, amo: Callable) -> None:
    """Exercise 1: the at-most-once pipeline, crashed, fed while down, restarted, reconciled."""
    checks.is_type("amo is a ledger", amo, "Ledger", hint="pipe.ledger() returns one.")
    checks.equal("the pipeline is the at_most_once variant", lambda: pipe().variant.name, "at_most_once",
                 hint="Check the second argument of crashlab.Pipeline(...).")
    checks.that("the pipeline was crashed, then restarted", lambda: bool(pipe().crashes) and pipe().starts >= 2,
                expected="at least one crash and a restart", found=lambda: f"{len(pipe().crashes)} crash(es), "
                f"{pipe().starts} start(s)", hint="pipe.crash('now'), then pipe.restart().",
                depends_on="amo is a ledger")
    ids_down = lambda: {o["order_id"] for o in while_down()}  # noqa: E731
    checks.that("orders were produced while the pipeline was down", lambda: len(ids_down()) > 0,
                expected="the orders pipe.produce(...) returned between the crash and the restart",
                found=lambda: f"{len(ids_down())} orders", hint="Keep what pipe.produce(150) returns in while_down.")
    checks.that("exactly the orders produced while it was down are lost", lambda: set(amo().lost_ids) == ids_down(),
                expected="lost ids == the ids in while_down",
                found=lambda: f"{amo().lost} lost, {len(ids_down())} produced while down",
                hint="Produce them after the crash and before the restart, and drain before reconciling. "
                     "What does a new query with startingOffsets=latest read first?",
                depends_on=["amo is a ledger", "orders were produced while the pipeline was down"])
    checks.that("nothing was written twice", lambda: amo().duplicated == 0,
                expected="0 duplicated", found=lambda: f"{amo().duplicated} duplicated",
                hint="An at-most-once pipeline never replays a batch: which variant did you crash?",
                depends_on="amo is a ledger")


# --------------------------------------------------------------------------- exercise 2


def _money(value) -> Decimal | None:
    try:
        return ledgers.to_amount(value)
    except CourseError:
        return None


def check_missing_revenue(checks, lost_ids: Callable, missing: Callable, produced: Callable, rows: Callable) -> None:
    """Exercise 2: the lost orders and their revenue, worked out from the producer's list and the sink's rows."""
    truth = lambda: ledgers.reconcile(produced(), rows())  # noqa: E731
    checks.that("lost_ids holds the ids produced but not in the sink", lambda: set(lost_ids()) == set(truth().lost_ids),
                expected="the produced ids minus the ids in rows",
                found=lambda: f"{len(set(lost_ids()))} ids ({len(set(lost_ids()) - set(truth().lost_ids))} that "
                              "were not lost)",
                hint="Subtract in the right order: which ids did the producer send that the sink does not hold?")
    checks.that("missing is the revenue of those orders", lambda: _money(missing()) == -truth().revenue_difference,
                expected="a positive amount: the sum of the lost orders' amounts",
                found=lambda: f"missing = {missing()!r}",
                hint="Add up the amount of each lost order (pipe.produced has every order's amount); "
                     "a loss makes the observed revenue smaller, so what is missing is positive.")


# --------------------------------------------------------------------------- exercise 3


@dataclass
class RestartResult:
    """What ``stop_and_restart`` saw: the ledger, which orders came while stopped, the checkpoint's use."""
    ledger: object
    while_down: list = field(default_factory=list)
    used_checkpoint: bool = False


_attempts = itertools.count(1)


def stop_and_restart(start_query: Callable, lesson, before: int = 60, while_down: int = 40, after: int = 30):
    """Run ``start_query(topic, checkpoint_dir, keep)`` on a new topic: orders, a clean stop, orders while
    stopped, a restart with the same arguments, more orders. Returns a :class:`RestartResult`."""
    from ...orders import produce_orders
    from ...stack import kafka
    from ...stack.session import get_spark
    from ...streams import wait_for_batches

    get_spark()
    n = next(_attempts)
    topic, ckpt = lesson.topic(f"keeper-{n}"), lesson.checkpoint(f"keeper-{n}")
    kafka.ensure_topic(lesson.bootstrap, topic)
    received: list = []

    def keep(batch, batch_id):
        received.extend((r.order_id, r.amount) for r in _orders_of(batch).collect())

    def run(count: int, start: int) -> list[dict]:
        query = start_query(topic, ckpt, keep)
        if not (hasattr(query, "processAllAvailable") and hasattr(query, "stop")):
            raise CourseError(f"start_query returned {type(query).__name__}; it must return the StreamingQuery "
                              "that writeStream...start() gives.")
        try:
            wait_for_batches(query, 1)  # the query has fixed where it starts
            sent = produce_orders(lesson.bootstrap, topic, count, start=start, progress=False)
            query.processAllAvailable()
        finally:
            query.stop()
        return sent

    first = run(before, 0)
    used = (Path(ckpt) / "offsets").is_dir()
    down = produce_orders(lesson.bootstrap, topic, while_down, start=before, progress=False)
    second = run(after, before + while_down)
    return RestartResult(ledgers.reconcile(first + down + second, received, label="start_query"),
                         [o["order_id"] for o in down], used)


def _orders_of(batch):
    """order_id and amount of a batch: the learner's parsed columns, or parsed here from Kafka's value."""
    if {"order_id", "amount"} <= set(batch.columns):
        return batch.select("order_id", "amount")
    if "value" in batch.columns:
        from pyspark.sql import functions as F

        from ...orders import ORDER_SCHEMA

        return (batch.select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"))
                .select("o.order_id", "o.amount"))
    raise CourseError(f"keep() got columns {batch.columns}: hand it the orders with order_id and amount "
                      "(or Kafka's value column).")


def check_keeps_place(checks, start_query: Callable, experiment: Callable) -> None:
    """Exercise 3: a query that neither loses what arrives while it is stopped nor reads anything twice.

    ``experiment(start_query)`` runs it (the lab passes ``lambda f: stop_and_restart(f, lesson)``) once,
    on first use.
    """
    cache: dict = {}

    def result() -> RestartResult:
        if "value" not in cache:
            cache["value"] = experiment(start_query())
        return cache["value"]

    checks.that("start_query takes (topic, checkpoint_dir, keep)",
                lambda: callable(start_query()) and len(inspect.signature(start_query()).parameters) == 3,
                expected="a function of three arguments", found=lambda: repr(start_query()),
                hint="def start_query(topic, checkpoint_dir, keep): ... return the started query.")
    checks.that("its query keeps its progress in checkpoint_dir", lambda: result().used_checkpoint,
                expected="offsets/ in the checkpoint_dir the check passed",
                found="no offsets/ there: Spark kept its progress somewhere else, or nowhere",
                hint="Which writeStream option names the folder where a query keeps its progress?",
                depends_on="start_query takes (topic, checkpoint_dir, keep)")
    checks.that("no order produced while it was stopped is lost", lambda: result().ledger.lost == 0,
                expected="0 lost", found=lambda: f"{result().ledger.lost} lost "
                f"({len(set(result().ledger.lost_ids) & set(result().while_down))} of them produced while stopped)",
                hint="A restarted query must carry on from where it stopped, not from the end of the topic.",
                depends_on="start_query takes (topic, checkpoint_dir, keep)")
    checks.that("no order is delivered twice", lambda: result().ledger.duplicated == 0,
                expected="0 duplicated", found=lambda: f"{result().ledger.duplicated} duplicated",
                hint="Reading from earliest is not enough on its own: what tells the restart which orders it "
                     "already handed to keep?",
                depends_on="start_query takes (topic, checkpoint_dir, keep)")


# --------------------------------------------------------------------------- exercise 4

#: The use cases of exercise 4, by name.
USE_CASES = {
    "freezer_screen": "a wall screen showing the latest reading of each freezer thermometer, refreshed every second",
    "click_heatmap": "a heatmap of where visitors click, drawn from a sample of click events",
    "card_payments": "card payments to be settled with the bank",
    "credit_audit": "the audit trail of who changed a customer's credit limit",
    "invoiced_orders": "orders that become invoices and stock reservations",
}
#: Where losing a record now and then is a price one can choose to pay: the next reading replaces a lost
#: one, or a sample stays a sample. Everywhere else a lost record is wrong for good.
_ACCEPTABLE = {"freezer_screen", "click_heatmap"}


def check_acceptable(checks, acceptable: Callable) -> None:
    """Exercise 4: the names of the use cases where at-most-once is good enough."""
    checks.that("acceptable is a set of use-case names", lambda: isinstance(acceptable(), (set, frozenset, list, tuple))
                and set(acceptable()) <= set(USE_CASES),
                expected=f"a set of names from {', '.join(USE_CASES)}",
                found=lambda: repr(acceptable()),
                hint="A set of names, spelt exactly as the keys of lab.USE_CASES.")
    checks.that("no use case that can never lose a record is in it", lambda: not set(acceptable()) - _ACCEPTABLE,
                expected="only use cases where a lost record does no lasting harm",
                found=lambda: f"{len(set(acceptable()) - _ACCEPTABLE)} that cannot afford a loss",
                hint="Ask of each: if one record silently vanished, would money, a promise to someone or a record "
                     "you must keep be wrong for good?",
                depends_on="acceptable is a set of use-case names")
    checks.that("every use case that can afford a loss is in it", lambda: not _ACCEPTABLE - set(acceptable()),
                expected="every use case where the next record makes up for a lost one",
                found=lambda: f"{len(_ACCEPTABLE - set(acceptable()))} missing",
                hint="A reading that the next one replaces, or a sample that is a sample anyway, can afford a gap.",
                depends_on="acceptable is a set of use-case names")
