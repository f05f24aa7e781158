"""The runs lab 05 judges an answer on besides the one the learner watched (checks/hidden.py).

Each is built from a ``random.Random`` seeded with the exercise's seed, and holds, for every seed, the case
that tells a right answer from a wrong one:

    merge_case      exercise 2 (pure, then run once by merges.merge_twice in the notebook's Spark): the table
                    the run shown left, which holds orders (one of them updated by the batch, one not touched
                    by it), and a batch in which each customer has several orders and some orders several
                    events, the latest of which is neither the last row nor the first by status
    replay_writer   exercises 1 and 3 (real, in the notebook's Spark): the learner's writer run on a topic of
                    its own (another number of orders than the run shown), which its first batch reads whole;
                    once that batch is written and committed, the query is stopped and the batch's commits/N
                    deleted, which is what a crash after the sink's write (after the learner's COMMIT) and
                    before Spark's commit leaves on disk, and the query runs again from its checkpoint: Spark
                    runs the batch again on a sink that holds all of it. No driver is killed, so no driver
                    boots: a second crash in a driver process of its own would cost a driver's boot
                    (crashlab/drivers.py), more than the check's whole budget
"""
from __future__ import annotations

import itertools
import random
from datetime import datetime, timedelta
from types import SimpleNamespace

STATUSES = ("placed", "paid", "shipped")
_names = itertools.count(1)


# --------------------------------------------------------------------------- exercise 2 (pure)


#: The table the run shown leaves (lab.SHOWN_EXPECTED): o-1 paid (its latest of two events), o-2 placed.
SHOWN_TABLE = [("o-1", "c-1", "10.00", "paid", "2026-01-01T00:00:05"),
               ("o-2", "c-2", "20.00", "placed", "2026-01-01T00:00:01")]


def merge_case(rng: random.Random, target: list[tuple] = SHOWN_TABLE) -> SimpleNamespace:
    """``target``: the events already in the table (one per order; the table the run shown leaves, which the hidden
    run copies instead of writing a table of its own); ``batch``: the events to MERGE; ``expected``: each order's
    status afterwards (its latest event). Tuples as merges.events takes them.

    The batch moves one target order on (which, from the seed) and leaves the other alone; each target customer
    gets 1-2 new orders, some with several events, so each customer has several orders; one new order is placed
    then paid (the status order sorts the other way). Event times are later than the target's, all different."""
    start = datetime(2026, rng.randint(2, 11), rng.randint(1, 28), rng.randint(0, 20))
    numbers = iter(rng.sample(range(100, 999), 20))
    clock = itertools.count(rng.randint(0, 50), rng.randint(3, 9))

    def event(order, customer, amount, status):
        return (order, customer, amount, status, (start + timedelta(seconds=next(clock))).isoformat())

    def order():
        return f"o-{next(numbers)}", f"{rng.randint(500, 25_000) / 100:.2f}"

    batch, expected = [], {row[0]: row[3] for row in target}
    moved = rng.choice(target)
    newest = rng.choice([s for s in ("paid", "shipped") if s != moved[3]])
    batch.append(event(moved[0], moved[1], moved[2], newest))
    expected[moved[0]] = newest
    customers = [row[1] for row in target]
    for customer in customers:  # each customer: new orders besides the one in the table
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
    return SimpleNamespace(target=list(target), batch=batch, expected=expected)


def run_merge_case(trial, case, spark=None):
    """The learner's MERGE of ``trial`` (a merges.MergeTrial) run once on ``case``, on a copy of the table the run
    shown left (a folder copy: no Spark job), the orders in it as they stand there (``trial.statuses``). Once: the run
    shown already replays the MERGE, and this first run is itself a MERGE into rows that are there (what a replay
    meets), so a second run would add a Spark job and a read, not a case."""
    from ...stack.session import get_spark
    from . import merges

    spark = spark or get_spark()
    found = merges.merge_twice(spark, trial.merge, merges.events(spark, case.batch), f"{trial.path}_hidden",
                               copy_of=trial.path, replay=False)
    return found


# --------------------------------------------------------------------------- exercises 1 and 3 (real)

#: How long one run of the learner's query may take to read the hidden topic.
REPLAY_TIMEOUT_S = 90


def replay_writer(pipe, point: str, rng: random.Random) -> SimpleNamespace:
    """The learner's pipeline function of ``pipe`` run on a hidden topic in the notebook's Spark (a session of its
    own), its first batch written, then run again as after a crash at ``point`` (after_sink_write: commits/N of
    that batch deleted). Returns ``pipe`` (``failure``: why the learner's query stopped, in one line, or None;
    ``ledger()``) and the ledger, read once."""
    from pathlib import Path

    from ... import checkpoint
    from ...crashlab import sinks, variants
    from ...orders import produce_orders
    from ...sparkerrors import quiet_error_log
    from ...stack import kafka
    from ...stack.session import get_spark

    if point != "after_sink_write":
        raise ValueError(f"a replay is made for after_sink_write only, not {point!r}")
    lesson, kind = pipe.lesson, pipe.sink_kind
    orders = rng.randint(40, 150)
    name = f"{pipe.name}_hidden{rng.randrange(10**6)}_{next(_names)}"
    topic = lesson.topic(f"{name}-orders")
    kafka.ensure_topic(lesson.bootstrap, topic)
    produced = produce_orders(lesson.bootstrap, topic, orders, seed=rng.randint(1, 10**6), progress=False)
    sink = sinks.SINKS[kind].location_for(lesson, name)
    out = variants.Outputs(sink=sink, checkpoint=lesson.checkpoint(name), bootstrap=lesson.bootstrap,
                           app_id=f"{lesson.topic_prefix}{name}")
    folder = Path(lesson.path("pipelines", name))
    folder.mkdir(parents=True, exist_ok=True)
    code = folder / "pipeline_code.py"  # the learner's function as its driver runs it: self-contained
    code.write_text(variants.custom_source(pipe.variant.start))
    variant = variants.load_custom(str(code), pipe.variant.start.__name__, {"sink_kind": kind})
    spark = get_spark().newSession()  # the learner's session settings stay out of the notebook's
    sinks.sink(kind, sink, lesson.bootstrap).prepare(spark)
    failure = None
    with quiet_error_log():
        for run in (1, 2):
            stream = variants.read_orders(spark, lesson.bootstrap, topic, max_per_batch=rng.choice((orders, 500)),
                                          min_partitions=2)
            failure = _run_until_caught_up(lambda: variant.start(stream, out), out.checkpoint, topic, lesson.bootstrap)
            if failure is not None:
                break
            if run == 1:  # the first batch read every order: delete its commit, as the crash would have
                last = max(checkpoint.batch_ids(out.checkpoint)[1])
                for f in (Path(out.checkpoint) / "commits" / str(last), Path(out.checkpoint) / "commits" / f".{last}.crc"):
                    f.unlink(missing_ok=True)
    found = None if failure else ledger_of(produced, sinks.sink(kind, sink, lesson.bootstrap).rows(spark))
    return SimpleNamespace(pipe=SimpleNamespace(failure=failure, ledger=lambda: found), ledger=found)


def ledger_of(produced, rows):
    from ... import ledger

    return ledger.reconcile(produced, rows, label="hidden run")


def _run_until_caught_up(start, ckpt: str, topic: str, bootstrap: str) -> str | None:
    """Start the learner's query, wait until its commits cover the topic, stop it. None, or why it did not, in one
    line (its exception, a query that ended by itself, one that never wrote its checkpoint)."""
    import time

    from ... import checkpoint
    from ...crashlab.record import failure_line
    from ...stack import kafka

    try:
        query = start()
    except Exception as error:  # noqa: BLE001 - the learner's code: any error is the answer to report
        return failure_line(f"{type(error).__name__}: {error}")
    if not hasattr(query, "isActive"):
        return f"your function returned {type(query).__name__}, not the started query"
    end = kafka.end_offsets(bootstrap, topic)
    deadline = time.monotonic() + REPLAY_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            done = checkpoint.done_offsets(ckpt, topic)
            if all(done.get(p, -1) >= e for p, e in end.items()):
                return None
            if not query.isActive:
                error = query.exception()
                return failure_line(str(error)) if error is not None else "your query ended by itself"
            time.sleep(0.05)
        return (f"your query did not commit the hidden topic's orders within {REPLAY_TIMEOUT_S} s "
                f"(is it checkpointed at out.checkpoint?)")
    finally:
        query.stop()
