"""m02.limits: how maxOffsetsPerTrigger shares a batch out (pure), and topics filled partition by partition."""
from __future__ import annotations

import pytest

from deliverylab.modules.m02 import limits


def test_a_big_partition_rounds_down_and_small_ones_round_up_to_one():
    # the example: 9 990, 5 and 5 waiting, limit 1000 -> 999 + 1 + 1
    assert limits.share_out(1000, {0: 9990, 1: 5, 2: 5}) == {0: 999, 1: 1, 2: 1}
    assert sum(limits.share_out(1000, {0: 9990, 1: 5, 2: 5}).values()) == 1001
    assert limits.share_out(20, {0: 198, 1: 1, 2: 1}) == {0: 19, 1: 1, 2: 1}       # lesson 02's run: 21


def test_even_partitions_can_come_out_short_of_the_limit():
    assert sum(limits.share_out(1000, {0: 500, 1: 500, 2: 500}).values()) == 999
    assert limits.share_out(200, {0: 150, 1: 250}) == {0: 75, 1: 125}


def test_two_partitions_never_go_over():
    for first in range(1, 400):
        assert sum(limits.share_out(100, {0: first, 1: 400 - first}).values()) in (99, 100)


def test_no_partition_takes_more_than_it_has_and_empty_ones_take_nothing():
    assert limits.share_out(1000, {0: 30, 1: 0, 2: 12}) == {0: 30, 1: 0, 2: 12}
    assert limits.share_out(10, {0: 0, 1: 0}) == {0: 0, 1: 0}


def test_the_limit_must_be_positive():
    with pytest.raises(ValueError):
        limits.share_out(0, {0: 5})


class FakeQuery:
    def __init__(self, rows):
        self.recentProgress = [{"batchId": i, "numInputRows": n} for i, n in enumerate(rows)]


def test_rows_per_batch_leaves_out_empty_batches():
    assert limits.rows_per_batch(FakeQuery([0, 21, 20, 19, 0])) == [21, 20, 19]
    assert limits.rows_per_batch(FakeQuery([])) == []


@pytest.mark.stack
def test_fill_then_add_a_partition(broker_up):
    from deliverylab.lesson import setup
    from deliverylab.stack import kafka

    lesson = setup("test-m02-limits", quiet=True)
    topic = lesson.topic("skewed")
    assert limits.fill_partitions(lesson.bootstrap, topic, {0: 5, 1: 1, 2: 0}) == {0: 5, 1: 1, 2: 0}
    assert limits.add_partition(lesson.bootstrap, topic) == 3
    limits.write_to_partition(lesson.bootstrap, topic, 3, 4)
    assert kafka.end_offsets(lesson.bootstrap, topic) == {0: 5, 1: 1, 2: 0, 3: 4}


def test_two_partitions_go_over_only_at_a_limit_of_one():
    # both shares below one round up: one record from each partition, 2 for a limit of 1
    assert limits.share_out(1, {0: 3, 1: 3}) == {0: 1, 1: 1}
    for limit in range(2, 60):
        for a in range(0, 80):
            for b in range(0, 80):
                if a + b > limit:
                    assert limit - 1 <= sum(limits.share_out(limit, {0: a, 1: b}).values()) <= limit
