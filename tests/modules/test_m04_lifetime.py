"""Lesson 04's key-lifetime run, its pure parts: no-data batches read from a checkpoint, the provider, the lines."""
import json

from deliverylab.modules.m04 import lifetime


def _offsets(folder, n, end, watermark_ms, provider=lifetime.ROCKSDB):
    meta = {"batchWatermarkMs": watermark_ms, "batchTimestampMs": 1, "conf": {lifetime.PROVIDER: provider}}
    (folder / str(n)).write_text("v1\n" + json.dumps(meta) + "\n" + json.dumps({"t": {"0": end}}) + "\n")


def test_a_batch_that_repeats_the_offsets_before_it_is_a_no_data_batch(tmp_path):
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    for n, (end, watermark) in enumerate([(0, 0), (1, 0), (1, 60_000), (2, 60_000), (3, 60_000), (3, 120_000)]):
        _offsets(offsets, n, end, watermark)
    (offsets / ".0.crc").write_text("")   # not a batch
    assert lifetime._no_data(tmp_path, "t") == (2, True)


def test_a_repeat_without_a_later_watermark_is_reported(tmp_path):
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    _offsets(offsets, 0, 1, 60_000)
    _offsets(offsets, 1, 1, 60_000)
    assert lifetime._no_data(tmp_path, "t") == (1, False)


def test_the_provider_comes_from_the_offsets_file_and_the_lines_name_it_short(tmp_path):
    _offsets(tmp_path, 0, 0, 0)
    assert lifetime._provider(tmp_path / "0") == lifetime.ROCKSDB
    lines = lifetime.Lifetime({"copy a": "dropped", "copy b": "passed"}, 2, True, lifetime.ROCKSDB,
                              lifetime.ROCKSDB).lines()
    assert lines[:2] == ["copy a: dropped", "copy b: passed"]
    assert lines[2] == "batches that read nothing: 2 | each right after a batch that moved the watermark: True"
    assert lines[-1].endswith("after a restart with the setting unset: RocksDBStateStoreProvider")
