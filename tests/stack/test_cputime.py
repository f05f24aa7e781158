"""CPU seconds of a process tree, orphans included (stack/cputime.py): pure parts, then real processes."""
import os
import sys

import pytest

from deliverylab.stack import cputime

BUSY = f"{sys.executable} -c 'import time\nt = time.process_time()\nwhile time.process_time() - t < 1: pass'"


def test_a_stat_line_is_read_after_the_command_name_whatever_it_holds():
    line = "4242 (java (main) x) S 17 4242 4242 0 -1 4194304 1 0 0 0 300 40 7 3 20 0 30 0 1 1 1"
    assert cputime.parse_stat(line) == (17, "S", 350)  # utime + stime + cutime + cstime


def test_descendants_are_the_whole_subtree_but_what_is_excluded():
    table = {2: (1, "S", 0), 3: (2, "S", 0), 4: (3, "Z", 0), 5: (1, "S", 0), 6: (2, "S", 0), 7: (6, "S", 0)}
    assert cputime.descendants(table, 2) == {3, 4, 6, 7}
    assert cputime.descendants(table, 2, exclude=frozenset({6})) == {3, 4}
    table = {3: (2, "R", 100), 4: (3, "Z", 50), 5: (1, "R", 999)}
    assert cputime.live_seconds(table, 2) == 150 / cputime.TICKS


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subreapers are Linux's")
def test_an_orphan_left_running_by_a_command_is_counted_once_it_ends():
    """The meter's process becomes a subreaper; an orphan that a command started in the background and
    left running is handed to it, and its CPU second counts whether it is still running or has ended."""
    pid = os.fork()
    if pid == 0:  # a fresh process, so the test process itself never becomes a subreaper
        meter = cputime.Meter()
        before = meter.seconds()
        code = meter.run(f"({BUSY} &); echo left it running")
        while meter.still_running():
            meter.seconds()
        spent = meter.seconds() - before
        os._exit(0 if meter.exact and code == 0 and 0.9 <= spent < 3 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
