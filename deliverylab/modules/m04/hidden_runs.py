"""The runs lab 04 judges an answer on besides the one the learner watched (checks/hidden.py).

Each is built from a ``random.Random`` seeded with the exercise's seed, so one seed always gives the
same run, and each holds, for every seed, the case that tells a right answer from a wrong one:

    Pipeline          exercise 1: the lab's pipeline (crashlab's), whose crash sends the records that make a
                      batch run as a retrying producer does: in each partition the first order twice, and
                      0-2 others drawn from the seed, so the batch that crashes begins, in any partition
                      it reads, with an order and its retried copy. The learner's own crash is the hidden
                      run (no second crash: a crash costs a driver's boot at the restart); exercise 2 then
                      reads a sink where orders are both producer retries and replays
    replayed_topic    exercise 2: offsets per order id and rows per order id after a crash (pure): one
                      retried order has both its records in the replayed batch (4 rows), one has only its
                      first (3 rows), others none (2 rows)
    trial_plan        exercise 3: a trial topic of one partition (pure plan, then hidden_trial runs it in
                      the notebook's Spark): other orders, other event times, another batch size; from the
                      third micro-batch on, each holds an order 35-45 s behind the watermark's base for late
                      rows (Spark drops a row as late against the previous batch's watermark: the latest
                      event time up to two batches back, minus the delay), so a delay of 1 minute keeps
                      them and one of 35 s or less drops them; and a retried copy sits in the micro-batch
                      after its original
    trial_times       exercise 4: a trial's event times and its delay (pure): another delay than 1 minute,
                      and the latest event time is neither the first record nor the last
"""
from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from types import SimpleNamespace

from ...crashlab import Pipeline as _Pipeline
from ...orders import EPOCH, order_id
from .watermarks import iso

# --------------------------------------------------------------------------- exercise 1 (real)

EXERCISE_1 = "04-at-least-once-lab:crash"


class Pipeline(_Pipeline):
    """crashlab.Pipeline, except that :meth:`crash` sends its orders as a producer whose replies get lost: some
    twice (which, from the exercise's seed, ``seed_drawn``). ``produced`` keeps each order once (the truth)."""

    def __init__(self, *args, **kwargs):
        from ...checks import hidden

        super().__init__(*args, **kwargs)
        self.seed_drawn = hidden.seed_for(EXERCISE_1)

    def crash(self, point: str, batch: int | None = None, orders: int = 500):
        """As crashlab's: arm a crash at ``point`` (for ``batch``), send about ``orders`` records, wait for the crash.
        Some orders are written twice, the same record again right after it, as a retried send writes it: in each
        partition its first order (so the batch that crashes, whichever partition's records it reads, begins there
        with an order and its copy), and 0-2 others; the others sent once. One request, as crashlab's crash sends
        them, so the crashed batch holds as many records as it would without the copies."""
        from ...crashlab.crashpoints import CRASH_NOW
        from ...orders import generate_orders, produce
        from ...stack import kafka
        from .retries import copy_of

        if point == CRASH_NOW or not orders:
            return super().crash(point, batch, orders)
        rng = random.Random(self.seed_drawn + len(self.crashes))
        partitions = len(kafka.end_offsets(self.lesson.bootstrap, self.topic)) or 1
        extra = rng.randint(0, 2)
        sent = generate_orders(max(1, orders - partitions - extra), seed=self.seed, start=len(self.produced))
        firsts: dict[int, int] = {}
        for i, order in enumerate(sent):
            firsts.setdefault(partition_of(order["order_id"], partitions), i)
        others = [i for i in range(len(sent)) if i not in firsts.values()]
        twice = {*firsts.values(), *rng.sample(others, min(extra, len(others)))}
        records = [r for i, o in enumerate(sent) for r in ([o, copy_of(o)] if i in twice else [o])]
        self.arm(point, batch)
        self.produced.extend(sent)  # once each: the truth the ledger reconciles against
        produce(self.lesson.bootstrap, self.topic, records, progress=False)
        crash = self.wait_for_crash(point)
        self.crashes.append(crash)
        self._changed()
        return crash


def partition_of(order_id: str, partitions: int) -> int:
    """The partition the course's producers write an order to (kafka-python's default partitioner: its key's
    murmur2 hash)."""
    from kafka.partitioner.default import murmur2

    return (murmur2(order_id.encode()) & 0x7FFFFFFF) % partitions


def outcome(pipe, crash) -> SimpleNamespace:
    """What a crash left, read back: the crashed batch's order ids (one per record), offsets and rows per id."""
    from .duplicates import topic_offsets

    batch = pipe.batch_orders(crash.batch, crash.run) if crash.batch is not None else []
    return SimpleNamespace(crash=crash, batch=batch, ledger=pipe.ledger(),
                           offsets=topic_offsets(pipe.lesson.bootstrap, pipe.topic))


# --------------------------------------------------------------------------- exercise 2 (pure)


def replayed_topic(rng: random.Random) -> SimpleNamespace:
    """A two-partition topic and its at-least-once sink after one batch was replayed.

    Partition 0 holds, in offset order: orders, a retried pair (two offsets) outside the batch, then the replayed
    batch with a retried pair inside it and a retried order whose copy falls just after the batch, then more
    orders. Partition 1 is random, its share of the batch too. ``offsets``: order id -> [(partition, offset)];
    ``copies``: order id -> rows in the sink (each record once, the batch's records twice)."""
    ids = iter(order_id(n) for n in rng.sample(range(1000, 9999), 200))

    def singles(k):
        return [next(ids) for _ in range(k)]

    def pair():
        one = next(ids)
        return [one, one]

    edge = next(ids)
    p0_before = singles(rng.randint(1, 4)) + pair() + singles(rng.randint(0, 3))
    p0_batch = singles(rng.randint(1, 3)) + pair() + singles(rng.randint(0, 3)) + [edge]
    p0_after = [edge] + singles(rng.randint(0, 3)) + (pair() if rng.random() < 0.5 else [])
    p1 = []
    for _ in range(rng.randint(4, 12)):
        p1 += pair() if rng.random() < 0.2 else singles(1)
    start = rng.randint(0, len(p1) - 1)
    end = rng.randint(start + 1, len(p1))
    layout = {0: (p0_before + p0_batch + p0_after, len(p0_before), len(p0_before) + len(p0_batch)),
              1: (p1, start, end)}
    offsets: dict = {}
    copies: Counter = Counter()
    for partition, (log, first, last) in layout.items():
        base = rng.randint(0, 500)  # a topic with a history: offsets do not begin at 0
        for n, oid in enumerate(log):
            offsets.setdefault(oid, []).append((partition, base + n))
            copies[oid] += 2 if first <= n < last else 1
    shuffled = list(offsets)
    rng.shuffle(shuffled)
    return SimpleNamespace(offsets={oid: offsets[oid] for oid in shuffled}, copies=copies)


# --------------------------------------------------------------------------- exercise 3 (plan pure, run real)


def trial_plan(rng: random.Random) -> SimpleNamespace:
    """The records of a hidden trial topic (one partition, read ``max_per_batch`` records per micro-batch): three
    micro-batches of records, the fewest that hold all of what follows (each costs the check a Spark job).

    Event times advance 3 s per order with up to 2 s of jitter. Every batch from the third on holds a new order
    35-45 s behind the latest event time of the batches before the one before it: Spark drops a row as too late
    when it is at or behind the watermark of the previous batch (the watermark for late rows lags one batch
    behind the one that evicts state), so a 1-minute delay keeps it and one of 35 s or less drops it. The last
    record of the first batch is an order whose retried copy opens the second batch; a few more orders are
    retried at once; the last record is such a late order, so it is not the latest."""
    from .watermarks import parse_time

    size = rng.randint(28, 36)  # three batches: the fewest that hold a late order (batch 2) and the no-data batch
    base = EPOCH + timedelta(days=rng.randint(20, 300), seconds=rng.randint(0, 80_000))
    first_number = rng.randint(10_000, 90_000)
    orders, records, late_in = [], [], set()

    def new_order(moment):
        number = first_number + len(orders)
        r = random.Random(number)
        orders.append({"order_id": order_id(number), "customer_id": f"c-{r.randint(1, 300):04d}",
                       "amount": f"{r.randint(500, 25_000) / 100:.2f}",
                       "status": r.choice(("placed", "paid", "shipped")), "event_time": iso(moment)})
        return orders[-1]

    def late_order(batch):  # batch >= 2: the watermark it is judged against has seen batches 0 .. batch - 2
        latest_before = max(parse_time(r["event_time"]) for r in records[: (batch - 1) * size])
        return new_order(latest_before - timedelta(seconds=rng.randint(35, 45)))

    while len(records) < 3 * size - 1:
        position = len(records)
        batch = position // size
        if batch >= 2 and batch not in late_in:
            late_in.add(batch)
            records.append(late_order(batch))
            continue
        order = new_order(base + timedelta(seconds=3 * len(orders) + rng.randint(0, 2)))
        if position == size - 1 or (position % size < size - 2 and rng.random() < 0.06):
            records += [order, dict(order)]  # a retry: the same record again, right after it
        else:
            records.append(order)
    records.append(late_order(len(records) // size))
    return SimpleNamespace(orders=orders, records=records, max_per_batch=size, tag=rng.randrange(10**6))


def hidden_trial(dedupe, lesson, rng: random.Random):
    """Run ``dedupe`` over the topic of :func:`trial_plan` (made once per seed, one partition) in the notebook's
    Spark, as trial.run runs it over the trial topic."""
    from ...orders import produce
    from ...stack import kafka
    from . import trial

    plan = trial_plan(rng)
    topic = lesson.topic(f"trial-late-{plan.tag}")
    if kafka.count_records(lesson.bootstrap, topic) != len(plan.records):
        kafka.delete_topics(lesson.bootstrap, [topic])
        kafka.ensure_topic(lesson.bootstrap, topic, partitions=1)
        produce(lesson.bootstrap, topic, plan.records, progress=False)
    return trial.run(dedupe, lesson, topic=topic, orders=plan.orders, max_per_batch=plan.max_per_batch)


# --------------------------------------------------------------------------- exercise 4 (pure)

#: Delays of the hidden trials of exercise 4: never the 1 minute of the trial above.
DELAYS = (20, 30, 45, 90, 120, 150, 300)


def trial_times(rng: random.Random):
    """A trial's event times (in the order the query read them) and its delay; the watermark of its last batch is
    the latest of them minus the delay. It carries no report from Spark (``history`` is empty)."""
    from .trial import TrialResult

    n = rng.randint(40, 120)
    base = EPOCH + timedelta(days=rng.randint(20, 300), seconds=rng.randint(0, 80_000))
    moments = [base + timedelta(seconds=2 * k + rng.randint(0, 6)) for k in range(n)]
    middle = rng.randint(1, n - 2)  # the latest, alone, somewhere in the middle: never first or last
    moments[middle] = max(moments) + timedelta(seconds=rng.randint(1, 30))
    events = [iso(m) for m in moments]
    orders = [{"order_id": order_id(50_000 + k), "amount": "10.00", "event_time": t} for k, t in enumerate(events)]
    return TrialResult(produced=orders, records=n, rows=[], history=[], event_times=events,
                       delay=timedelta(seconds=rng.choice(DELAYS)))
