"""The test run's phases and its closing report (deliverylab/testrun.py)."""
import pytest

from deliverylab import testrun
from deliverylab.testrun import Phase

JUNIT = """<testsuites><testsuite>
<testcase classname="tests.stack.test_broker" name="test_up" file="tests/stack/test_broker.py" time="12.5"/>
<testcase classname="tests.test_ledger" name="test_pure" time="0.01"/>
<testcase classname="tests.crashlab.test_chaos" name="test_grid[x]" file="tests/crashlab/test_chaos.py" time="40"/>
</testsuite></testsuites>"""


def test_a_phase_is_a_name_and_a_command():
    assert testrun.parse_phase("unit tests: pytest -m 'not x' tests", "phase") == \
        Phase("unit tests", "pytest -m 'not x' tests", "phase")
    with pytest.raises(SystemExit, match="name: command"):
        testrun.parse_phase("pytest tests", "phase")


def test_the_table_shows_wall_and_cpu_seconds_and_the_run_before():
    phases = [Phase("setup", "x", "first", 100.0, 150.0, "passed"), Phase("unit", "y", "phase", 200.0, 380.0, "failed (exit 1)"),
              Phase("down", "z", "finally", 2.0, 1.0, "passed")]
    table = testrun.phase_table(phases, previous={"setup": 160.0, "unit": 500.0, "down": 2.0})
    assert table[0].split() == ["phase", "wall", "s", "CPU", "s", "CPU/wall", "CPU", "s", "before", "status"]
    assert table[3].split() == ["unit", "200", "380", "1.90", "500", "failed", "(exit", "1)"]
    assert table[-1].split() == ["in", "all", "302", "531", "1.76", "662", "FAILED"]
    partly = testrun.phase_table(phases, previous={"setup": 160.0})  # another set of phases: no sum before
    assert partly[2].split()[-2] == "160" and partly[-1].split() == ["in", "all", "302", "531", "1.76", "FAILED"]
    assert testrun.phase_table(phases[:1], hog_s=99.6)[-1] == \
        "(a busy process held 1.00 of a core throughout: 100 CPU s, not counted above)"


def test_a_phase_not_run_is_left_out_of_the_sums():
    phases = [Phase("setup", "x", "first", 10.0, 5.0, "failed (exit 2)"), Phase("unit", "y")]
    assert testrun.phase_table(phases)[-1].split()[:4] == ["in", "all", "10", "5"]


def test_the_slowest_tests_come_from_the_junit_report():
    assert testrun.slowest_tests(JUNIT, 2) == [(40.0, "tests/crashlab/test_chaos.py::test_grid[x]"),
                                               (12.5, "tests/stack/test_broker.py::test_up")]
    assert testrun.slowest_tests(JUNIT)[-1] == (0.01, "tests/test_ledger.py::test_pure")


def test_a_failed_first_phase_stops_the_run_and_finally_still_runs():
    class Meter:
        def __init__(self):
            self.ran = []

        def seconds(self):
            return 0.0

        def run(self, command):
            self.ran.append(command)
            return 0 if command != "broken" else 2

    meter, said = Meter(), []
    phases = [Phase("setup", "broken", "first"), Phase("unit", "pytest"), Phase("down", "stop", "finally")]
    assert testrun.run(phases, meter, say=lambda *a, **k: said.append(a[0])) is False
    assert meter.ran == ["broken", "stop"] and [p.status for p in phases] == ["failed (exit 2)", "not run", "passed"]
    assert "setup failed (exit 2): the phases after it cannot run" in said
