"""m02.tracking: what each batch read, from a query's progress reports (pure, no Spark)."""
from __future__ import annotations

import json

from deliverylab.modules.m02 import tracking

TOPIC = "xo.ana.tracked"


def report(batch: int, rows: int, start, end, topic: str = TOPIC) -> dict:
    return {"batchId": batch, "numInputRows": rows,
            "sources": [{"description": f"KafkaV2[Subscribe[{topic}]]", "startOffset": start, "endOffset": end}]}


def test_batches_with_rows_in_batch_order_with_their_ranges():
    progress = [report(1, 10, {TOPIC: {"0": 10}}, {TOPIC: {"0": 20}}),
                report(0, 10, None, {TOPIC: {"0": 10}}),
                report(2, 0, {TOPIC: {"0": 20}}, {TOPIC: {"0": 20}})]       # a report while waiting: no rows
    assert tracking.batches_read(progress, TOPIC) == [
        {"batch": 0, "rows": 10, "range": {0: (0, 10)}},
        {"batch": 1, "rows": 10, "range": {0: (10, 20)}}]


def test_offsets_given_as_json_text_and_other_topics_ignored():
    progress = [report(1, 20, json.dumps({TOPIC: {"0": 10}}), json.dumps({TOPIC: {"0": 30}})),
                report(3, 5, {"another": {"0": 1}}, {"another": {"0": 6}}, topic="another")]
    assert tracking.batches_read(progress, TOPIC) == [{"batch": 1, "rows": 20, "range": {0: (10, 30)}}]


def test_a_batch_reported_twice_keeps_its_last_report():
    progress = [report(4, 3, {TOPIC: {"0": 0}}, {TOPIC: {"0": 3}}), report(4, 5, {TOPIC: {"0": 0}}, {TOPIC: {"0": 5}})]
    assert tracking.batches_read(progress, TOPIC) == [{"batch": 4, "rows": 5, "range": {0: (0, 5)}}]


def test_pyspark_progress_objects_are_read_through_their_json():
    class Progress:
        json = json.dumps(report(0, 10, None, {TOPIC: {"0": 10}}))

    assert tracking.batches_read([Progress()], TOPIC) == [{"batch": 0, "rows": 10, "range": {0: (0, 10)}}]


def test_describe_one_line():
    batches = [{"batch": 0, "rows": 10, "range": {0: (0, 10)}}, {"batch": 1, "rows": 20, "range": {0: (10, 30)}}]
    assert tracking.describe(batches) == "batch 0: 10 rows (offsets 0-10); batch 1: 20 rows (offsets 10-30)"
    assert tracking.describe([{"batch": 2, "rows": 4, "range": {0: (1, 3), 1: (5, 7)}}]) == \
        "batch 2: 4 rows (partition 0 offsets 1-3, partition 1 offsets 5-7)"
    assert tracking.describe([]) == "no batch read records"


# --------------------------------------------------------------------------- asynctracking's lines (no Spark)
from deliverylab.modules.m02 import asynctracking  # noqa: E402


def test_a_refused_restart_is_named_by_the_missing_batch_without_the_query_ids():
    text = ("[STREAM_FAILED] Query [id = 1a, runId = 2b] terminated with exception: batch 2 doesn't exist "
            "SQLSTATE: XXKST\nJVM stacktrace: ...")
    assert asynctracking.failure_line(text) == "batch 2 doesn't exist"
    assert asynctracking.failure_line("Something else went wrong\nmore") == "Something else went wrong"


def test_the_runs_print_their_batches_and_files_in_order():
    one = [{"batch": 0, "rows": 10, "range": {0: (0, 10)}}]
    runs = asynctracking.SwitchOff(one, ({0, 3}, {3, 0}), "batch 2 doesn't exist", 2,
                                   [{"batch": 4, "rows": 20, "range": {0: (40, 60)}}], ({0, 3, 4}, {0, 3, 4}), one)
    lines = runs.lines()
    assert lines[1].endswith("offsets [0, 3] commits [0, 3]")
    assert lines[2].endswith("batch 2 doesn't exist") and lines[3].endswith(": 2")
    assert lines[4].endswith("batch 4: 20 rows (offsets 40-60)")
