"""Module 04: source duplicates (one id, two offsets) told apart from replay duplicates (one record, two rows)."""
from collections import Counter
from types import SimpleNamespace

import pytest

from deliverylab.config import CourseError
from deliverylab.modules.m04 import duplicates
from deliverylab.modules.m04.duplicates import classify


def test_one_id_at_two_offsets_is_a_source_duplicate():
    kinds = classify({"a": [(0, 1), (0, 2)], "b": [(1, 5)]}, Counter({"a": 2, "b": 1}))
    assert kinds.at_source == ("a",) and kinds.passed_through == ("a",)
    assert kinds.replayed == () and kinds.kind("a") == "source" and kinds.kind("b") == "not duplicated"
    assert kinds.source_extra == 1 and kinds.replay_extra == 0


def test_one_record_written_twice_is_a_replay_duplicate():
    kinds = classify({"a": [(0, 1)], "b": [(1, 5)]}, {"a": 2, "b": 1})
    assert kinds.replayed == ("a",) and kinds.at_source == () and kinds.kind("a") == "replay"
    assert kinds.replay_extra == 1 and kinds.duplicated == ("a",)


def test_both_kinds_on_one_id_and_copies_removed_in_the_stream():
    kinds = classify({"both": 2, "caught": 2, "fine": 1}, {"both": 3, "caught": 1, "fine": 1})
    assert kinds.kind("both") == "source and replay" and kinds.source_extra == 1 and kinds.replay_extra == 1
    assert kinds.removed == ("caught",) and kinds.kind("caught") == "removed in the stream"
    assert kinds.duplicated == ("both",)
    assert "(both at once: 1)" in kinds.summary()


def test_lost_and_unknown_ids_are_not_duplicates():
    kinds = classify({"lost": 1, "twice-lost": 2}, {"stranger": 1, "lost": 0})
    assert kinds.duplicated == () and kinds.unknown == ("stranger",)
    assert kinds.at_source == ("twice-lost",) and kinds.passed_through == () and kinds.removed == ()


def test_summary_is_stable_text():
    kinds = classify({"a": 2, "b": 1, "c": 1}, {"a": 2, "b": 2, "c": 2})
    assert kinds.summary().splitlines() == [
        "duplicated in the sink: 3 order ids",
        "  source (one order id at two or more offsets): 1",
        "  replay (one record, written to the sink again): 2",
        "source duplicates removed before the sink: 0",
    ]


@pytest.mark.parametrize("records, copies", [
    ([("a", 0, 1)], {}),          # a list instead of a mapping
    ({"a": "two"}, {}),            # a count that is not a number
    ({"a": 1}, {"a": -1}),         # a negative count
    ({"a": True}, {}),             # a bool is not a count
])
def test_bad_input_says_what_to_pass(records, copies):
    with pytest.raises(CourseError):
        classify(records, copies)


def test_offsets_by_id_reads_order_json():
    records = [SimpleNamespace(value=b'{"order_id": "o-1", "amount": "1.00"}', partition=0, offset=7),
               SimpleNamespace(value=b'{"order_id": "o-1", "amount": "1.00"}', partition=0, offset=8),
               SimpleNamespace(value=b'{"order_id": "o-2", "amount": "2.00"}', partition=1, offset=3)]
    assert duplicates.offsets_by_id(records) == {"o-1": [(0, 7), (0, 8)], "o-2": [(1, 3)]}


def test_published_needs_files_in_the_folder(tmp_path):
    pipe = SimpleNamespace(sink=str(tmp_path))
    (tmp_path / "part-0.parquet").write_text("x")
    assert duplicates.published(pipe, ["_temporary/0/task_1/part-0.parquet"])
    assert not duplicates.published(pipe, ["_temporary/0/task_1/part-9.parquet"])
    assert not duplicates.published(pipe, [])
