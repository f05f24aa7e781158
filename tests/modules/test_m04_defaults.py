"""Module 04: the kafka-python producer's idempotence check, its labels and lines (no broker).

That a default producer is idempotent, that acks=1 or retries=0 switch idempotence off without an
error, and that enable_idempotence=True with acks=1 raises, is lesson 04's checked cell (nbval)
on the real broker; it is not run a second time here.
"""
import pytest

from deliverylab.config import CourseError
from deliverylab.modules import m04
from deliverylab.modules.m04 import defaults


def test_labels_name_the_settings():
    assert defaults.label({}) == "defaults"
    assert defaults.label(dict(acks=1)) == "acks=1"
    assert defaults.label(dict(enable_idempotence=True, acks="all")) == "enable_idempotence=True, acks='all'"
    with pytest.raises(CourseError, match="as a dict"):
        defaults.label(["acks", 1])


def test_a_producer_is_idempotent_only_when_the_broker_holds_its_id():
    assert defaults.IdempotenceCheck("defaults", None, 1).idempotent
    assert not defaults.IdempotenceCheck("acks=1", None, 0).idempotent
    assert not defaults.IdempotenceCheck("x", "KafkaConfigurationError").idempotent


def test_lines_read_well():
    assert defaults.IdempotenceCheck("defaults", None, 1).line() == f"{'defaults':<34} idempotent: yes | error: none"
    assert defaults.IdempotenceCheck("acks=1", None, 0).line().endswith("idempotent: no | error: none")
    refused = defaults.IdempotenceCheck("enable_idempotence=True, acks=1", "KafkaConfigurationError")
    assert refused.line().endswith("no producer: KafkaConfigurationError")


def test_the_package_maps_the_file():
    assert m04.defaults is defaults
