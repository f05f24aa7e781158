"""Lesson 06's transaction-protocol cell, its pure side (the real one runs in the lesson under nbval)."""
from deliverylab.modules.m06 import txversions


class Features:
    def __init__(self, answer):
        self.answer = answer

    def describe_features(self):
        return self.answer


def test_the_finalized_level_is_the_top_of_the_broker_s_finalized_range():
    answer = {"transaction.version": {"supported": (0, 2), "finalized": (2, 2), "finalized_epoch": 7}}
    assert txversions.finalized_version(Features(answer)) == 2
    assert txversions.finalized_version(Features({})) is None  # a broker that does not report it


def test_the_lines_say_the_version_and_how_many_ids_and_epochs():
    v1 = txversions.TxProtocol(transaction_version=2, commits=3, producer_ids=1, epochs=(0, 0, 0))
    assert v1.lines() == ["transaction.version finalized on this broker: 2",
                          "one kafka-python transactional producer, 3 commits: producer ids 1, distinct epochs 1"]
    v2 = txversions.TxProtocol(transaction_version=2, commits=3, producer_ids=1, epochs=(1, 2, 3))
    assert v2.lines()[1].endswith("distinct epochs 3")
