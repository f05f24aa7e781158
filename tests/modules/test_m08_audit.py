"""Lesson 08's retention lines (how far back history() reaches, which LogStore S3 gets), without Spark."""
from deliverylab.modules.m08 import audit

DEFAULTS = {"set on the table": None, "default": "interval 30 days", "cleanup default": "true",
            "s3 log store": "io.delta.storage.S3SingleDriverLogStore"}


def test_a_table_without_the_property_reports_deltas_defaults():
    assert audit.retention_lines(DEFAULTS) == [
        "delta.logRetentionDuration set on this table: no",
        "delta.logRetentionDuration, Delta's default: interval 30 days",
        "delta.enableExpiredLogCleanup, Delta's default: true",
        "Delta's LogStore for s3a:// tables unless configured: S3SingleDriverLogStore"]


def test_a_table_that_sets_the_property_shows_its_own_value():
    own = dict(DEFAULTS, **{"set on the table": "interval 365 days"})
    assert audit.retention_lines(own)[0] == "delta.logRetentionDuration set on this table: interval 365 days"
