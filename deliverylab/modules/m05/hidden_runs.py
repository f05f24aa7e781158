"""The runs lab 05 judges an answer on besides the one the learner watched (checks/hidden.py).

Each is built from a ``random.Random`` seeded with the exercise's seed, and holds, for every seed, the case
that tells a right answer from a wrong one:

    merge_case      exercise 2 (pure, then run by merges.merge_twice in the notebook's Spark): a table that
                    already holds orders (one of them updated by the batch, one not touched by it), and a batch
                    in which each customer has several orders and some orders several events, the latest of
                    which is neither the last row nor the first by status
    crash_writer    exercises 1 and 3 (real): the learner's writer as a pipeline of its own, crashed after its
                    write and before commits/N in its first batch of orders (scenarios.crash_first_batch), with
                    another number of orders and batch size than the run shown; its first start takes the driver
                    the run shown stopped cleanly (crashlab/drivers.py), so only the restart boots one
"""
from __future__ import annotations

import itertools
import random
from datetime import datetime, timedelta
from types import SimpleNamespace

STATUSES = ("placed", "paid", "shipped")
_names = itertools.count(1)


# --------------------------------------------------------------------------- exercise 2 (pure)


def merge_case(rng: random.Random) -> SimpleNamespace:
    """``target``: the events already in the table (one per order); ``batch``: the events to MERGE; ``expected``:
    each order's status afterwards (its latest event). Tuples as merges.events takes them."""
    start = datetime(2026, rng.randint(2, 11), rng.randint(1, 28), rng.randint(0, 20))
    numbers = iter(rng.sample(range(100, 999), 20))
    customers = [f"c-{n:04d}" for n in rng.sample(range(1, 300), 2)]
    clock = itertools.count(rng.randint(0, 50), rng.randint(3, 9))

    def event(order, customer, amount, status):
        return (order, customer, amount, status, (start + timedelta(seconds=next(clock))).isoformat())

    def order():
        return f"o-{next(numbers)}", f"{rng.randint(500, 25_000) / 100:.2f}"

    target, batch, expected = [], [], {}
    for customer in customers:  # each customer: an order the batch does not touch, one it moves on, new ones
        kept, moved = order(), order()
        status = rng.choice(STATUSES)
        target.append(event(kept[0], customer, kept[1], status))
        expected[kept[0]] = status
        target.append(event(moved[0], customer, moved[1], "placed"))
        newest = rng.choice(("paid", "shipped"))
        batch.append(event(moved[0], customer, moved[1], newest))
        expected[moved[0]] = newest
        for _ in range(rng.randint(1, 2)):
            new = order()
            statuses = rng.choice([("placed", "paid"), ("paid",), ("placed", "shipped", "paid"), ("placed",)])
            for status in statuses:  # in time order: the last one listed is the latest
                batch.append(event(new[0], customer, new[1], status))
            expected[new[0]] = statuses[-1]
    two = order()  # placed, then paid: a status order that sorts the other way
    batch += [event(two[0], customers[0], two[1], "placed"), event(two[0], customers[0], two[1], "paid")]
    expected[two[0]] = "paid"
    rng.shuffle(batch)
    return SimpleNamespace(target=target, batch=batch, expected=expected)


def run_merge_case(trial, case, spark=None):
    """The learner's MERGE of ``trial`` (a merges.MergeTrial) run on ``case``, on a table of its own."""
    from ...stack.session import get_spark
    from . import merges

    spark = spark or get_spark()
    return merges.merge_twice(spark, trial.merge, merges.events(spark, case.batch), f"{trial.path}_hidden",
                              target=case.target)


# --------------------------------------------------------------------------- exercises 1 and 3 (real)


def crash_writer(pipe, point: str, rng: random.Random) -> SimpleNamespace:
    """The learner's pipeline function of ``pipe`` run as a new pipeline, crashed at ``point`` in its first batch of
    orders, restarted, drained and stopped. Returns the pipeline, the crash and the ledger, read once."""
    from .scenarios import crash_first_batch

    orders = rng.randint(40, 150)
    hidden, crash = crash_first_batch(pipe.lesson, pipe.variant.start, point, orders=orders,
                                      name=f"{pipe.name}_hidden{next(_names)}", sink=pipe.sink_kind,
                                      max_per_batch=rng.choice((orders, 2 * orders, 500)))
    return SimpleNamespace(pipe=hidden, crash=crash, ledger=None if hidden.failure else hidden.ledger())
