"""Module 01's two pitfalls on the real broker: automatic commits inside poll(), and two copies of
offsets_with_data that each assign themselves every partition."""
from __future__ import annotations

import pytest

import deliverylab
from deliverylab.modules.m01 import pitfalls

ORDERS = 60


@pytest.fixture(scope="module")
def lesson():
    lesson = deliverylab.setup("test-m01-pitfalls", quiet=True)
    lesson.produce_orders(ORDERS, progress=False)
    yield lesson
    lesson.cleanup()


def test_the_next_poll_commits_a_batch_nobody_wrote(lesson):
    auto = pitfalls.auto_commit_in_poll(lesson, interval_ms=200)
    assert auto.default_on is True and auto.default_interval_ms == 5000
    assert auto.polled > 0
    assert auto.committed == auto.polled == auto.resumed_at
    assert all(line.endswith("True") for line in auto.lines()[1:])


def test_two_copies_that_assign_every_partition_both_write_everything(lesson):
    found = pitfalls.two_copies_assigned(lesson)
    assert (found.produced, found.lost, found.duplicated) == (ORDERS, 0, ORDERS)
    assert min(found.copies_of_produced) == max(found.copies_of_produced) == 2
