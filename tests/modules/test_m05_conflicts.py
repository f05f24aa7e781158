"""Lesson 05's race with a compaction and its retry demo: the parts that need no Spark (the lesson's cells run the rest)."""
import threading

import pytest

from deliverylab import ledger
from deliverylab.config import CourseError
from deliverylab.modules.m05 import conflicts


def test_the_first_row_waits_at_the_gate_until_it_is_released_and_later_rows_pass(tmp_path):
    arrived, released = str(tmp_path / "arrived"), str(tmp_path / "released")
    first = threading.Thread(target=conflicts.pass_gate, args=(arrived, released, 600))
    first.start()
    while not (tmp_path / "arrived").exists():  # the first row has reached the gate (no timing assumed)
        first.join(0.05)
    conflicts.pass_gate(arrived, released, 600)  # a later row: the marker is there, it does not wait
    assert first.is_alive()  # the first row is still held: nothing has released it
    (tmp_path / "released").touch()
    first.join(600)
    assert not first.is_alive()


def test_a_gate_never_released_lets_its_row_through_after_the_limit(tmp_path):
    conflicts.pass_gate(str(tmp_path / "a"), str(tmp_path / "r"), limit_s=0.2)
    assert (tmp_path / "a").exists()


def test_a_compaction_that_did_not_commit_is_an_error_that_says_to_run_again(tmp_path):
    gate = conflicts.Gate(tmp_path / "gate")
    gate._thread = threading.Thread(target=lambda: None)
    gate._thread.start()
    with pytest.raises(CourseError, match="Run the cell again"):
        gate.wait()


def test_the_lines_say_how_each_write_ended_and_what_the_restart_left():
    after = ledger.reconcile([("o-1", "1.00"), ("o-2", "2.00")], [("o-1", "1.00"), ("o-2", "2.00")])
    run = conflicts.ConflictRun("committed", "DELTA_CONCURRENT_APPEND.WITHOUT_HINT", True, False, "finished", after,
                                "DELTA_CONCURRENT_APPEND.WITHOUT_HINT", "Serializable",
                                "refused, delta.isolationLevel must be Serializable")
    assert run.lines() == [
        "append with txnAppId while a compaction commits: committed",
        "foreachBatch MERGE while a compaction commits: DELTA_CONCURRENT_APPEND.WITHOUT_HINT",
        "batch 0 in the checkpoint: offsets/0 written, commits/0 missing",
        "restart from the same checkpoint: finished | " + after.verdict_line(),
        "MERGE while another writer appends a row: DELTA_CONCURRENT_APPEND.WITHOUT_HINT",
        "isolation level in the MERGE's commit: Serializable | "
        "delta.isolationLevel = WriteSerializable: refused, delta.isolationLevel must be Serializable"]


def test_the_isolation_level_is_read_from_the_newest_merge_commit(tmp_path):
    import json

    log = tmp_path / "_delta_log"
    log.mkdir()
    commits = [{"commitInfo": {"operation": "WRITE", "isolationLevel": "Serializable"}},
               {"commitInfo": {"operation": "MERGE", "isolationLevel": "WriteSerializable"}},
               {"commitInfo": {"operation": "MERGE", "isolationLevel": "Serializable"}},
               {"commitInfo": {"operation": "OPTIMIZE", "isolationLevel": "SnapshotIsolation"}}]
    for version, action in enumerate(commits):
        (log / f"{version:020d}.json").write_text(json.dumps(action) + "\n")
    assert conflicts.recorded_isolation(str(tmp_path)) == "Serializable"
    assert conflicts.recorded_isolation(str(tmp_path), "DELETE") == "none"


class _Table:
    def __init__(self):
        self.rows, self.txns = 0, {}


class _Writer:
    """Just enough of a DataFrameWriter to record what Delta's txnAppId/txnVersion rule would do."""

    def __init__(self, table, size):
        self.table, self.size, self.options = table, size, {}

    def format(self, _):
        return self

    def mode(self, _):
        return self

    def option(self, key, value):
        self.options[key] = value
        return self

    def save(self, _):
        app, version = self.options["txnAppId"], self.options["txnVersion"]
        if self.table.txns.get(app, -1) >= version:
            return  # Delta: already committed by this app id, skipped
        self.table.txns[app] = version
        self.table.rows += self.size


class _Spark:
    def __init__(self, table):
        self.read = self
        self.table = table

    def format(self, _):
        return self

    def load(self, _):
        return self

    def count(self):
        return self.table.rows


@pytest.mark.parametrize("same_version, added", [(True, 3), (False, 6)])
def test_a_retry_after_a_committed_attempt_writes_again_only_with_a_new_version(same_version, added):
    table = _Table()
    batch = type("Batch", (), {"write": property(lambda self: _Writer(table, 3))})()
    assert conflicts.retry_after_commit(_Spark(table), "t", batch, 7, same_version, "loader") == added
