"""Module 10's JVM-free reader of Iceberg tables (deliverylab/modules/m10/tables.py), on tables written here.

The metadata half needs JSON only and runs in every venv; the rows half needs pyiceberg (the Iceberg
kernel's venv) and is skipped elsewhere. A table is written once per test module by pyiceberg itself,
in the Hadoop catalog's layout (``metadata/v<N>.metadata.json`` plus ``version-hint.text``).
"""
from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

from deliverylab.config import CourseError
from deliverylab.crashlab import sinks
from deliverylab.modules.m10 import runs, tables

Q1, Q2 = "11111111-aaaa", "22222222-bbbb"


def snap(sid, parent, seq, summary):
    return {"snapshot-id": sid, "parent-snapshot-id": parent, "sequence-number": seq, "timestamp-ms": 1000 + seq,
            "summary": summary, "manifest-list": f"file:/x/metadata/snap-{sid}.avro"}


def write_metadata(folder: Path, version: int, snapshots: list, current, hint: int | None = None) -> None:
    meta = folder / "metadata"
    meta.mkdir(parents=True, exist_ok=True)
    doc = {"format-version": 2, "location": f"file:{folder}", "snapshots": snapshots, "current-snapshot-id": current,
           "refs": {"main": {"snapshot-id": current, "type": "branch"}} if current is not None else {}}
    (meta / f"v{version}.metadata.json").write_text(json.dumps(doc))
    (meta / "version-hint.text").write_text(str(hint if hint is not None else version))


def streaming(query, epoch, added=10, total=10):
    return {"operation": "append", tables.QUERY_ID: query, tables.EPOCH_ID: str(epoch),
            "added-records": str(added), "total-records": str(total)}


@pytest.fixture
def history(tmp_path):
    """Four snapshots: Q1 epochs 0 and 1, a foreign commit, then a snapshot off the main line (a rollback's leftover)."""
    folder = tmp_path / "t"
    snaps = [snap(1, None, 1, streaming(Q1, 0)), snap(2, 1, 2, streaming(Q1, 1, total=20)),
             snap(3, 2, 3, {"operation": "append", "added-records": "1", "total-records": "21", tables.STAMP: "s:7"}),
             snap(4, 2, 4, streaming(Q2, 5, total=30))]
    write_metadata(folder, 1, [], None)
    write_metadata(folder, 5, snaps, 3, hint=1)  # a stale hint: the reader lists the folder instead
    return folder


def test_the_newest_metadata_file_is_listed_not_hinted(history):
    assert tables.metadata_file(history).name == "v5.metadata.json"
    assert tables.metadata_version(history) == 5
    (history / "metadata" / "v12.metadata.json").write_text((history / "metadata" / "v5.metadata.json").read_text())
    assert tables.metadata_version(history) == 12  # 12 > 5 as numbers, not as text
    assert tables.metadata_file(history.parent / "nothing") is None
    assert tables.read_metadata(history.parent / "nothing") == {}


def test_ancestors_follow_parents_from_the_current_snapshot(history):
    assert [s.id for s in tables.snapshots(history)] == [1, 2, 3, 4]
    assert tables.current(history).id == 3
    assert [s.id for s in tables.ancestors(history)] == [3, 2, 1]  # 4 is kept but is no ancestor
    assert tables.query_epochs(history, Q1) == [0, 1]
    assert tables.last_epoch(history, Q1) == 1
    assert tables.last_epoch(history, Q2) is None  # its snapshot is off the main line: the sink would not find it
    assert tables.would_skip(history, Q1, 1) and not tables.would_skip(history, Q1, 2)


def test_the_walk_stops_at_the_first_expired_parent(tmp_path):
    folder = tmp_path / "t"
    # Q1's epoch 0 expired; epoch 1's snapshot survives BEHIND a gap (its child 3 expired): unreachable
    write_metadata(folder, 9, [snap(2, 1, 2, streaming(Q1, 1)), snap(4, 3, 4, {"operation": "append"})], 4)
    assert [s.id for s in tables.ancestors(folder)] == [4]
    assert tables.last_epoch(folder, Q1) is None and not tables.would_skip(folder, Q1, 1)


def test_an_empty_table_has_no_current_snapshot(tmp_path):
    write_metadata(tmp_path / "t", 1, [], None)
    assert tables.current(tmp_path / "t") is None and tables.ancestors(tmp_path / "t") == []
    assert tables.format_snapshots(tmp_path / "t") == "no snapshots yet"


def test_stamps_count_among_ancestors_only(history, tmp_path):
    assert tables.stamp_count(history, "s:7") == 1 and tables.has_stamp(history, "s:7")
    assert not tables.has_stamp(history, "s:8")
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "metadata").write_text('{"id":"abc-123"}\n')
    assert tables.query_id(ckpt) == "abc-123" and tables.batch_stamp(ckpt, 4) == "abc-123:4"


def test_snapshot_rows_print_no_ids_or_times(history):
    text = tables.format_snapshots(history, Q1)
    assert text.splitlines()[0].split() == ["#", "operation", "epochId", "this", "query", "rows", "added", "rows",
                                            "in", "table", "ancestor", "of", "current"]
    rows = tables.snapshot_rows(history, Q1)
    assert [(r["epoch"], r["query"], r["ancestor"]) for r in rows] == [(0, True, True), (1, True, True),
                                                                       (None, None, True), (5, False, False)]
    assert "1000" not in text and "snap-" not in text


def test_files_on_disk_leave_out_hadoop_checksums(history):
    (history / "data").mkdir()
    (history / "data" / "a.parquet").write_bytes(b"x")
    (history / "data" / ".a.parquet.crc").write_bytes(b"x")
    (history / "metadata" / ".v5.metadata.json.crc").write_bytes(b"x")
    assert tables.files_on_disk(history, "data") == ["data/a.parquet"]
    assert tables.layout(history) == {"metadata files": 2, "manifest lists": 0, "manifests": 0,
                                      "version hint": True, "data files": 1}


class FakeConf:
    def __init__(self, values):
        self.values = values

    def get(self, key, default=None):
        return self.values.get(key, default)


class FakeSpark:
    def __init__(self, values):
        self.conf = FakeConf(values)


def test_a_folder_under_the_warehouse_is_named_by_its_folders(tmp_path):
    spark = FakeSpark({"spark.sql.catalog.iceberg.warehouse": f"file:{tmp_path}"})
    folder = tmp_path / "ada" / "10-iceberg" / "tables" / "orders"
    assert sinks.iceberg_identifier(folder, spark) == "iceberg.`ada`.`10-iceberg`.`tables`.`orders`"
    with pytest.raises(CourseError, match="not under"):
        sinks.iceberg_identifier("/elsewhere/t", spark)
    with pytest.raises(CourseError, match="Spark 4.1 \\+ Iceberg"):
        sinks.iceberg_identifier(folder, FakeSpark({}))


# --------------------------------------------------------------------------- rows, with pyiceberg


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A table written by pyiceberg in the Hadoop layout: Q1's epochs 0 and 1 (o-1, o-2), a stamped o-2 again, and
    another writer's row (runs.FOREIGN_ID)."""
    pytest.importorskip("pyiceberg")
    import pyarrow as pa
    from pyiceberg.catalog.noop import NoopCatalog
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.schema import Schema
    from pyiceberg.serializers import ToOutputFile
    from pyiceberg.table import CommitTableResponse, Table
    from pyiceberg.table.metadata import new_table_metadata
    from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
    from pyiceberg.table.update import update_table_metadata
    from pyiceberg.types import DecimalType, NestedField, StringType

    class FolderCatalog(NoopCatalog):
        """Commits as the Hadoop catalog names them: metadata/v<N>.metadata.json, then version-hint.text."""

        def write(self, folder: str, version: int, metadata, io) -> str:
            path = f"{folder}/metadata/v{version}.metadata.json"
            ToOutputFile.table_metadata(metadata, io.new_output(path))
            Path(folder, "metadata", "version-hint.text").write_text(str(version))
            return path

        def commit_table(self, table, requirements, updates):
            for requirement in requirements:
                requirement.validate(table.metadata)
            new = update_table_metadata(table.metadata, updates, metadata_location=table.metadata_location)
            version = int(re.search(r"v(\d+)\.metadata\.json$", table.metadata_location).group(1)) + 1
            return CommitTableResponse(metadata=new, metadata_location=self.write(
                table.metadata.location.removeprefix("file:"), version, new, table.io))

    folder = str(tmp_path_factory.mktemp("iceberg") / "orders")
    schema = Schema(NestedField(1, "order_id", StringType(), required=False),
                    NestedField(2, "amount", DecimalType(10, 2), required=False))
    catalog, io = FolderCatalog("folder"), PyArrowFileIO()
    metadata = new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, f"file:{folder}",
                                  {"format-version": "2"})
    table = Table(("db", "orders"), metadata, catalog.write(folder, 1, metadata, io), io, catalog)
    arrow = pa.schema([("order_id", pa.string()), ("amount", pa.decimal128(10, 2))])
    for ids, props in [(["o-1"], streaming(Q1, 0)), (["o-2"], streaming(Q1, 1)), (["o-2"], {tables.STAMP: "x:2"}),
                       ([runs.FOREIGN_ID], {})]:
        props = {k: v for k, v in props.items() if k not in ("operation", "added-records", "total-records")}
        rows = [{"order_id": i, "amount": Decimal("19.99")} for i in ids]
        table.append(pa.Table.from_pylist(rows, arrow), snapshot_properties=props)
    return Path(folder)


def test_rows_come_from_the_current_snapshot(written):
    assert sorted(tables.order_ids(written)) == [runs.FOREIGN_ID, "o-1", "o-2", "o-2"]
    assert all(amount == Decimal("19.99") for _, amount in tables.rows(written))
    assert tables.query_epochs(written, Q1) == [0, 1] and tables.has_stamp(written, "x:2")
    assert [r["added"] for r in tables.snapshot_rows(written)] == [1, 1, 1, 1]


def test_the_lessons_ledger_leaves_the_foreign_row_out(written):
    class Pipe:
        sink, name = str(written), "t"
        produced = [{"order_id": "o-1", "amount": "19.99"}, {"order_id": "o-2", "amount": "19.99"}]

    found = runs.verdict(Pipe())
    assert (found.verdict, found.duplicated_ids, found.unexpected) == ("at-least-once", ("o-2",), 0)


def test_the_sink_reads_rows_and_finds_orphans(written, tmp_path):
    sink = sinks.IcebergTable(str(written), "")
    assert sink.exists() and len(sink.rows()) == 4
    assert sink.files() == {"committed": 4, "leftovers": [], "note": ""}
    orphan = written / "data" / "00000-9-orphan.parquet"
    orphan.write_bytes(b"PAR1")
    try:
        assert tables.orphan_files(written) == ["data/00000-9-orphan.parquet"]
        heading, text = sink.log_view()
        assert heading == "iceberg snapshots" and len(text.splitlines()) == 5
    finally:
        orphan.unlink()
    assert not sinks.IcebergTable(str(tmp_path / "none"), "").exists()
