"""Lesson 07's topic-change cell, its pure side: which data loss the driver reported, in a stable line."""
from deliverylab.modules.m07 import topicchanges

SPARK_SAYS = ("[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Some data may have been lost because "
              "they are not available in Kafka any more;\neither the data was aged out by Kafka or the topic may have "
              "been deleted before all the data in the\ntopic was processed.\nReason: {} SQLSTATE: XXKST")


class Failed(Exception):
    pass


def test_deleted_partitions_are_named_without_the_prefix_and_sorted():
    error = Failed(SPARK_SAYS.format("Partitions Set(xo.ada.07.tc-added-1, xo.ada.07.tc-first-0, xo.ada.07.tc-added-0) "
                                     "have been deleted."))
    assert topicchanges.reason(error, "xo.ada.07.") == (
        "data loss: Partitions Set(tc-added-0, tc-added-1, tc-first-0) have been deleted.")


def test_an_added_partition_that_does_not_start_at_zero():
    error = Failed(SPARK_SAYS.format("Added partition xo.ada.07.tc-trimmed-0 starts from 10 instead of 0."))
    assert topicchanges.reason(error, "xo.ada.07.") == "data loss: Added partition tc-trimmed-0 starts from 10 instead of 0."


def test_any_other_error_is_named_by_its_class():
    assert topicchanges.reason(Failed("[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] no")) == "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"
