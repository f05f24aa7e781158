"""Repeats without any failure (lesson 09 section 2): how often Spark calls a Python UDF.

Spark assumes a UDF is deterministic (same input, same output, no side effects that matter), so its
optimizer may copy the call into two places of a plan (pushing a filter on its result below the projection
that computes it). It also drops a call whose result nothing uses, deterministic or not: column pruning
(Spark 4.2's ``ColumnPruning`` rule) has no determinism check, so ``asNondeterministic()`` stops the copy,
never the drop.
``udf_calls`` counts the calls with an accumulator: every task adds its count, and the driver reads
the sum once the action is done (on one machine or on a cluster alike).
"""
from __future__ import annotations

ROWS = 100


def udf_calls(spark, action: str, deterministic: bool = True, rows: int = ROWS) -> int:
    """Run ``plus_one(id)`` over ``rows`` rows and return how many times Python was called.
    ``action``: "collect where x > 0" (the result is used twice: kept, and filtered on) or "count"
    (the result is not used at all)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    calls = spark.sparkContext.accumulator(0)

    def plus_one(n):
        calls.add(1)          # a side effect: what a call to a notification service would be
        return n + 1

    plus_one_udf = F.udf(plus_one, LongType(), useArrow=False)   # row-at-a-time, as notify_udf
    if not deterministic:
        plus_one_udf = plus_one_udf.asNondeterministic()
    df = spark.range(rows).select(plus_one_udf("id").alias("x"))
    if action == "count":
        df.count()
    else:
        df.where("x > 0").collect()
    return calls.value


def call_lines(counts: dict[tuple[str, bool], int], rows: int = ROWS) -> list[str]:
    """Stable lines from ``{(action, deterministic): calls}``."""
    return [f"{action:<22} {'deterministic (default)' if det else 'asNondeterministic()':<24} "
            f"{counts[action, det]} calls for {rows} rows" for action, det in counts]


def count_calls(spark, rows: int = ROWS) -> list[str]:
    """The lesson's four runs: a used result and an unused one, each with the default and with ``asNondeterministic()``."""
    runs = [("collect where x > 0", True), ("collect where x > 0", False), ("count", True), ("count", False)]
    return call_lines({(a, d): udf_calls(spark, a, d, rows) for a, d in runs}, rows)
