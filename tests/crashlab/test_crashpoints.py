"""The crash points' pure parts: names, the arming file, matching, the mid-write gate's no-op paths."""
from __future__ import annotations

from pathlib import Path

import pytest

from deliverylab import CourseError
from deliverylab.crashlab import crashpoints as cp
from deliverylab.stack import processes


def test_the_four_points_in_protocol_order():
    assert list(cp.CRASH_POINTS) == ["before_sink_write", "mid_sink_write", "after_sink_write", "after_commit"]
    assert set(cp.REPLAYED_POINTS) == set(cp.CRASH_POINTS) - {"after_commit"}


@pytest.mark.parametrize("point", list(cp.CRASH_POINTS))
def test_check_point_accepts_each_point(point):
    assert cp.check_point(point) == point


def test_unknown_point_lists_the_valid_ones():
    with pytest.raises(CourseError) as err:
        cp.check_point("after_sink")
    message = str(err.value)
    assert "'after_sink'" in message
    for point in cp.CRASH_POINTS:
        assert point in message
    assert "now" not in message.split("Valid crash points:")[1]


def test_now_only_where_allowed():
    assert cp.check_point("now", allow_now=True) == "now"
    with pytest.raises(CourseError, match="now"):
        cp.check_point("now")
    with pytest.raises(CourseError) as err:
        cp.check_point("later", allow_now=True)
    assert "now" in str(err.value).split("Valid crash points:")[1]


def test_arming_line_format():
    assert cp.arming_line("after_sink_write") == "after_sink_write next\n"
    assert cp.arming_line("mid_sink_write", 3) == "mid_sink_write 3\n"
    assert cp.arming_line("before_sink_write", 0) == "before_sink_write 0\n"


@pytest.mark.parametrize("batch", [-1, 1.5, "3", True])
def test_arming_line_rejects_bad_batches(batch):
    with pytest.raises(CourseError, match="batch"):
        cp.arming_line("after_commit", batch)


@pytest.mark.parametrize("text, expected", [
    ("after_commit 4\n", ("after_commit", "4")),
    ("mid_sink_write next", ("mid_sink_write", "next")),
    ("  before_sink_write   12  ", ("before_sink_write", "12")),
    ("", None),
    ("after_commit", None),
    ("after_commit 4 5", None),
    ("explode 4", ("explode", "4")),  # a variant may name its own points (checked when armed)
    ("Explode! 4", None),
    ("now 4", None),
    ("after_commit -1", None),
    ("after_commit later", None),
])
def test_parse_arming(text, expected):
    assert cp.parse_arming(text) == expected


def test_arm_writes_the_file_and_clears_an_old_record(tmp_path):
    crash = tmp_path / "crash"
    (tmp_path / "crash.fired").write_text("after_commit 2\n")
    cp.arm(crash, "after_sink_write", 7)
    assert crash.read_text() == "after_sink_write 7\n"
    assert cp.armed(crash) == ("after_sink_write", "7")
    assert not (tmp_path / "crash.fired").exists()
    assert not (tmp_path / "crash.tmp").exists()
    cp.arm(crash, "mid_sink_write")
    assert cp.armed(crash) == ("mid_sink_write", "next")
    cp.disarm(crash)
    assert cp.armed(crash) is None
    cp.disarm(crash)  # twice is fine


def test_arm_rejects_now_and_unknown_points(tmp_path):
    for point in ("now", "sometime"):
        with pytest.raises(CourseError):
            cp.arm(tmp_path / "crash", point)
    assert not (tmp_path / "crash").exists()


def test_fired_record(tmp_path):
    crash = tmp_path / "crash"
    assert cp.fired(crash) is None
    (tmp_path / "crash.fired").write_text("after_sink_write 3\n")
    assert cp.fired(crash) == ("after_sink_write", 3)
    (tmp_path / "crash.fired").write_text("garbage")
    assert cp.fired(crash) is None


@pytest.mark.parametrize("state, point, batch, expected", [
    (("after_commit", "next"), "after_commit", 9, True),
    (("after_commit", "4"), "after_commit", 4, True),
    (("after_commit", "4"), "after_commit", 5, False),
    (("after_commit", "next"), "after_sink_write", 9, False),
    (None, "after_commit", 1, False),
])
def test_matches(state, point, batch, expected):
    assert cp.matches(state, point, batch) is expected


def test_python_mirror_of_the_java_gate():
    java = (Path(cp.__file__).parent / "java" / "deliverylab" / "crashhook" / "MidWriteGate.java").read_text()
    assert f'NAME = "{cp.MID_WRITE_GATE}"' in java
    assert f'BATCH_ID_PROPERTY = "{cp.BATCH_ID_PROPERTY}"' in java
    assert f"PARTITION = {cp.MID_WRITE_PARTITION};" in java
    assert f"AFTER_ROWS = {cp.MID_WRITE_AFTER_ROWS};" in java
    assert f"WAIT_MS = {int(cp.MID_WRITE_WAIT_S * 1000)};" in java
    assert f"FINISHED_FIRST = {cp.MID_WRITE_FINISHED_FIRST};" in java
    assert f"WAIT_CAP_MS = {cp.MID_WRITE_WAIT_CAP_S * 1000};" in java


def test_kill_group_of_a_gone_process_is_quiet():
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    proc.wait()
    processes.kill_group(proc.pid)  # already reaped: no error


def test_kill_group_kills_the_whole_group():
    import subprocess
    import sys

    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    import time

    time.sleep(0.5)
    processes.kill_group(proc.pid)
    assert proc.wait(timeout=10) == -9
