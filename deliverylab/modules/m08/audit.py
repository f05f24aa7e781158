"""Delta's history as the audit trail of a streaming pipeline: one version per committed batch.

``DeltaTable.forPath(spark, path).history()`` lists the table's versions, newest first. A
version written by Delta's streaming sink has the operation ``STREAMING UPDATE`` and, in its
``operationParameters``, the query's id (``queryId``) and the batch id (``epochId``).
"""
from __future__ import annotations

from dataclasses import dataclass

STREAMING_UPDATE = "STREAMING UPDATE"


@dataclass(frozen=True)
class Version:
    version: int
    operation: str
    batch: int | None      # epochId, for a streaming write
    query: str | None      # queryId, for a streaming write


def history(spark, table: str) -> list[Version]:
    """The table's versions, oldest first (read with DeltaTable.forPath(...).history())."""
    from delta.tables import DeltaTable

    rows = DeltaTable.forPath(spark, table).history().select("version", "operation", "operationParameters").collect()
    out = []
    for r in rows:
        params = r.operationParameters or {}
        epoch = params.get("epochId")
        out.append(Version(r.version, r.operation, int(epoch) if epoch is not None else None, params.get("queryId")))
    return sorted(out, key=lambda v: v.version)


def batches_with_data(pipe) -> set[int]:
    """Batch ids the pipeline's checkpoint committed whose offset range holds at least one order."""
    _, commits = pipe.batch_ids()
    return {b for b in commits if pipe.batch_rows(b) > 0}


def batches_without_data(pipe) -> set[int]:
    """Batch ids the pipeline's checkpoint committed whose offset range holds no order (a new query's first batch)."""
    _, commits = pipe.batch_ids()
    return {b for b in commits if pipe.batch_rows(b) == 0}


def audit_lines(versions: list[Version], with_data: set[int], empty: set[int] | None = None) -> list[str]:
    """Stable lines: what the versions are, and whether each batch with data is there exactly once; with ``empty``
    (:func:`batches_without_data`), whether every version without data is such an empty batch. The last line, a
    count of those versions, depends on the run."""
    streamed = [v for v in versions if v.operation == STREAMING_UPDATE]
    batches = [v.batch for v in streamed]
    lines = [
        f"every version is a {STREAMING_UPDATE}: {len(streamed) == len(versions)}",
        f"writers (query ids) in the history: {len({v.query for v in streamed})}",
        f"a batch id twice: {len(batches) != len(set(batches))}",
        f"batches with data committed by the checkpoint are all in the history: {with_data <= set(batches)}",
    ]
    if empty is not None:
        lines.append("every version without data is a batch the checkpoint committed with an empty offset range: "
                     f"{set(batches) - with_data <= empty}")
    return lines + [f"versions without data (empty batches): {len(set(batches) - with_data)}"]


#: Delta's table property that says how long the log (and so history()) keeps a version
LOG_RETENTION = "delta.logRetentionDuration"


def retention(spark, table: str) -> dict[str, str]:
    """How far back this table's history can reach, and which LogStore Delta would use on S3: the table's own
    properties, and Delta's defaults as the running Delta jar defines them (DeltaConfigs, DelegatingLogStore)."""
    from delta.tables import DeltaTable

    jvm = spark._jvm
    props = DeltaTable.forPath(spark, table).detail().collect()[0].properties or {}
    return {"set on the table": props.get(LOG_RETENTION),
            "default": jvm.org.apache.spark.sql.delta.DeltaConfigs.LOG_RETENTION().defaultValue(),
            "cleanup default": jvm.org.apache.spark.sql.delta.DeltaConfigs.ENABLE_EXPIRED_LOG_CLEANUP().defaultValue(),
            "s3 log store": jvm.org.apache.spark.sql.delta.storage.DelegatingLogStore.defaultS3LogStoreClassName()}


def retention_lines(found: dict[str, str]) -> list[str]:
    """Stable lines from :func:`retention`."""
    own = found["set on the table"]
    return [f"{LOG_RETENTION} set on this table: {own or 'no'}",
            f"{LOG_RETENTION}, Delta's default: {found['default']}",
            f"delta.enableExpiredLogCleanup, Delta's default: {found['cleanup default']}",
            f"Delta's LogStore for s3a:// tables unless configured: {found['s3 log store'].rpartition('.')[2]}"]
