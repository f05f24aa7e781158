"""Lab 04's checks accept the right answers and reject planted wrong ones.

The pure tests build each exercise's values by hand; the `stack` test runs real planted
wrong dedupe() functions through the trial, in Spark, and checks that they fail.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks
from deliverylab.modules.m04 import lab, trial
from deliverylab.modules.m04.duplicates import classify
from deliverylab.modules.m04.watermarks import state_history


def statuses(checks):
    return {r.description: r.status for r in checks.results}


@pytest.fixture
def checks():
    return Checks("04-at-least-once-lab", record=False)


# --------------------------------------------------------------------------- exercise 1


def crash_values(variant="at_least_once", point="after_sink_write", retried=("o-000025",)):
    pipe = SimpleNamespace(variant=SimpleNamespace(name=variant), running=True, status_line=lambda: "running")
    report = SimpleNamespace(retried=list(retried), line=lambda: f"{len(retried)} retried")
    return pipe, SimpleNamespace(point=point), report


def test_exercise_1_right_answer(checks, monkeypatch):
    monkeypatch.setattr(lab, "_caught_up", lambda pipe: True)
    pipe, crash, report = crash_values()
    lab.check_crash(checks, lambda: pipe, lambda: crash, lambda: report)
    assert set(statuses(checks).values()) == {"PASS"}


def test_exercise_1_rejects_the_wrong_point_a_dedup_pipeline_and_no_retry(checks, monkeypatch):
    monkeypatch.setattr(lab, "_caught_up", lambda pipe: False)
    pipe, crash, report = crash_values("dedup_within_watermark", "after_commit", retried=())
    lab.check_crash(checks, lambda: pipe, lambda: crash, lambda: report)
    got = statuses(checks)
    assert got["the pipeline is the plain append (at_least_once)"] == "FAIL"
    assert got["the driver died after the sink write"] == "FAIL"
    assert got["at least one reply was lost, so the producer sent an order twice"] == "FAIL"
    assert got["the restarted pipeline has caught up with its topic"] == "SKIP"  # depends on the crash point


def test_exercise_1_rejects_a_pipeline_left_down(checks, monkeypatch):
    monkeypatch.setattr(lab, "_caught_up", lambda pipe: False)
    pipe, crash, report = crash_values()
    pipe.running = False
    lab.check_crash(checks, lambda: pipe, lambda: crash, lambda: report)
    assert statuses(checks)["the restarted pipeline has caught up with its topic"] == "FAIL"


# --------------------------------------------------------------------------- exercise 2

# o-1: retried by the producer (two offsets, two rows); o-2, o-3: in the crashed batch (one offset, two rows)
OFFSETS = {"o-1": [(0, 1), (0, 2)], "o-2": [(1, 4)], "o-3": [(0, 3)], "o-4": [(1, 5)]}
COPIES = {"o-1": 2, "o-2": 2, "o-3": 2, "o-4": 1}
TRUTH = classify(OFFSETS, COPIES)


def kinds_statuses(checks, source_ids, replay_ids):
    lab.check_duplicate_kinds(checks, lambda: source_ids, lambda: replay_ids, lambda: TRUTH)
    got = statuses(checks)
    return (got["source_ids: the orders at more than one offset of the topic"],
            got["replay_ids: the orders with more rows in the sink than records in the topic"])


def test_exercise_2_right_answer(checks):
    assert kinds_statuses(checks, {"o-1"}, ["o-2", "o-3"]) == ("PASS", "PASS")


@pytest.mark.parametrize("source_ids, replay_ids, expected", [
    # every duplicate in the sink taken for a replay
    ({"o-1"}, {"o-1", "o-2", "o-3"}, ("PASS", "FAIL")),
    # the sink's duplicates taken for the producer's
    ({"o-1", "o-2", "o-3"}, {"o-2", "o-3"}, ("FAIL", "PASS")),
    # the two swapped
    ({"o-2", "o-3"}, {"o-1"}, ("FAIL", "FAIL")),
])
def test_exercise_2_rejects_planted_wrong_answers(checks, source_ids, replay_ids, expected):
    assert kinds_statuses(checks, source_ids, replay_ids) == expected


def test_exercise_2_refuses_a_single_id_string(checks):
    assert kinds_statuses(checks, "o-1", {"o-2", "o-3"})[0] == "FAIL"


# --------------------------------------------------------------------------- exercise 3

PRODUCED = [(f"o-{n}", "10.00") for n in range(400)]
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def fake_trial(rows, states, watermarks=True):
    progress = [{"batch": b, "rows": 99, "state_rows": s, "state_dropped": 0,
                 "watermark": (T0 + timedelta(minutes=b)).isoformat() if watermarks else None}
                for b, s in enumerate(states)]
    return trial.TrialResult(produced=[{"order_id": i, "amount": a} for i, a in PRODUCED], records=410, rows=rows,
                             history=state_history(progress), ledger=ledger.reconcile(PRODUCED, rows))


RIGHT = fake_trial(PRODUCED, [97, 193, 219, 213, 136, 121])
NO_DEDUP = fake_trial(PRODUCED + PRODUCED[:10], [], watermarks=False)           # orders as they came
NO_WATERMARK = fake_trial(PRODUCED, [97, 193, 290, 386, 400], watermarks=False)  # dropDuplicates(["order_id"])
ID_ONLY = fake_trial(PRODUCED, [97, 193, 290, 386, 400, 400])                    # watermark, key without time
TOO_EAGER = fake_trial(PRODUCED[5:], [90, 91, 97, 90, 14, 0])                    # rows dropped as too late

DEDUPE_CHECKS = ("no order reached the sink twice", "no order was lost", "the query has a watermark",
                 "the dedup state lets go of old orders")


def dedupe_statuses(checks, result):
    lab.check_dedupe(checks, lambda: result)
    got = statuses(checks)
    return tuple(got[d] for d in DEDUPE_CHECKS)


def test_exercise_3_right_answer(checks):
    assert dedupe_statuses(checks, RIGHT) == ("PASS",) * 4


@pytest.mark.parametrize("result, expected", [
    (NO_DEDUP, ("FAIL", "PASS", "FAIL", "FAIL")),
    (NO_WATERMARK, ("PASS", "PASS", "FAIL", "FAIL")),
    (ID_ONLY, ("PASS", "PASS", "PASS", "FAIL")),
    (TOO_EAGER, ("PASS", "FAIL", "PASS", "PASS")),
])
def test_exercise_3_rejects_planted_wrong_answers(checks, result, expected):
    assert dedupe_statuses(checks, result) == expected


# --------------------------------------------------------------------------- exercise 4

EVENT_TIMES = ["2026-01-01T00:00:03Z", "2026-01-01T00:06:40Z", "2026-01-01T00:03:00Z"]
SPARKS = fake_trial(PRODUCED, [97, 121])
SPARKS.history[-1]["watermark"] = datetime(2026, 1, 1, 0, 5, 40, tzinfo=timezone.utc)


def watermark_status(checks, answer):
    lab.check_dedupe(checks, lambda: SPARKS)
    lab.check_watermark(checks, lambda: answer, lambda: SPARKS)
    return statuses(checks)["your watermark is the one Spark used in the last batch"]


def test_exercise_4_right_answer_as_datetime_or_text(checks):
    assert watermark_status(checks, datetime(2026, 1, 1, 0, 5, 40, tzinfo=timezone.utc)) == "PASS"
    assert watermark_status(checks, "2026-01-01T00:05:40Z") == "PASS"
    assert watermark_status(checks, datetime(2026, 1, 1, 0, 5, 40)) == "PASS"  # naive: read as UTC


@pytest.mark.parametrize("wrong", [
    datetime(2026, 1, 1, 0, 6, 40, tzinfo=timezone.utc),                  # the latest event time, no delay
    datetime.now(timezone.utc) - timedelta(minutes=1),                    # the clock on the wall
    datetime(2026, 1, 1, 0, 0, 3, tzinfo=timezone.utc) - timedelta(minutes=1),  # the earliest event time
])
def test_exercise_4_rejects_planted_wrong_answers(checks, wrong):
    assert watermark_status(checks, wrong) == "FAIL"


def test_exercise_4_skips_without_a_watermark(checks):
    lab.check_dedupe(checks, lambda: NO_WATERMARK)
    lab.check_watermark(checks, lambda: "2026-01-01T00:05:40Z", lambda: NO_WATERMARK)
    assert statuses(checks)["your watermark is the one Spark used in the last batch"] == "SKIP"
