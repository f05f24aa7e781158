"""The runs of module 05 in one call each, so a cell shows the idea and not the plumbing."""
from __future__ import annotations

import time

from ... import checkpoint
from ...config import CourseError
from ...crashlab import Pipeline
from ...crashlab.record import failure_kept
from ...crashlab.redeploy import new_checkpoint  # noqa: F401 - lesson 05 calls scenarios.new_checkpoint
from ...sparkerrors import error_class


def crash_and_replay(lesson, variant, point: str, orders: int = 200, name: str | None = None, before_crash=None,
                     outage_s: float = 0.0, **pipeline_args):
    """Start ``variant`` (a name, or your own pipeline function), process ``orders`` orders, crash it at
    ``point`` while a fresh batch runs, restart it from its checkpoint, let it catch up, and stop it.

    Returns ``(pipe, crash)``; ``pipe.ledger()`` says what reached the sink. The verdict needs only
    the sink, the topic and the checkpoint, so the driver is stopped (``pipe.restart()`` starts it
    again): a lesson that tries six sinks does not keep six Spark drivers, each with its own memory.

    When your own function fails (it raises, or its query never writes the checkpoint it was given),
    the run ends there and ``pipe.failure`` says why in one line (``crash`` is None if the crash did
    not happen yet), so a lab's checks can turn it into a hint. An unfinished TODO is raised.

    ``before_crash(pipe)``, if given, runs once the first orders are drained (the pipeline idle); ``outage_s``
    is how long the driver stays down before the restart.
    """
    pipeline_args.setdefault("max_per_batch", 200)
    pipe = Pipeline(lesson, variant, name=name, **pipeline_args)
    crash = None
    try:
        with failure_kept(pipe):
            pipe.start()
            pipe.produce(orders)
            pipe.drain()
            if before_crash is not None:
                before_crash(pipe)
            crash = pipe.crash(point, orders=orders)
            time.sleep(outage_s)  # the outage (none by default)
            pipe.restart()
            pipe.drain()
    finally:
        pipe.stop()
    return pipe, crash


def crash_and_replay_after_expiry(lesson, variant: str, retention_s: int = 2, outage_s: float = 3.0,
                                  orders: int = 200, name: str | None = None):
    """:func:`crash_and_replay` after Delta's commit, with the sink table's ``delta.setTransactionRetentionDuration``
    set to ``retention_s`` seconds before the crash, and an outage of ``outage_s`` (longer) before the restart.

    Delta 4.4 judges each ``txn`` entry by its ``lastUpdated`` time when it builds a snapshot: one older
    than the retention is ignored, so the restarted driver's replay finds no record of the batch and
    writes it again. Returns ``(pipe, crash)``."""
    from ...stack.session import get_spark

    def set_retention(pipe) -> None:  # a commit of its own: the pipeline is idle, so it meets no batch's commit
        get_spark().sql(f"ALTER TABLE delta.`{pipe.sink}` SET TBLPROPERTIES "
                        f"('delta.setTransactionRetentionDuration' = 'interval {retention_s} seconds')")

    return crash_and_replay(lesson, variant, "after_sink_write", orders=orders, name=name or f"{variant}_expiry",
                            before_crash=set_retention, outage_s=outage_s)


def crash_first_batch(lesson, variant, point: str, orders: int = 100, name: str | None = None, **pipeline_args):
    """Start ``variant`` on a new pipeline, crash it at ``point`` in its first batch of orders (``orders`` of them,
    sent once it runs), restart it, let it catch up, and stop it: a crash where the sink has never been written
    before. Returns ``(pipe, crash)``, with failures kept as :func:`crash_and_replay` keeps them.

    Its first start may take a driver that another pipeline stopped cleanly (crashlab/drivers.py), so the restart
    after the crash is the one driver this run boots."""
    pipeline_args.setdefault("max_per_batch", 200)
    pipe = Pipeline(lesson, variant, name=name, **pipeline_args)
    crash = None
    try:
        with failure_kept(pipe):
            pipe.start()
            crash = pipe.crash(point, orders=orders)
            pipe.restart()
            pipe.drain()
    finally:
        pipe.stop()
    return pipe, crash


def replays(pipe) -> list[tuple[str, int, int | None, int]]:
    """For each crash that left a batch to run again:
    ``(crash point, batch id, rows the replay read, rows the batch's recorded range holds)``.

    A sink that recognises a batch it already committed skips it without reading it, so its
    replay reads 0 rows; ``None`` when no progress record of the replay was kept.
    """
    found = []
    for crash in pipe.crashes:
        if crash.batch is None or not crash.replayed:
            continue
        records = [p for p in pipe.progress(run=crash.run + 1) if p["batch"] == crash.batch]
        found.append((crash.point, crash.batch, records[0]["rows"] if records else None,
                      pipe.batch_rows(crash.batch, crash.run)))
    return found



def restart_without_metadata(pipe) -> tuple[str, bool]:
    """Stop the pipeline, delete only its checkpoint's ``metadata`` file (where the query id lives),
    and start it again; then put the file back and start it once more.

    Returns ``(outcome, same_query)``: outcome is ``"refused: <Spark's error class>"``, or
    ``"started as query <id>"`` on a Spark that accepts the start; ``same_query`` says whether the
    run with the file put back is the query the checkpoint had before. The pipeline is left running.
    """
    from pathlib import Path

    pipe.stop()
    before = checkpoint.query_id(pipe.checkpoint)
    metadata = Path(pipe.checkpoint) / "metadata"
    crc = metadata.with_name(".metadata.crc")  # Hadoop's checksum of it, on a local disk
    kept = {f: f.read_bytes() for f in (metadata, crc) if f.exists()}
    for f in kept:
        f.unlink()
    try:
        pipe.restart()
    except CourseError as err:
        outcome = f"refused: {error_class(str(err)) or str(err).splitlines()[-1]}"
    else:
        outcome = f"started as query {checkpoint.query_id(pipe.checkpoint)}"
        pipe.stop()
    for f, data in kept.items():
        f.write_bytes(data)
    pipe.restart()
    return outcome, checkpoint.query_id(pipe.checkpoint) == before
