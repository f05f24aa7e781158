"""m02.groups and m02.ranges: where a query's progress is, and a batch's range as Spark reported it."""
from __future__ import annotations

import pytest

from deliverylab.modules.m02 import groups, ranges

from fakes import ENDS, TOPIC, make_checkpoint


def test_lag_per_partition_never_negative_and_counts_untouched_partitions_from_zero():
    assert groups.lag({0: 900, 1: 800, 2: 5}, {0: 750, 1: 850}) == {0: 150, 1: 0, 2: 5}


def test_checkpoint_lag_counts_from_the_last_committed_batch(tmp_path, monkeypatch):
    from deliverylab.stack import kafka

    monkeypatch.setattr(kafka, "end_offsets", lambda bootstrap, topic: {0: 900, 1: 800})
    ckpt = make_checkpoint(tmp_path, ENDS, committed=2)  # batch 2 planned, not committed
    assert groups.checkpoint_lag(str(ckpt), TOPIC, "127.0.0.1:1") == (900 - 500) + (800 - 500)


def test_group_lag_is_empty_without_groups(monkeypatch):
    from deliverylab.stack import kafka

    monkeypatch.setattr(kafka, "end_offsets", lambda bootstrap, topic: {0: 10})
    monkeypatch.setattr(groups, "groups_reading", lambda bootstrap, topic: {})
    assert groups.group_lag("127.0.0.1:1", TOPIC) == {}
    monkeypatch.setattr(groups, "groups_reading", lambda bootstrap, topic: {"g": {0: 4}})
    assert groups.group_lag("127.0.0.1:1", TOPIC) == {"g": 6}


def test_reported_range_reads_sparks_progress_shape():
    record = {"start_offset": {TOPIC: {"1": 105, "0": 95}}, "end_offset": {TOPIC: {"0": 190, "1": 210}}}
    assert ranges.reported_range(record, TOPIC) == {0: (95, 190), 1: (105, 210)}
    assert ranges.reported_range({"start_offset": None, "end_offset": {TOPIC: {"0": 0}}}, TOPIC) == {0: (0, 0)}
    assert ranges.reported_range(record, "another-topic") is None


def test_spark_range_picks_the_batch_of_the_run():
    class Pipe:
        topic = TOPIC

        def progress(self, run=None):
            rows = [{"run": 1, "batch": 3, "start_offset": {TOPIC: {"0": 1}}, "end_offset": {TOPIC: {"0": 2}}},
                    {"run": 2, "batch": 3, "start_offset": {TOPIC: {"0": 1}}, "end_offset": {TOPIC: {"0": 3}}}]
            return [r for r in rows if run is None or r["run"] == run]

    assert ranges.spark_range(Pipe(), 3, run=1) == {0: (1, 2)}
    assert ranges.spark_range(Pipe(), 3) == {0: (1, 3)}
    assert ranges.spark_range(Pipe(), 4) is None


@pytest.mark.parametrize("value, expected", [
    ({0: (1, 2)}, {0: (1, 2)}),
    ({"1": [3, 4], 0: (1, 2)}, {0: (1, 2), 1: (3, 4)}),
    ({0: (1, 2.0)}, None), ({0: (True, 2)}, None), ({0: (1,)}, None), ({"p0": (1, 2)}, None), ({}, None), ([1, 2], None),
])
def test_as_range(value, expected):
    assert ranges.as_range(value) == expected


@pytest.mark.stack
def test_only_a_committing_consumer_shows_up_as_a_group(broker_up):
    import deliverylab
    from deliverylab.stack import kafka

    lesson = deliverylab.setup("test-m02-groups", quiet=True)
    topic = lesson.topic("orders")
    kafka.ensure_topic(lesson.bootstrap, topic)
    lesson.produce_orders(30, progress=False)
    assert groups.groups_reading(lesson.bootstrap, topic) == {}
    group = lesson.topic("plain")
    committed = groups.read_and_commit(lesson.bootstrap, topic, group)
    assert committed == kafka.end_offsets(lesson.bootstrap, topic) and sum(committed.values()) == 30
    assert groups.groups_reading(lesson.bootstrap, topic) == {group: committed}
    assert groups.group_lag(lesson.bootstrap, topic) == {group: 0}
    lesson.produce_orders(5, start=30, progress=False)
    assert groups.group_lag(lesson.bootstrap, topic) == {group: 5}
    assert group not in groups.spark_named_groups(lesson.bootstrap)
    kafka.delete_group(lesson.bootstrap, group)
