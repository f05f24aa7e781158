"""Lab 05's note after exercise 3: which writer survives which crash (SQLite in memory, no broker)."""
import pytest

from deliverylab.modules.m05 import sqlreplay

ROWS = [(f"o-{n}", "10.00") for n in range(6)]


@pytest.mark.parametrize("writer, mid_write, after_commit", [
    (sqlreplay.insert_per_row, 3, 6),           # the committed first half, then the whole batch, again
    (sqlreplay.insert_one_transaction, 0, 6),   # the transaction saves the mid-write crash only
    (sqlreplay.upsert_per_row, 0, 0),           # the key saves both
    (sqlreplay.insert_with_marker, 0, 0),       # so does a batch-id marker in the data's transaction
])
def test_each_writer_after_each_crash(writer, mid_write, after_commit):
    assert sqlreplay.duplicates_after_replay(writer, ROWS, "mid-write") == mid_write
    assert sqlreplay.duplicates_after_replay(writer, ROWS, "after COMMIT") == after_commit


def test_without_a_crash_the_replay_is_the_only_second_write():
    # "after COMMIT" means the first attempt finished: every writer wrote each order once before the replay
    for writer in sqlreplay.WRITERS.values():
        assert sqlreplay.duplicates_after_replay(writer, ROWS[:1], "after COMMIT") in (0, 1)


def test_the_table_has_one_line_per_writer():
    lines = sqlreplay.table(ROWS)
    assert len(lines) == len(sqlreplay.WRITERS)
    assert lines[1].endswith("mid-write: 0 | after COMMIT: 6")
