"""Module 07's replay helpers that need no broker: an error's name, the clock counts, two tables' counts."""
from datetime import datetime

from deliverylab.modules.m07 import clock, kernel, twocommits

KEY_SCHEMA = ("[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: "
              "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match existing state key schema.\n"
              "Please check number and type of fields. SQLSTATE: XXKST")


def test_error_class_names_the_cause_not_the_wrapper():
    assert kernel.error_class(KEY_SCHEMA) == "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"


def test_error_class_looks_through_the_chain_of_causes():
    class Captured(Exception):
        def __init__(self, text, cause=None):
            super().__init__(text)
            self._cause = cause

    wrapped = Captured("[STREAM_FAILED] Query [id = a, runId = b] terminated with exception: [TASK_WRITE_FAILED] "
                       "Task failed while writing rows to file:/x.", Captured("[DELTA_SOMETHING] inner"))
    assert kernel.error_class(wrapped) == "DELTA_SOMETHING"


def test_an_error_without_a_name_gives_its_first_line():
    assert kernel.error_class("There are [1] sources in the checkpoint offsets and now there are [2] sources "
                              "requested by the query. Cannot continue. SQLSTATE: XXKST") == (
        "There are [1] sources in the checkpoint offsets and now there are [2] sources requested by the query. "
        "Cannot continue.")
    loss = ("[STREAM_FAILED] Query [id = a, runId = b] terminated with exception: " + kernel.KAFKA_DATA_LOSS
            + "\nReason: Partitions Set(t-0) have been deleted.")
    assert kernel.error_class(loss) == kernel.KAFKA_DATA_LOSS


def test_a_replayed_batch_keeps_the_streams_time_and_not_foreach_batchs():
    batch_time, first, replay = datetime(2026, 1, 1, 0, 0, 0), datetime(2026, 1, 1, 0, 0, 1), datetime(2026, 1, 1, 0, 0, 5)
    rows = ([(f"o-{n}", batch_time, first, f"u-{n}") for n in range(3)]
            + [(f"o-{n}", batch_time, replay, f"u-{n}" if n else "u-new") for n in range(3)])
    got = clock.count(rows)
    assert (got.rows, got.orders, got.in_stream, got.in_foreach_batch, got.new_row_ids) == (6, 3, 1, 2, 1)
    assert got.lines()[1:] == ["distinct current_timestamp() in the stream's select: 1",
                               "distinct current_timestamp() inside foreachBatch:    2",
                               "orders whose uuid() in the stream's select changed:  1"]


def test_two_tables_out_of_step_then_in_step():
    assert twocommits.lines(26, twocommits.Table(20, 1), twocommits.Table(0, 0)) == [
        "orders table:     20 rows, 1 commit", "quarantine table: 0 rows, 0 commits",
        "produced = good + quarantined: False (26 produced)"]
    assert twocommits.lines(26, twocommits.Table(20, 1), twocommits.Table(6, 1))[-1] == (
        "produced = good + quarantined: True (26 produced)")


def test_a_table_not_written_yet_has_no_rows_and_no_commits(tmp_path):
    assert twocommits.look(str(tmp_path / "none")) == twocommits.Table(0, 0)


def test_the_crash_between_the_writes_is_the_simulated_one():
    try:
        twocommits.crash_between_writes()
    except kernel.SimulatedCrash as crash:
        assert "before the quarantine" in str(crash)
    else:
        raise AssertionError("crash_between_writes did not raise")
