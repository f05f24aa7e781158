"""The capstone lab's hidden runs (checks/hidden.py): what each exercise is judged on besides the run shown.

    points_of_a_pipeline(rng)    exercise 2: the crash points of a pipeline the learner has not seen: the four
                                 named points and the points of its own (inside its batch function), in another order
    crash_after_its_commit(...)  exercise 1: the learner's pipeline, restarted after its chaos run, sent a batch in
                                 which several orders share a customer and an event time, and killed the moment its
                                 sink has committed that batch, before the query has (the window between a sink's
                                 commit and whatever the batch does next, which a random kill only sometimes hits);
                                 restarted, it runs that batch again and nothing else
    history_rows(rng)            exercise 3: the history of a table the learner has not seen: a first query whose
                                 history begins after the log was cleaned up (its batch ids do not start at 0), then
                                 two queries on new checkpoints writing the table at the same time
    history_frame(spark, ...)    those rows as the DataFrame ``DeltaTable.history()`` returns (newest first)
    drawn_variants(rng)          exercise 4: the three variants the lab runs, one from each group below

Each builder holds its hazard for every seed (tests/modules/test_m08_lab.py draws hundreds).
"""
from __future__ import annotations

import os
import random
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ...config import CourseError
from ...crashlab.crashpoints import CRASH_NOW, CRASH_POINTS
from ...crashlab.variants import VARIANTS
from .audit import STREAMING_UPDATE, Version

# --------------------------------------------------------------------------- exercise 2: a pipeline's crash points


def points_of_a_pipeline(rng: random.Random) -> dict[str, str]:
    """The crash points of a pipeline that names points of its own (a variant of the crash lab's table), in
    another order than CRASH_POINTS: ``{name: what it leaves behind}``, as CRASH_POINTS is."""
    own = sorted({p: v.name for v in VARIANTS.values() for p in v.crash_points}.items())
    name, variant = rng.choice(own)
    points = [(p, text) for p, text in CRASH_POINTS.items()] + [(name, f"a crash point of {variant}'s own, "
                                                                       "inside its batch function")]
    rng.shuffle(points)
    return dict(points)


# --------------------------------------------------------------------------- exercise 1: a kill after the sink's commit

#: How long the hidden run waits for the pipeline to commit the hidden batch (a driver on a busy machine is slow).
COMMIT_TIMEOUT_S = 120


def hidden_batch(pipe, rng: random.Random) -> list[dict]:
    """Orders with new ids in which two or three share a customer AND an event time (the demo's never do)."""
    from ...orders import generate_orders

    batch = generate_orders(rng.randint(8, 16), seed=rng.randint(1, 10**6), start=len(pipe.produced))
    first, *same = rng.sample(range(len(batch)), rng.randint(2, 3))
    for i in same:
        batch[i] = {**batch[i], "customer_id": batch[first]["customer_id"], "event_time": batch[first]["event_time"]}
    return batch


def _versions(log: Path) -> set[str]:
    try:
        return {name for name in os.listdir(log) if name.endswith(".json") and name[:-5].isdigit()}
    except FileNotFoundError:
        return set()


def _wait_for_a_commit(pipe, batch: int, seen: set[str], timeout_s: float) -> str:
    """Poll (every 2 ms) until the sink's Delta log has a new version, or the query has committed ``batch``
    (a pipeline whose sink keeps no Delta log at out.sink); return which came first."""
    log, committed = Path(pipe.sink) / "_delta_log", Path(pipe.checkpoint) / "commits" / str(batch)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _versions(log) - seen:
            return "sink"
        if committed.exists():
            return "query"
        if not pipe.running:
            pipe._raise_if_failed()
            raise CourseError(f"Your pipeline's driver ended by itself (exit {pipe.returncode}) before it wrote the "
                              "hidden batch.")
        time.sleep(0.002)
    raise CourseError(f"Your pipeline did not commit a batch within {timeout_s:.0f} s of the hidden run's orders.")


def crash_after_its_commit(pipe, rng: random.Random, timeout_s: float = COMMIT_TIMEOUT_S):
    """The hidden run of the chaos check, on the pipeline the chaos run kept: restart it, send it
    :func:`hidden_batch`, SIGKILL its driver as soon as its sink has committed that batch (before the query's
    commits/N), restart it, let it catch up (the batch it runs again is the only one: the chaos run had orders
    produced while the driver was down after every crash already), and reconcile everything produced (the chaos
    run's orders too). Returns the ledger; raises the pipeline's failure as one line.

    Both restarts need a driver booted for them (a restart never reuses one): both start booting at once, so the
    one after the kill is ready by then instead of booting while the pipeline waits."""
    from ...crashlab import drivers
    from ...crashlab.record import failure_kept

    with failure_kept(pipe):
        if not pipe.running:
            drivers.warm_up(2)  # this restart's driver and the next one's
            drivers.warm_up(1)  # later crashes boot one at a time again
            pipe.restart()
        pipe.drain()
        drivers.pool().fill()  # the restart after the kill: booting already, unless the pipeline was running
        seen, batch = _versions(Path(pipe.sink) / "_delta_log"), pipe.next_batch_id()
        pipe.send(hidden_batch(pipe, rng))
        _wait_for_a_commit(pipe, batch, seen, timeout_s)
        pipe.crash(CRASH_NOW)
        pipe.restart()
        pipe.drain()
    drivers.pool().fill()  # a standby for the redeploy that follows in the lab
    if pipe.failure:
        raise CourseError(pipe.failure)
    return pipe.ledger()


# --------------------------------------------------------------------------- exercise 3: another table's history


def history_rows(rng: random.Random) -> list[dict]:
    """A table's history, newest version first (as ``history()`` lists it): ``version``, ``timestamp``,
    ``operation``, ``operationParameters`` (``queryId``, ``epochId`` as text, ``outputMode``), ``readVersion``.

    The log was cleaned up (``delta.logRetentionDuration``), so the history begins at a version above 0, in the
    middle of a first query whose batch ids there are 8 or more; then a redeploy on a new checkpoint (a new
    query, batch ids from 0) and, at the same time, a backfill query of its own (its versions interleave).
    """
    first, ids = rng.randint(5, 40), [f"{rng.getrandbits(128):032x}" for _ in range(3)]
    query_ids = [f"{q[:8]}-{q[8:12]}-{q[12:16]}-{q[16:20]}-{q[20:]}" for q in ids]
    start = rng.randint(8, 30)
    writes = [(query_ids[0], b) for b in range(start, start + rng.randint(3, 6))]
    live = [(query_ids[1], b) for b in range(rng.randint(3, 6))]   # the redeploy: a new checkpoint
    backfill = [(query_ids[2], b) for b in range(rng.randint(2, 4))]  # a second query, at the same time
    writes.append(live.pop(0))
    if rng.random() < 0.5:
        writes.append(live.pop(0))
    writes.append(backfill.pop(0))  # before the redeploy's last batch: the two queries' versions interleave
    while live or backfill:
        from_live = live and (not backfill or rng.random() < len(live) / (len(live) + len(backfill)))
        writes.append((live if from_live else backfill).pop(0))
    when = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc) + timedelta(minutes=rng.randint(0, 5000))
    rows = []
    for n, (query, batch) in enumerate(writes):
        when += timedelta(seconds=rng.randint(2, 40), milliseconds=rng.randint(0, 999))
        rows.append({"version": first + n, "timestamp": when, "operation": STREAMING_UPDATE,
                     "operationParameters": {"outputMode": "Append", "queryId": query, "epochId": str(batch)},
                     "readVersion": first + n - 1})
    return rows[::-1]


def versions_of(rows: list[dict]) -> list[Version]:
    """The rows as audit.Version, oldest first."""
    return sorted((Version(r["version"], r["operation"], int(r["operationParameters"]["epochId"]),
                           r["operationParameters"]["queryId"]) for r in rows), key=lambda v: v.version)


def history_frame(spark, rows: list[dict], like):
    """``rows`` as the DataFrame ``DeltaTable.history()`` returns, newest first: ``like``'s schema (a real table's
    history), each row's other columns taken from like's newest row."""
    template = like.limit(1).collect()
    base = template[0].asDict(recursive=False) if template else {}
    fields = like.schema.fieldNames()
    data = [tuple({**base, **row}.get(name) for name in fields) for row in rows]
    return spark.createDataFrame(data, schema=like.schema).coalesce(1)


# --------------------------------------------------------------------------- exercise 4: the variants the lab runs

#: One variant from each group is run. The first holds the lesson's traps (a second write after the data, a producer
#: that promises more than the sink keeps); the second, variants at-least-once under the plan; the third, the rest
#: (exactly-once or at-most-once). So every draw holds a variant outside the three the lab once named, at-least-once
#: and another that is not: a table right only on those three, and guessed alike everywhere else, fails every seed.
#: Module 10's Iceberg rows (matrix.runnable() where its venv exists) are predicted but in no group: their drivers
#: run a second Spark (4.1 with Iceberg), and the check has no time for it.
GROUPS = (
    ("control_table_after", "control_table_atomic", "two_phase_commit", "kafka_sink_idempotent"),
    ("at_least_once", "kafka_sink", "dedup_no_watermark", "dedup_watermark", "dedup_within_watermark"),
    ("at_most_once", "memory_sink", "file_sink", "delta_sink", "delta_txn", "delta_merge", "sqlite_upsert",
     "delta_txn_per_checkpoint"),
)


def drawn_variants(rng: random.Random) -> list[str]:
    """One variant of each group, in the order of the crash lab's table."""
    chosen = {rng.choice(group) for group in GROUPS}
    return [name for name in VARIANTS if name in chosen]
