"""Module 06's micro-batch replay split into other partitions: its lines (no Spark)."""
from __future__ import annotations

from deliverylab import ledger
from deliverylab.modules.m06 import epochsplit


def test_the_lines_name_the_split_and_each_writer_s_verdict():
    produced = [("o-1", "1.00"), ("o-2", "2.00")]
    run = epochsplit.SplitReplay(True, 1, 2, [(0, 0)], ledger.reconcile(produced, produced + [("o-2", "2.00")]),
                                 ledger.reconcile(produced, produced))
    assert run.lines() == [
        "the replay of batch 0 read the same offsets: True",
        "batch 0's Spark partitions: 1 on the first run, 2 on the replay (minPartitions=2)",
        "keyed by (partition, epoch): at-least-once | duplicated 1 | pairs refused: [(0, 0)]",
        "keyed by (topic, partition, offset): exactly-once | duplicated 0"]
