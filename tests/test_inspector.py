"""Checkpoint and Delta log views, on folders laid out the way Spark 4.0 and Delta 4.0 write them."""
from __future__ import annotations

import json

import pytest

from deliverylab import inspector as I

from fakes import (ENDS, QUERY_ID, add_action, commit_info, kafka_json, make_checkpoint, make_delta_table,
                   write_commit, write_offsets)


def test_checkpoint_table_rows(tmp_path):
    ckpt = make_checkpoint(tmp_path, ENDS, committed=2)
    assert I.checkpoint_table(ckpt) == [
        {"batch": 0, "offsets": True, "commits": True, "range": "p0 0→250, p1 0→250", "rows": 500},
        {"batch": 1, "offsets": True, "commits": True, "range": "p0 250→500, p1 250→500", "rows": 500},
        {"batch": 2, "offsets": True, "commits": False, "range": "p0 500→750, p1 500→700", "rows": 450},
    ]


def test_format_checkpoint_before_and_after(tmp_path):
    ckpt = make_checkpoint(tmp_path, ENDS, committed=2)
    assert I.format_checkpoint(ckpt) == "\n".join([
        "batch  offsets  commits  range                   rows",
        "    0  yes      yes      p0 0→250, p1 0→250       500",
        "    1  yes      yes      p0 250→500, p1 250→500   500",
        "    2  yes      no       p0 500→750, p1 500→700   450",
        "last batch 2: offsets/2 written, commits/2 missing → will re-run on restart",
    ])
    write_commit(ckpt, 2)
    assert I.format_checkpoint(ckpt).splitlines()[-1] == (
        "last batch 2: offsets/2 written, commits/2 written → restart goes on with batch 3")


def test_format_checkpoint_is_a_str_that_displays_as_itself(tmp_path):
    text = I.format_checkpoint(make_checkpoint(tmp_path, ENDS, committed=3))
    assert isinstance(text, str)
    assert repr(text) == str(text)


def test_batch_zero_starts_at_the_recorded_starting_offsets(tmp_path):
    ckpt = make_checkpoint(tmp_path, [{0: 130, 1: 120}], committed=1, start={0: 100, 1: 90})
    assert I.checkpoint_table(ckpt)[0]["range"] == "p0 100→130, p1 90→120"
    assert I.checkpoint_table(ckpt)[0]["rows"] == 60


def test_unknown_starts_show_a_question_mark(tmp_path):
    ckpt = make_checkpoint(tmp_path, ENDS, committed=3)
    (ckpt / "offsets" / "0").unlink()  # purged by minBatchesToRetain
    (ckpt / "sources" / "0" / "0").unlink()
    rows = I.checkpoint_table(ckpt)
    assert rows[0] == {"batch": 0, "offsets": False, "commits": True, "range": "offsets purged", "rows": None}
    assert rows[1]["range"] == "p0 ?→500, p1 ?→500" and rows[1]["rows"] is None
    assert "    1  yes      yes      p0 ?→500, p1 ?→500         ?" in I.format_checkpoint(ckpt)


def test_a_partition_added_later_has_an_unknown_start(tmp_path):
    ckpt = make_checkpoint(tmp_path, [{0: 10}, {0: 20, 1: 5}], committed=2)
    assert I.checkpoint_table(ckpt)[1]["range"] == "p0 10→20, p1 ?→5"


def test_two_topics_and_a_non_kafka_source(tmp_path):
    ckpt = tmp_path / "ckpt"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "sources" / "0").mkdir(parents=True)
    both = json.dumps({"b.topic": {"0": 4}, "a.topic": {"0": 7, "1": 3}})
    (ckpt / "sources" / "0" / "0").write_bytes(b"\x00v1\n" + json.dumps({"a.topic": {"0": 0, "1": 0}, "b.topic": {"0": 0}}).encode())
    write_offsets(ckpt, 0, both, "42", "-")
    (row,) = I.checkpoint_table(ckpt)
    assert row["range"] == "a.topic p0 0→7, a.topic p1 0→3, b.topic p0 0→4 | 42 | no offsets"
    assert row["rows"] is None and row["commits"] is False


def test_empty_or_missing_checkpoint(tmp_path):
    assert I.checkpoint_table(tmp_path / "never-ran") == []
    assert I.format_checkpoint(tmp_path / "never-ran") == (
        "no batches yet: offsets/ is empty → the first run plans batch 0 from the starting offsets")


def test_query_id(tmp_path):
    assert I.query_id(make_checkpoint(tmp_path, ENDS, committed=1)) == QUERY_ID
    assert I.query_id(tmp_path / "nothing") is None


def test_read_offsets_file(tmp_path):
    ckpt = make_checkpoint(tmp_path, ENDS, committed=1)
    parsed = I.read_offsets_file(ckpt / "offsets" / "1")
    assert parsed["version"] == "v1"
    assert parsed["metadata"]["batchWatermarkMs"] == 0
    assert parsed["sources"] == [kafka_json(ENDS[1])]


def test_delta_log_table(tmp_path):
    rows = I.delta_log_table(make_delta_table(tmp_path))
    assert rows == [
        {"version": 0, "operation": "CREATE TABLE", "files_added": 0, "rows_added": 0, "files_removed": 0,
         "txn_app": None, "txn_version": None},
        {"version": 1, "operation": "STREAMING UPDATE", "files_added": 2, "rows_added": 500, "files_removed": 0,
         "txn_app": "5f0c3f5e", "txn_version": 0},
        {"version": 2, "operation": "STREAMING UPDATE", "files_added": 2, "rows_added": 240, "files_removed": 0,
         "txn_app": "5f0c3f5e", "txn_version": 1},
        {"version": 3, "operation": "OPTIMIZE", "files_added": 1, "rows_added": 250, "files_removed": 1,
         "txn_app": None, "txn_version": None},
    ]


def test_rows_added_unknown_when_no_add_has_stats(tmp_path):
    row = I.summarise_commit(7, [commit_info("WRITE"), add_action("a.parquet", None)])
    assert row["rows_added"] is None


def test_orphan_files_are_the_ones_no_commit_added(tmp_path):
    table = make_delta_table(tmp_path)
    assert I.orphan_files(table) == [
        "day=2026-01-01/part-00009-hhhh.c000.snappy.parquet",
        "part-00000-ffff-c000.snappy.parquet",
        "part-00001-gggg-c000.snappy.parquet",
    ]
    assert I.orphan_files(tmp_path / "absent") == []


def test_format_delta_log(tmp_path):
    assert I.format_delta_log(make_delta_table(tmp_path)) == "\n".join([
        "version  operation         files added  rows added  files removed  txn app   txn version",
        "      0  CREATE TABLE                0           0              0  -                   -",
        "      1  STREAMING UPDATE            2         500              0  5f0c3f5e            0",
        "      2  STREAMING UPDATE            2         240              0  5f0c3f5e            1",
        "      3  OPTIMIZE                    1         250              1  -                   -",
        "latest version 3; parquet files in no commit: 3",
    ])


def test_format_delta_log_without_commits(tmp_path):
    assert I.format_delta_log(tmp_path) == "no Delta commits yet: _delta_log has no <version>.json files"


# --------------------------------------------------------------------------- before / after


def test_show_before_after_stacked():
    text = I.show_before_after("a\nbb", "ccc")
    assert text == "\n".join(["before crash", "------------", "a", "bb", "",
                              "after restart", "-------------", "ccc"])


def test_show_before_after_side_by_side():
    text = I.show_before_after("a\nbb", "ccc", side_by_side=True)
    assert text == "\n".join([
        "before crash  |  after restart",
        "------------  |  -------------",
        "a             |  ccc",
        "bb            |",
    ])


def test_before_after_with_real_views(tmp_path):
    ckpt = make_checkpoint(tmp_path, ENDS, committed=2)
    before = I.format_checkpoint(ckpt)
    write_commit(ckpt, 2)
    text = I.show_before_after(before, I.format_checkpoint(ckpt))
    assert "commits/2 missing → will re-run on restart" in text
    assert text.rstrip().endswith("restart goes on with batch 3")


@pytest.mark.parametrize("name", ["00000000000000000001.crc", "00000000000000000002.checkpoint.parquet",
                                  "1.json", "_last_checkpoint"])
def test_only_twenty_digit_json_files_are_commits(tmp_path, name):
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    (log / name).write_text("not json at all")
    assert I.delta_log_table(tmp_path / "t") == []
