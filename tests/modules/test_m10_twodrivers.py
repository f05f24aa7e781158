"""Module 10's two-driver run: its lines, its gate and its count of Delta commits (no Spark, no JVM)."""
from __future__ import annotations

import json
import threading

from deliverylab import ledger
from deliverylab.modules.m10 import twodrivers


def test_the_gate_holds_the_first_row_once_until_released(tmp_path):
    gate = twodrivers.Gate(tmp_path / "gate")
    args = (str(gate.arrived), str(gate.released), str(gate.armed))
    waiter = threading.Thread(target=twodrivers.pass_gate, args=args)
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive() and gate.arrived.exists() and not gate.armed.exists()
    twodrivers.pass_gate(*args)            # a later row: the gate is no longer armed, it passes at once
    gate.release()
    waiter.join(5)
    assert not waiter.is_alive()


def test_the_temporary_metadata_name_matches_and_the_final_one_does_not():
    import re

    assert re.fullmatch(twodrivers.TEMP_METADATA, "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b.metadata.json")
    assert re.fullmatch(twodrivers.TEMP_METADATA, "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b.gz.metadata.json")
    assert not re.fullmatch(twodrivers.TEMP_METADATA, "v12.metadata.json")
    assert not re.fullmatch(twodrivers.TEMP_METADATA, "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b-m0.avro")


def test_delta_commits_of_a_batch_count_the_txn_of_that_query_and_batch(tmp_path):
    log = tmp_path / "_delta_log"
    log.mkdir()
    for version, txn in enumerate([{"appId": "q", "version": 0}, {"appId": "q", "version": 1},
                                   {"appId": "other", "version": 1}]):
        (log / f"{version:020d}.json").write_text(json.dumps({"txn": txn}) + "\n")
    assert twodrivers._delta_commits_of(str(tmp_path), "q", 1) == 1


def test_the_lines_say_what_each_sink_did_with_the_second_driver():
    doubled = ledger.reconcile([("o-1", "1.00"), ("o-2", "2.00")], [("o-1", "1.00"), ("o-2", "2.00"), ("o-2", "2.00")])
    run = twodrivers.TwoDrivers("iceberg", True, True, 2, "CONCURRENT_STREAM_LOG_UPDATE", doubled, True)
    lines = run.lines()
    assert lines[0].endswith(": True")
    assert lines[1] == ("Iceberg's sink: commits of batch 0 in the table: 2 | the notebook's query: "
                        "CONCURRENT_STREAM_LOG_UPDATE")
    assert lines[2].endswith("| the duplicates are batch 0's orders")
    once = twodrivers.TwoDrivers("delta", True, False, 1, "DELTA_CONCURRENT_TRANSACTION",
                                 ledger.reconcile([("o-1", "1.00")], [("o-1", "1.00")]), False)
    assert once.lines()[0].endswith(": False") and once.lines()[0].startswith("Delta's sink")


def test_the_catalog_settings_name_what_the_java_gate_reads():
    from pathlib import Path

    import deliverylab.crashlab

    java = (Path(deliverylab.crashlab.__file__).parent / "java" / "deliverylab" / "crashhook"
            / "CommitGateFileSystem.java").read_text()
    assert twodrivers.GATE_CLASS == "deliverylab.crashhook.CommitGateFileSystem"
    assert 'FOLDER = "deliverylab.gate.folder"' in java and 'PATTERN = "deliverylab.gate.pattern"' in java
    assert 'new File(folder, "armed")' in java and '"arrived"' in java and '"released"' in java
