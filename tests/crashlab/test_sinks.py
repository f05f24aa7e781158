"""Each sink kind: where it lives, and which files on disk no reader sees (no Spark needed)."""
import json
import shutil
import sqlite3

import pytest

from deliverylab.crashlab import sinks, variants

from fakes import DATA, make_delta_table


def test_every_variant_writes_a_known_kind_of_sink():
    assert {v.sink_kind for v in variants.VARIANTS.values()} <= set(sinks.SINKS)


class FakeLesson:
    def __init__(self, root):
        self.root = root

    def table(self, name):
        return str(self.root / "tables" / name)

    def path(self, *parts):
        return str(self.root.joinpath(*parts))

    def topic(self, name):
        return f"xo.ana.lesson.{name}"


def test_locations(tmp_path):
    lesson = FakeLesson(tmp_path)
    assert sinks.SINKS["delta"].location_for(lesson, "p") == str(tmp_path / "tables" / "p")
    assert sinks.SINKS["sqlite"].location_for(lesson, "p") == str(tmp_path / "tables" / "p.db")
    assert sinks.SINKS["kafka"].location_for(lesson, "p") == "xo.ana.lesson.p-out"


def test_plain_folder_leftovers_are_under_temporary(tmp_path):
    (tmp_path / "_temporary" / "0").mkdir(parents=True)
    shutil.copy(DATA / "three-rows.parquet", tmp_path / "part-00000-a.snappy.parquet")
    shutil.copy(DATA / "three-rows.parquet", tmp_path / "_temporary" / "0" / "part-00001-b.snappy.parquet")
    files = sinks.sink("parquet", str(tmp_path), "127.0.0.1:9").files()
    assert files == {"committed": 1, "leftovers": ["_temporary/0/part-00001-b.snappy.parquet"],
                     "note": "under _temporary: a write job that never committed"}


def test_file_sink_leftovers_are_files_its_log_does_not_list(tmp_path):
    for name in ("part-00000-a.snappy.parquet", "part-00001-b.snappy.parquet"):
        shutil.copy(DATA / "three-rows.parquet", tmp_path / name)
    (tmp_path / "_spark_metadata").mkdir()
    (tmp_path / "_spark_metadata" / "0").write_text(
        "v1\n" + json.dumps({"path": f"file://{tmp_path}/part-00000-a.snappy.parquet", "action": "add"}))
    sink = sinks.sink("parquet-log", str(tmp_path), "127.0.0.1:9")
    assert sink.exists()
    assert sink.files()["committed"] == 1 and sink.files()["leftovers"] == ["part-00001-b.snappy.parquet"]


def test_delta_leftovers_are_orphans_with_rows_only(tmp_path):
    table = make_delta_table(tmp_path)
    shutil.copy(DATA / "empty.parquet", table / "part-00000-empty-c000.snappy.parquet")
    files = sinks.sink("delta", str(table), "127.0.0.1:9").files()
    assert "part-00000-empty-c000.snappy.parquet" not in files["leftovers"]
    assert files["leftovers"] and files["note"] == "in no Delta commit: no Delta reader sees them"
    assert sinks.sink("delta", str(table), "x").log_view()[0] == "delta log"


@pytest.mark.parametrize("journal, left", [(b"", []), (b"hot", ["orders.db-journal"])])
def test_a_sqlite_hot_journal_is_a_leftover(tmp_path, journal, left):
    db = tmp_path / "orders.db"
    sinks.sink("sqlite", str(db), "x").prepare(spark=None)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO orders VALUES ('o-1', 'c-1', '9.99', 'paid', 't')")
    sink = sinks.sink("sqlite", str(db), "x")
    assert [r[0] for r in sink.rows()] == ["o-1"]
    (tmp_path / "orders.db-journal").write_bytes(journal)
    assert sink.files()["leftovers"] == left
