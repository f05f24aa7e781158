"""The runs lab 10 judges an answer on besides the one the learner watched (checks/hidden.py).

Each is built from a ``random.Random`` seeded with the exercise's seed, and holds, for every seed, the cases
that tell a right answer from a wrong one:

    writer_case / replay_writer   exercise 1 (real, in the notebook's Spark): your writer redeployed on the
        table the run shown left, with a new checkpoint where the old one was (a new query id, the same batch
        numbers, the same folder), on a topic of its own (another number of orders, another batch size). In
        a batch drawn from the seed (the first one included) the lab crashes it right after the first Iceberg
        commit your function makes (scenarios.Trap), then 1-3 other commits land on the table before the
        restart, so the batch's commit is no longer the newest snapshot. Then a second part: a few more orders
        in one batch, the query crashed after that batch's write, the table rolled back to the snapshot
        before it (an operator undoing a load; the batch's snapshot is still listed in `<table>.snapshots`
        but is no longer an ancestor), and the restart: the replay must write that batch again.
    plan_case / expire_plan       exercise 2 (real): Iceberg's streaming sink on a topic of its own (another
        number of orders and batch size) crashed after its commit of its last batch; then 2-3 commits of
        another writer and one batch of another streaming query (its own query id in its summary), in an
        order drawn from the seed; then your plan; then the sink's replay.
"""
from __future__ import annotations

import itertools
import random
import shutil
from types import SimpleNamespace

from . import scenarios
from .scenarios import Trap, marks, snapshot_ids
from . import tables

_names = itertools.count(1)


# --------------------------------------------------------------------------- exercise 1


def writer_case(rng: random.Random) -> SimpleNamespace:
    """Sizes, the crashed batch (one with orders in it), the other writer's commits, the second part's orders."""
    per_batch = rng.choice((15, 20, 25, 30))
    orders = rng.randint(3 * per_batch, 5 * per_batch)
    return SimpleNamespace(orders=orders, per_batch=per_batch, batch=rng.randint(0, orders // per_batch - 1),
                           foreign=rng.randint(1, 3), later=rng.randint(3, per_batch), seed=rng.randint(1, 10**6))


def replay_writer(shown, rng: random.Random, spark=None) -> SimpleNamespace:
    """The two parts of exercise 1's hidden run on ``shown`` (a scenarios.WriterRun that passed): ``first`` and
    ``second`` are the ledgers after each part (the table's rows against every order sent to it, the run
    shown's included), ``failure`` why your query stopped, ``diagnosis`` what the table's snapshots say."""
    from ...stack.session import get_spark

    spark = spark or get_spark()
    case = writer_case(rng)
    lesson, writer, out = shown.lesson, shown.writer, shown.out
    folder = shown.folder
    result = SimpleNamespace(case=case, failure=None, point=None, first=None, second=None, diagnosis="",
                             second_diagnosis="")
    shutil.rmtree(out.checkpoint, ignore_errors=True)  # a redeploy: a new checkpoint where the old one was
    name = f"{folder.name}-hidden{next(_names)}"
    topic, produced = scenarios.new_topic(lesson, name, case.orders, seed=case.seed, start=10_000)
    produced = shown.produced + produced
    trap = Trap(case.batch, "after_first_commit", folder.parent, folder)
    outcome = scenarios.run(spark, lesson, writer, out, topic, case.per_batch, trap)
    result.point = trap.fired
    if outcome not in (None, "crashed") or not trap.fired:
        result.failure = outcome or f"your query never ran batch {case.batch}, where the crash was armed"
        return result
    crashed = [s for s in tables.snapshots(folder) if s.id not in trap.before]
    for n in range(case.foreign):
        scenarios.foreign_commit(spark, out.table, n)
    before_replay = snapshot_ids(folder)
    if (outcome := scenarios.run(spark, lesson, writer, out, topic, case.per_batch)) is not None:
        result.failure = outcome
        return result
    replayed = [s for s in tables.snapshots(folder) if s.id not in before_replay]
    result.first = scenarios.ledger_of(produced, scenarios.rows(folder), "hidden run")
    result.diagnosis = diagnose(result.first, case.batch, crashed, replayed[:1], result.point)
    if result.first.lost or result.first.duplicated:
        return result  # the second part judges the replay of a rolled-back batch: not met yet
    # the second part: one more batch, crashed after its write, rolled back out of the table, replayed
    from ... import checkpoint
    from ...orders import produce_orders

    base = tables.current(folder).id
    produced = produced + produce_orders(lesson.bootstrap, topic, case.later, seed=case.seed + 1, start=20_000,
                                         progress=False)
    later = checkpoint.next_batch_id(out.checkpoint)
    trap = Trap(later, "after_write", folder.parent)
    outcome = scenarios.run(spark, lesson, writer, out, topic, case.per_batch, trap)
    if outcome not in (None, "crashed"):
        result.failure = outcome
        return result
    if tables.current(folder).id != base:
        spark.sql(f"CALL {out.table.split('.', 1)[0]}.system.rollback_to_snapshot(table => '{out.table}', "
                  f"snapshot_id => {base})")
    if (outcome := scenarios.run(spark, lesson, writer, out, topic, case.per_batch)) is not None:
        result.failure = outcome
        return result
    result.second = scenarios.ledger_of(produced, scenarios.rows(folder), "hidden run")
    if result.second.lost:
        result.second_diagnosis = (f"the replay skipped batch {later}, whose rows the rollback had taken out of the "
                                   "table: its mark is on a snapshot that is listed, but no longer an ancestor")
    return result


def diagnose(found, batch: int, crashed: list, replayed: list, point: str = "after_first_commit") -> str:
    """What the table's snapshots say about why the replay of ``batch`` went wrong ('' if nothing does):
    ``crashed``, the snapshots your function committed in ``batch`` before the crash at ``point``; ``replayed``,
    the first one after the restart."""
    if found.duplicated:
        if not crashed:
            return f"your function made no commit on the table in batch {batch} before the crash"
        mine = marks(crashed[0])
        if not mine:
            return (f"the commit that wrote batch {batch} carried no mark of the batch in its summary (a mark "
                    "written after it, in another commit, table or file, died with the crash)")
        again = marks(replayed[0]) if replayed else {}
        changed = sorted(k for k in mine if k in again and again[k] != mine[k])
        if changed:
            return (f"the mark changed between runs: batch {batch}'s commit carried {changed[0]}={mine[changed[0]]}, "
                    f"its replay's {changed[0]}={again[changed[0]]}")
        if again == mine:
            return (f"the replay committed with the same mark as batch {batch}'s commit, so your check did not "
                    "find it: other commits came after it")
        return ""
    if found.lost and point == "after_first_commit" and not crashed:
        return (f"the first commit your function made in batch {batch} held none of its rows (a mark written "
                "before the data?): the crash came right after it, and the replay took the mark for the batch")
    if found.lost:
        return ("your writer skipped orders it had never written: did a mark left by the run above (an earlier "
                "checkpoint, the same batch numbers, the same folder) look like this query's?")
    return ""


# --------------------------------------------------------------------------- exercise 2


def plan_case(rng: random.Random) -> SimpleNamespace:
    """Sizes, and the commits that land after the sink's last one: 2-3 of another writer's and one batch of
    another streaming query, in an order drawn from the seed."""
    per_batch = rng.choice((15, 20, 25))
    steps = ["insert"] * rng.randint(2, 3)
    steps.insert(rng.randint(0, len(steps)), "query")
    return SimpleNamespace(orders=rng.randint(3 * per_batch, 5 * per_batch), per_batch=per_batch,
                           steps=tuple(steps), seed=rng.randint(1, 10**6))


def expire_plan(shown, rng: random.Random, spark=None):
    """Exercise 2's hidden run of the plan of ``shown`` (a scenarios.PlanRun): a scenarios.PlanRun."""
    case = plan_case(rng)
    return scenarios.expire_and_replay(shown.lesson, shown.plan, orders=case.orders, per_batch=case.per_batch,
                                       steps=case.steps, seed=case.seed, spark=spark)
