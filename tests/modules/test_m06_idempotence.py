"""Module 06: Spark's Kafka sink and idempotence, the pieces that need no broker.

The runs themselves (the sink's producer with no options, with kafka.acks=1, with
enable.idempotence=true and acks=1; the same rows written twice through one cached producer)
are lesson 06's checked cells (nbval); they are not run a second time here.
"""
import pytest

from deliverylab.config import CourseError
from deliverylab.modules import m06
from deliverylab.modules.m06 import idempotence


def test_options_are_labelled_as_written():
    assert idempotence.options_label({}) == "no producer options"
    assert idempotence.options_label({"kafka.acks": "1"}) == "kafka.acks=1"
    both = {"kafka.enable.idempotence": "true", "kafka.acks": "1"}
    assert idempotence.options_label(both) == "kafka.enable.idempotence=true, kafka.acks=1"
    with pytest.raises(CourseError, match="as a dict"):
        idempotence.options_label("kafka.acks=1")


def test_the_kafka_error_is_found_in_sparks_error_text():
    text = ("An error occurred while calling o123.save.\n: org.apache.spark.SparkException: Job aborted due to "
            "stage failure: Task 0 in stage 3.0 failed 1 times, most recent failure: Lost task 0.0 (TID 3) "
            "(localhost executor driver): org.apache.kafka.common.config.ConfigException: Must set acks to all "
            "in order to use the idempotent producer. Otherwise we cannot guarantee idempotence.\n"
            "\tat org.apache.kafka.clients.producer.ProducerConfig.postProcessAndValidateIdempotenceConfigs")
    assert idempotence.kafka_error(text) == "ConfigException"
    assert idempotence.kafka_error("org.apache.kafka.common.errors.TimeoutException: Topic t not present") \
        == "TimeoutException"
    assert idempotence.kafka_error("java.lang.NullPointerException") is None
    assert idempotence.kafka_error("") is None and idempotence.kafka_error(None) is None


def test_sink_lines_read_well():
    assert idempotence.SinkCheck("no producer options", None, 1).line().endswith("idempotent: yes | the write succeeds")
    assert idempotence.SinkCheck("kafka.acks=1", None, 0).line().endswith("idempotent: no | the write succeeds")
    failed = idempotence.SinkCheck("kafka.enable.idempotence=true, kafka.acks=1", "ConfigException")
    assert not failed.idempotent and failed.line().endswith("the write fails: ConfigException")


def test_written_twice_summary():
    twice = idempotence.WrittenTwice(5, {f"o-{i}": 2 for i in range(5)}, 1)
    assert twice.summary().splitlines() == ["orders written, twice: 5", "copies of each order in the topic: 2",
                                            "idempotent producers the broker holds for the topic: 1"]
    uneven = idempotence.WrittenTwice(2, {"o-1": 1, "o-2": 2}, 2)
    assert "copies of each order in the topic: 1/2" in uneven.summary()


def test_written_twice_wants_a_count(monkeypatch):
    for bad in (0, -1, 2.5, True):
        with pytest.raises(CourseError, match="whole number"):
            idempotence.written_twice(None, None, bad)


def test_the_package_maps_the_file():
    assert m06.idempotence is idempotence
