"""m03.queries: rows a query's run read, and the checkpoints under a session-wide checkpoint location (no Spark)."""
from __future__ import annotations

from deliverylab.modules.m03 import rows_read, subfolders


class FakeQuery:
    def __init__(self, rows):
        self.recentProgress = [{"batchId": i, "numInputRows": n} for i, n in enumerate(rows)]


def test_rows_read_sums_the_runs_progress_reports():
    assert rows_read(FakeQuery([0, 20, 5])) == 25
    assert rows_read(FakeQuery([])) == 0


def test_subfolders_lists_folders_only(tmp_path):
    assert subfolders(tmp_path / "missing") == []
    (tmp_path / "orders_reader").mkdir()
    (tmp_path / "0ac2856c-67c6").mkdir()
    (tmp_path / "a-file").write_text("x")
    assert subfolders(tmp_path) == ["0ac2856c-67c6", "orders_reader"]
