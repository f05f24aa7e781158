"""Lab 04, exercises 3 and 4, with real trials (make test-labs): the right dedupe passes; no dedup, no
watermark, and a watermark with a key without event time FAIL where they should."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from deliverylab.checks import Checks
from deliverylab.modules.m04 import lab, trial

pytestmark = [pytest.mark.stack, pytest.mark.labs]

DEDUPE_CHECKS = ("no order reached the sink twice", "no order was lost", "the query has a watermark",
                 "the dedup state lets go of old orders")


def statuses(checks):
    return {r.description: r.status for r in checks.results}


def dedupe_statuses(checks, result):
    lab.check_dedupe(checks, lambda: result)
    got = statuses(checks)
    return tuple(got[d] for d in DEDUPE_CHECKS)


def watermark_status(checks, answer, result):
    lab.check_watermark(checks, lambda: answer, lambda: result)
    return statuses(checks)["your watermark is the one Spark used in the last batch"]


# --------------------------------------------------------------------------- real planted answers


WRONG_DEDUPES = {
    "no dedup": (lambda orders: orders, ("FAIL", "PASS", "FAIL", "FAIL")),
    "no watermark": (lambda orders: orders.dropDuplicates(["order_id"]), ("PASS", "PASS", "FAIL", "FAIL")),
    "watermark, key without event time": (
        lambda orders: orders.withWatermark("event_time", "1 minute").dropDuplicates(["order_id"]),
        ("PASS", "PASS", "PASS", "FAIL")),
}


def test_real_trials_of_the_right_and_wrong_dedupes(broker_up):
    import deliverylab

    lesson = deliverylab.setup("test-m04-lab", quiet=True)
    right = trial.run(lambda o: o.withWatermark("event_time", "1 minute").dropDuplicates(["order_id", "event_time"]),
                      lesson)
    assert right.records == trial.ORDERS + 10  # the producer's retries are in the topic
    checks = Checks("04-at-least-once-lab", record=False)
    assert dedupe_statuses(checks, right) == ("PASS",) * 4
    assert watermark_status(checks, max(datetime.fromisoformat(t.replace("Z", "+00:00"))
                                        for t in right.event_times) - timedelta(minutes=1), right) == "PASS"
    for name, (dedupe, expected) in WRONG_DEDUPES.items():
        checks = Checks("04-at-least-once-lab", record=False)
        assert dedupe_statuses(checks, trial.run(dedupe, lesson)) == expected, name
    lesson.cleanup()
