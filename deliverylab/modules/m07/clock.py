"""``current_timestamp()`` on a replay: fixed per micro-batch in the stream's plan, the clock in foreachBatch.

In a streaming query's own plan Spark replaces ``current_timestamp()`` (and ``now()``,
``current_date()``) with the micro-batch's timestamp, which it writes into ``offsets/N``
(``batchTimestampMs``) before running the batch and reads back when it runs the batch again.
A DataFrame built inside ``foreachBatch`` is an ordinary batch query: there the function reads
the clock each time the function runs.
"""
from __future__ import annotations

from dataclasses import dataclass

from .kernel import SimulatedCrash, orders_from, run_foreach_batch


def stamped(orders):
    """The stream's own select adds the time (Spark fixes it per micro-batch) and a uuid (it does not)."""
    from pyspark.sql import functions as F

    return orders.withColumn("in_stream", F.current_timestamp()).withColumn("row_id", F.expr("uuid()"))


def stamping_writer(seen: list, crash_once: list):
    """A foreachBatch function that adds the time again and keeps every row it is given in ``seen``
    (a sink with no memory of batches: a replay adds its rows again). It fails after its first
    write while ``crash_once`` holds a True."""
    from pyspark.sql import functions as F

    def write(batch, batch_id):
        seen.extend(batch.withColumn("in_foreach_batch", F.current_timestamp())
                    .select("order_id", "in_stream", "in_foreach_batch", "row_id").collect())
        if crash_once and crash_once.pop():
            raise SimulatedCrash("after the write, before commits/N")
    return write


@dataclass(frozen=True)
class Stamps:
    """What the sink holds after a batch ran, failed, and ran again."""
    rows: int
    orders: int
    in_stream: int         # distinct in_stream values over both runs
    in_foreach_batch: int  # distinct in_foreach_batch values over both runs
    new_row_ids: int       # orders whose uuid() in the stream's select differs between the runs

    def lines(self) -> list[str]:
        return [f"rows written: {self.rows} ({self.orders} orders, by the first run and by the replay)",
                f"distinct current_timestamp() in the stream's select: {self.in_stream}",
                f"distinct current_timestamp() inside foreachBatch:    {self.in_foreach_batch}",
                f"orders whose uuid() in the stream's select changed:  {self.new_row_ids}"]


def count(rows) -> Stamps:
    """Count rows of ``(order_id, in_stream, in_foreach_batch, row_id)`` (pure)."""
    rows = [tuple(row) for row in rows]
    ids: dict = {}
    for order, *_, row_id in rows:
        ids.setdefault(order, set()).add(row_id)
    return Stamps(len(rows), len(ids), len({r[1] for r in rows}), len({r[2] for r in rows}),
                  sum(1 for found in ids.values() if len(found) > 1))


def crash_and_replay(spark, lesson, name: str = "clock", orders: int = 20) -> tuple[list[str], Stamps]:
    """Produce ``orders`` orders, run the stamped stream until its write fails once, restart it from the
    same checkpoint (Spark runs the batch again), and count the timestamps. Returns (runs, stamps)."""
    lesson.produce_orders(orders, topic=name, progress=False)
    stream = stamped(orders_from(spark, lesson.bootstrap, lesson.topic(name)))
    seen: list = []
    write = stamping_writer(seen, crash_once=[True])
    runs = [run_foreach_batch(stream, lesson.checkpoint(name), write) for _ in range(2)]
    return runs, count(seen)
