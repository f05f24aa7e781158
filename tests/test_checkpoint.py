"""The one reader of a streaming checkpoint and of the file sink's log (no Spark needed)."""
import json

from deliverylab import checkpoint as C

from fakes import ENDS, QUERY_ID, TOPIC, kafka_json, make_checkpoint, write_offsets


def test_batch_ids_and_the_next_batch(tmp_path):
    ckpt = make_checkpoint(tmp_path, ENDS, committed=2)
    assert C.batch_ids(ckpt) == ({0, 1, 2}, {0, 1})  # .crc and .tmp files are not batches
    assert C.next_batch_id(ckpt) == 3
    assert C.next_batch_id(tmp_path / "empty") == 0


def test_a_batch_reads_from_the_previous_end_and_batch_zero_from_the_recorded_start(tmp_path):
    ckpt = make_checkpoint(tmp_path, ENDS, committed=2, start={0: 10, 1: 20})
    assert C.batch_range(ckpt, 0, TOPIC) == {0: (10, 250), 1: (20, 250)}
    assert C.batch_range(ckpt, 2, TOPIC) == {0: (500, 750), 1: (500, 700)}
    assert C.batch_range(ckpt, 7, TOPIC) is None
    assert C.batch_range(ckpt, 1, "another-topic") is None


def test_done_offsets_are_the_end_of_the_last_committed_batch(tmp_path):
    assert C.done_offsets(make_checkpoint(tmp_path / "a", ENDS, committed=2), TOPIC) == {0: 500, 1: 500}
    # nothing committed yet: done up to where the source started
    assert C.done_offsets(make_checkpoint(tmp_path / "b", ENDS, committed=0, start={0: 5, 1: 6}), TOPIC) == {0: 5, 1: 6}


def test_leading_zero_bytes_are_ignored_in_every_log_file(tmp_path):
    ckpt = make_checkpoint(tmp_path, ENDS, committed=1)
    path = ckpt / "offsets" / "1"
    path.write_bytes(b"\x00" + path.read_bytes())
    assert C.read_offsets_file(path)["sources"] == [kafka_json(ENDS[1])]
    assert C.batch_range(ckpt, 2, TOPIC) == {0: (500, 750), 1: (500, 700)}
    assert C.start_line(ckpt) == kafka_json({0: 0, 1: 0})  # sources/0/0 starts with a zero byte


def test_query_id_and_watermark(tmp_path):
    ckpt = make_checkpoint(tmp_path, ENDS, committed=1)
    assert C.query_id(ckpt) == QUERY_ID
    assert C.batch_watermark_ms(ckpt, 1) == 0
    assert C.batch_watermark_ms(ckpt, 9) is None


def test_a_source_that_is_not_kafka_is_not_read_as_offsets(tmp_path):
    ckpt = make_checkpoint(tmp_path, ENDS[:1], committed=1)
    write_offsets(ckpt, 1, kafka_json({0: 300, 1: 300}), "-")
    assert C.source_line(ckpt, 1, 1) == "-"
    assert C.topic_offsets("-", TOPIC) is None
    assert C.kafka_offsets('{"t": {"x": 1}}') is None


def test_file_sink_log_lists_published_files(tmp_path):
    sink = tmp_path / "out"
    log = sink / "_spark_metadata"
    log.mkdir(parents=True)
    entry = {"path": f"file://{sink}/part-00000-a.snappy.parquet", "size": 10, "isDir": False, "action": "add"}
    (log / "0").write_text("v1\n" + json.dumps(entry))
    (log / "1.compact").write_text("v1\n" + json.dumps({**entry, "path": f"file://{sink}/part-00001-b.snappy.parquet"}))
    (log / ".0.crc").write_text("crc")
    assert C.file_sink_files(sink) == {"part-00000-a.snappy.parquet", "part-00001-b.snappy.parquet"}
    assert C.file_sink_files(tmp_path / "no-sink") == set()
