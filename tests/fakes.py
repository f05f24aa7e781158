"""Checkpoint folders and Delta tables laid out the way Spark 4.0 and Delta 4.0 write them, for tests
that read them without Spark (inspector, checkpoint, deltalog, sinks)."""
from __future__ import annotations

import json
from pathlib import Path

#: Small real Parquet files written by Spark 4.0: empty.parquet (0 rows), three-rows.parquet.
DATA = Path(__file__).resolve().parent / "data"

QUERY_ID = "5f0c3f5e-8a7b-4c11-9d2e-0b7d1c2a3e4f"
TOPIC = "xo.ana.orders"
CONF = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "spark.sql.shuffle.partitions": "2",
}


# --------------------------------------------------------------------------- fake checkpoint


def kafka_json(offsets: dict[int, int], topic: str = TOPIC) -> str:
    return json.dumps({topic: {str(p): o for p, o in offsets.items()}}, separators=(",", ":"))


def write_offsets(ckpt: Path, batch: int, *source_lines: str) -> None:
    metadata = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1767225600000 + batch, "conf": CONF},
                          separators=(",", ":"))
    # OffsetSeqLog: "v1", metadata, one line per source, no newline at the end
    (ckpt / "offsets" / str(batch)).write_text("\n".join(["v1", metadata, *source_lines]))
    (ckpt / "offsets" / f".{batch}.crc").write_bytes(b"crc\x00\x01")


def write_commit(ckpt: Path, batch: int) -> None:
    (ckpt / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    (ckpt / "commits" / f".{batch}.crc").write_bytes(b"crc\x00\x02")


def make_checkpoint(root: Path, ends: list[dict[int, int]], committed: int, start=None) -> Path:
    """A Kafka query checkpoint whose batch i ends at ends[i]; batches < committed have commits."""
    ckpt = root / "ckpt"
    for folder in ("offsets", "commits", "sources/0"):
        (ckpt / folder).mkdir(parents=True, exist_ok=True)
    (ckpt / "metadata").write_text(json.dumps({"id": QUERY_ID}) + "\n")
    # KafkaSourceInitialOffsetWriter: a zero byte, "v1", the starting offsets
    start = start or {p: 0 for p in ends[0]}
    (ckpt / "sources" / "0" / "0").write_bytes(b"\x00v1\n" + kafka_json(start).encode())
    for batch, end in enumerate(ends):
        write_offsets(ckpt, batch, kafka_json(end))
        if batch < committed:
            write_commit(ckpt, batch)
    # a temp file left by an interrupted atomic write is not a batch
    (ckpt / "offsets" / f".{len(ends)}.0b5e7c7e-1111-2222-3333-444455556666.tmp").write_text("v1\n")
    return ckpt


ENDS = [{0: 250, 1: 250}, {1: 500, 0: 500}, {0: 750, 1: 700}]


# --------------------------------------------------------------------------- fake Delta table


def stats(n: int) -> str:
    return json.dumps({"numRecords": n, "minValues": {"order_id": "o-000000"}, "maxValues": {"order_id": "o-000999"},
                       "nullCount": {"order_id": 0}}, separators=(",", ":"))


def add_action(path: str, rows: int | None) -> dict:
    add = {"path": path, "partitionValues": {}, "size": 4000 + (rows or 0), "modificationTime": 1767225601000,
           "dataChange": True}
    if rows is not None:
        add["stats"] = stats(rows)
    return {"add": add}


def commit_info(operation: str, epoch: int | None = None) -> dict:
    info = {"timestamp": 1767225601000, "operation": operation, "operationParameters": {},
            "isolationLevel": "Serializable", "isBlindAppend": True,
            "engineInfo": "Apache-Spark/4.0.0 Delta-Lake/4.0.0", "txnId": "d1f0a7c2-0000-0000-0000-000000000000"}
    if epoch is not None:
        info["operationParameters"] = {"outputMode": "Append", "queryId": QUERY_ID, "epochId": str(epoch)}
    return {"commitInfo": info}


def txn_action(version: int) -> dict:
    return {"txn": {"appId": QUERY_ID, "version": version, "lastUpdated": 1767225601000}}


def write_version(log: Path, version: int, actions: list[dict]) -> None:
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
    (log / f"{version:020d}.crc").write_text('{"tableSizeBytes":0}')
    (log / f".{version:020d}.json.crc").write_bytes(b"crc")  # local file system checksum


def make_delta_table(root: Path) -> Path:
    table = root / "orders_delta"
    log = table / "_delta_log"
    (log / "_commits").mkdir(parents=True)
    (log / "_staged_commits").mkdir()  # Delta 4.0 creates it next to the commits
    (log / "_commits" / "00000000000000000004.6a0f.json").write_text("{}\n")  # not a backfilled commit
    write_version(log, 0, [
        commit_info("CREATE TABLE"),
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "2b1c", "format": {"provider": "parquet", "options": {}}, "schemaString": "{}",
                      "partitionColumns": [], "configuration": {}, "createdTime": 1767225600000}},
    ])
    write_version(log, 1, [commit_info("STREAMING UPDATE", 0), txn_action(0),
                            add_action("part-00000-aaaa-c000.snappy.parquet", 250),
                            add_action("part-00001-bbbb-c000.snappy.parquet", 250)])
    write_version(log, 2, [commit_info("STREAMING UPDATE", 1), txn_action(1),
                            add_action("day%3D2026-01-01/part-00000-cccc.c000.snappy.parquet", 240),
                            add_action("part-00001-dddd-c000.snappy.parquet", None)])
    write_version(log, 3, [commit_info("OPTIMIZE"),
                            {"remove": {"path": "part-00000-aaaa-c000.snappy.parquet", "dataChange": False}},
                            add_action(f"file:{table}/part-00000-eeee-c000.snappy.parquet", 250)])
    (log / "00000000000000000003.checkpoint.parquet").write_bytes(b"PAR1")
    (log / "_last_checkpoint").write_text('{"version":3}')
    for name in ("part-00000-aaaa-c000.snappy.parquet", "part-00001-bbbb-c000.snappy.parquet",
                 "part-00001-dddd-c000.snappy.parquet", "part-00000-eeee-c000.snappy.parquet",
                 "part-00000-ffff-c000.snappy.parquet", "part-00001-gggg-c000.snappy.parquet"):
        (table / name).write_bytes(b"PAR1")
        (table / f".{name}.crc").write_bytes(b"crc")
    (table / "day=2026-01-01").mkdir()
    (table / "day=2026-01-01" / "part-00000-cccc.c000.snappy.parquet").write_bytes(b"PAR1")
    (table / "day=2026-01-01" / "part-00009-hhhh.c000.snappy.parquet").write_bytes(b"PAR1")
    return table
