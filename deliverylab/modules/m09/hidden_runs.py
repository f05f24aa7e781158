"""Lab 09's hidden runs (checks/hidden.py): what each exercise is judged on besides the run shown.

    retried_tasks(rng)          exercise 1: a batch the learner has not seen, as the notify UDF would call the key in
                                it: a topic with more partitions and partitions holding more than a thousand records
                                (the demo's has two of about a hundred), order ids past o-000999, and tasks of which
                                some (not all) died after a few notifications and ran again, one of them twice
    notify_retried(spec, key)   those calls made on a real Outbox (in a folder of its own): every attempt of every
                                task sends its rows' notifications with the learner's key, a killed attempt only its
                                first rows; then the deliveries reconciled, and what went wrong named
    leader_kill(rng)            exercise 2: which partition's leader is killed, and after how many orders

The first is played in the notebook's kernel, without the cluster: the key function gets the same ``call`` dict
the UDF gives it on an executor. Each builder holds its hazard for every seed (tests/modules/test_m09_lab.py).
"""
from __future__ import annotations

import random
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Callable

from ... import ledger
from .executors import Outbox, reconcile_outbox

#: The exercise's own run: two partitions of about a hundred records (200 orders).
SHOWN_PARTITIONS = 2


@dataclass
class Task:
    """One task of the hidden batch: its Kafka partition's records, and how many rows each attempt sent before
    it died (the last attempt sends them all)."""

    partition: int
    records: list = field(default_factory=list)   # (offset, order id)
    died_after: list = field(default_factory=list)  # rows sent by each attempt that was killed, in order


@dataclass
class RetriedBatch:
    produced: list
    tasks: list


def retried_tasks(rng: random.Random) -> RetriedBatch:
    """A hidden batch of a topic that has been running for a while: its older records were deleted (retention), so
    partitions start at other offsets, partition 0's past 1000, and partition 1c (11 to 15) has records too. So

    * ``partition * 1000 + offset`` repeats: (0, 1000 + x) and (1, x) are both there, and ``partition * 200 +
      offset`` (200, the orders of the run shown): (a, 200 + z) and (a + 1, z) are both there;
    * the two numbers written side by side repeat: (1, c*100 + y) and (1c, y) both read ``1c y``;
    * the last three digits of an order id repeat: o-000042 and o-001042 are both there (ids go past o-000999);

    and at least one task, not always every one, was killed after a few notifications, one of them twice."""
    from ...orders import generate_orders

    c = rng.randint(1, 5)
    ones = range(10, 10 + rng.randint(3, 8))                                     # partition 1c
    first = c * 100 + ones.start - rng.randint(0, 10)                            # partition 1 holds c*100 + y
    offsets = {1: range(first, c * 100 + ones.stop + rng.randint(5, 30)), 10 + c: ones}
    offsets[0] = range(1000 + first - rng.randint(0, 20), 1000 + first + rng.randint(10, 30))
    a = rng.randint(2, 8)                                                        # (a, 200 + z) and (a + 1, z)
    z, width = rng.randint(0, 3000), rng.randint(15, 30)
    offsets.update({a: range(z + 200, z + 200 + width), a + 1: range(z, z + width)})
    overlap = rng.choice([p for p in range(2, 10) if p not in (a, a + 1)])       # offsets shared with partition 1
    offsets[overlap] = range(first + rng.randint(0, 5), first + rng.randint(20, 35))
    total = sum(len(r) for r in offsets.values())
    twins = rng.sample(range(1000), 3)                                           # o-000nnn and o-001nnn
    numbers = {number for t in twins for number in (t, t + 1000)}
    while len(numbers) < total:
        numbers.add(rng.randrange(3000))
    numbers = sorted(numbers)
    rng.shuffle(numbers)
    seed = rng.randint(1, 10**6)
    produced = [generate_orders(1, seed=seed, start=n)[0] for n in numbers]
    tasks, at = [], 0
    for p in sorted(offsets):
        tasks.append(Task(p, [(offset, produced[at + i]["order_id"]) for i, offset in enumerate(offsets[p])]))
        at += len(offsets[p])
    killed = [t for t in tasks if rng.random() < 0.5] or [rng.choice(tasks)]
    for task in killed:
        task.died_after = [rng.randint(1, len(task.records) - 1)]
    twice = rng.choice(killed)
    twice.died_after.append(rng.randint(1, len(twice.records) - 1))  # killed twice
    return RetriedBatch(produced, tasks)


@dataclass
class Notified:
    """What the hidden batch's notifications came to: the deliveries reconciled, and the first key shared by two
    orders or changed between two attempts of one record (None when there is none)."""

    notified: ledger.Ledger
    shared: str | None = None
    changed: str | None = None


def notify_retried(batch: RetriedBatch, key: Callable) -> Notified:
    """Send the batch's notifications through a real Outbox (a temporary folder), as the notify UDF does: every
    attempt of every task calls ``key(call)`` for each row it reaches, with ``call`` the UDF's dict."""
    folder = tempfile.mkdtemp(prefix="deliverylab-hidden-outbox-")
    try:
        outbox, owner, first_key, found = Outbox(folder), {}, {}, Notified(None)
        for task in batch.tasks:
            for attempt, rows in enumerate([*task.died_after, len(task.records)]):
                for offset, order_id in task.records[:rows]:
                    call = {"order_id": order_id, "partition": task.partition, "offset": offset, "attempt": attempt}
                    made = key(dict(call))
                    text = str(made)
                    where = (task.partition, offset)
                    if owner.setdefault(text, order_id) != order_id and found.shared is None:
                        found.shared = (f"{owner[text]} and {order_id} got the same key {_short(made)}")
                    if first_key.setdefault(where, text) != text and found.changed is None:
                        found.changed = (f"{order_id} (partition {task.partition}, offset {offset}) got key "
                                         f"{_short(first_key[where])} in attempt 0 and {_short(made)} in attempt {attempt}")
                    outbox.send(order_id, attempt, made)
        found.notified = reconcile_outbox(batch.produced, outbox)
        return found
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _short(value, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def leader_kill(rng: random.Random, count: int = 400) -> dict:
    """Exercise 2's hidden run: the leader of which partition is killed, and after how many of ``count`` orders."""
    return {"partition": rng.choice([0, 1]), "kill_after": rng.randint(count // 4, 3 * count // 4)}
