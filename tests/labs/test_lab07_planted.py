"""Lab 07, exercise 2, with planted classifiers run over the real poison-pill stream (make test-labs):
each wrong one ends in FAIL with a hint and no stack trace on stderr; the solution passes."""
from __future__ import annotations

import pytest

from deliverylab.checks import Checks
from deliverylab.modules.m07 import lab, quarantine

pytestmark = [pytest.mark.stack, pytest.mark.labs]

SCHEMA = "order_id STRING, customer_id STRING, amount STRING, status STRING, event_time STRING, _corrupt_record STRING"


def parsed(records):
    from pyspark.sql import functions as F

    raw = F.col("value").cast("string")
    return (records.select(raw.alias("raw"), "partition", "offset",
                           F.from_json(raw, SCHEMA, {"columnNameOfCorruptRecord": "_corrupt_record"}).alias("o"))
            .select("raw", "partition", "offset", "o.*"))


def reasons(*checks):
    from pyspark.sql import functions as F

    reason = F.when(F.coalesce(F.length("raw"), F.lit(0)) == 0, "empty")
    for condition, text in checks:
        reason = reason.when(condition, text)
    return reason


def right(records):
    from pyspark.sql import functions as F

    return parsed(records).withColumn("reason", reasons(
        (F.col("_corrupt_record").isNotNull(), "not JSON"), (F.col("order_id").isNull(), "no order_id"),
        (F.expr("try_cast(amount AS DECIMAL(10,2))").isNull(), "bad amount"),
        (F.expr("try_cast(event_time AS TIMESTAMP)").isNull(), "bad event_time")))


def lets_bad_amounts_through(records):  # the amount is never checked: the orders table cannot take 'forty'
    from pyspark.sql import functions as F

    return parsed(records).withColumn("reason", reasons(
        (F.col("_corrupt_record").isNotNull(), "not JSON"), (F.col("order_id").isNull(), "no order_id")))


def filters_instead_of_classifying(records):  # bad records dropped, not quarantined
    from pyspark.sql import functions as F

    return (right(records).filter("reason IS NULL")
            .withColumn("reason", F.lit(None).cast("string")))


def casts_in_the_classifier(records):  # a cast that raises on the bad amount (ANSI mode)
    from pyspark.sql import functions as F

    return (parsed(records).withColumn("amount", F.col("amount").cast("decimal(10,2)"))
            .withColumn("reason", reasons((F.col("order_id").isNull(), "no order_id"))))


@pytest.fixture(scope="module")
def lesson():
    import deliverylab

    lesson = deliverylab.setup("test-lab07-planted", quiet=True)
    yield lesson
    lesson.cleanup()


def run(lesson, classify):
    from deliverylab.stack.session import get_spark

    routed = quarantine.run(get_spark(), lesson, f"planted-{classify.__name__}".replace("_", "-"), classify)
    checks = Checks("07-what-breaks-lab", record=False)
    lab.check_quarantine(checks, lambda: routed)
    return {r.description: r.status for r in checks.results}, checks


def test_the_right_classifier_passes(lesson):
    statuses, _ = run(lesson, right)
    assert set(statuses.values()) == {"PASS"}, statuses


@pytest.mark.parametrize("classify", [lets_bad_amounts_through, filters_instead_of_classifying,
                                      casts_in_the_classifier])
def test_a_planted_classifier_fails_with_a_hint_and_no_trace(lesson, classify, capfd):
    statuses, checks = run(lesson, classify)
    assert "FAIL" in statuses.values(), statuses
    for result in checks.results:
        if result.status == "FAIL":
            assert any(line.strip().startswith("hint:") for line in result.lines), result.lines
    assert len(capfd.readouterr().err) < 2000  # no KBs of JVM stack on the learner's screen
