"""m03.queries: the checkpoints under a session-wide checkpoint location (no Spark)."""
from __future__ import annotations

from deliverylab.modules.m03 import subfolders


def test_subfolders_lists_folders_only(tmp_path):
    assert subfolders(tmp_path / "missing") == []
    (tmp_path / "orders_reader").mkdir()
    (tmp_path / "0ac2856c-67c6").mkdir()
    (tmp_path / "a-file").write_text("x")
    assert subfolders(tmp_path) == ["0ac2856c-67c6", "orders_reader"]
