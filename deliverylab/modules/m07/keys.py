"""A MERGE whose key is computed with uuid(): the same batch, merged twice, lands on new rows."""
from __future__ import annotations


def merge_on(spark, table: str, batch, key_sql: str) -> None:
    """MERGE ``batch`` into the Delta table at ``table`` on a key column computed by ``key_sql``
    (``"order_id"``, or ``"uuid()"``); creates the table on first use."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    keyed = batch.withColumn("row_key", F.expr(key_sql))
    if not DeltaTable.isDeltaTable(spark, table):
        keyed.limit(0).write.format("delta").save(table)
    (DeltaTable.forPath(spark, table).alias("t")
        .merge(keyed.alias("s"), "t.row_key = s.row_key")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute())


def rows_after_replay(spark, table: str, batch, key_sql: str) -> tuple[int, int]:
    """Merge ``batch`` once, then again (a replay). Returns ``(rows after one, rows after the replay)``."""
    merge_on(spark, table, batch, key_sql)
    once = spark.read.format("delta").load(table).count()
    merge_on(spark, table, batch, key_sql)
    return once, spark.read.format("delta").load(table).count()
