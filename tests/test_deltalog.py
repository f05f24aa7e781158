"""A Delta table's log and data files read from disk: commits, txn versions, orphans, Parquet footers."""
import shutil
from pathlib import Path

from deliverylab import deltalog as D

from fakes import DATA, commit_info, make_delta_table, txn_action, write_version


def test_parquet_footer_row_counts():
    assert D.parquet_rows(DATA / "three-rows.parquet") == 3
    assert D.parquet_rows(DATA / "empty.parquet") == 0


def test_a_file_that_is_not_parquet_has_no_row_count(tmp_path):
    (tmp_path / "x.parquet").write_bytes(b"PAR1")
    (tmp_path / "y.parquet").write_bytes(b"not parquet at all, but long enough to seek")
    assert D.parquet_rows(tmp_path / "x.parquet") is None
    assert D.parquet_rows(tmp_path / "y.parquet") is None
    assert D.parquet_rows(tmp_path / "missing.parquet") is None


def test_schema_only_files_are_not_orphans_but_files_with_rows_are(tmp_path):
    table = make_delta_table(tmp_path)
    shutil.copy(DATA / "empty.parquet", table / "part-00000-empty-c000.snappy.parquet")  # an empty batch's file
    shutil.copy(DATA / "three-rows.parquet", table / "part-00001-crashed-c000.snappy.parquet")
    orphans = D.orphan_files(table)
    assert "part-00001-crashed-c000.snappy.parquet" in orphans
    assert "part-00000-empty-c000.snappy.parquet" not in orphans
    assert "part-00000-empty-c000.snappy.parquet" in D.uncommitted_files(table)


def test_txn_versions_keep_the_highest_per_app_id(tmp_path):
    table = make_delta_table(tmp_path)
    assert D.txn_versions(table) == {"5f0c3f5e-8a7b-4c11-9d2e-0b7d1c2a3e4f": 1}
    write_version(table / "_delta_log", 4, [commit_info("WRITE"), {"txn": {"appId": "other", "version": 7}}])
    assert D.txn_versions(table)["other"] == 7
    assert D.is_table(table) and not D.is_table(Path(tmp_path) / "nothing")


def test_committed_files_include_later_removals(tmp_path):
    table = make_delta_table(tmp_path)
    committed = D.committed_files(table)
    assert "part-00000-aaaa-c000.snappy.parquet" in committed  # removed by OPTIMIZE, still added once
    assert "day=2026-01-01/part-00000-cccc.c000.snappy.parquet" in committed  # URL-decoded
    assert "part-00000-eeee-c000.snappy.parquet" in committed  # an absolute file: path
    assert txn_action(0)["txn"]["version"] == 0
