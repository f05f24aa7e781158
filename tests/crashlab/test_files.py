"""The files a driver and the notebook share: atomic writes, assignments, the one-driver lock."""
import subprocess
import sys
import time

import pytest

from deliverylab.crashlab import files


def test_an_assignment_round_trips_and_a_missing_one_is_none(tmp_path):
    home = files.DriverHome(tmp_path)
    assert home.read_assignment() is None
    home.assign({"run": 3, "variant": "delta_sink"})
    assert home.read_assignment() == {"run": 3, "variant": "delta_sink"}
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed into place


def test_no_holder_until_a_driver_takes_the_lock(tmp_path):
    folder = files.PipelineFolder(tmp_path)
    assert folder.holder() is None
    with files.hold_lock(folder):
        assert folder.pid.read_text().strip().isdigit()
        # a second holder in the same process is refused too (flock locks are per open file)
        with pytest.raises(files.LockHeld):
            with files.hold_lock(folder):
                pass
    assert folder.holder() is None


def test_the_lock_names_the_process_that_holds_it_and_dies_with_it(tmp_path):
    code = ("import sys, time; from pathlib import Path; from deliverylab.crashlab import files\n"
            "with files.hold_lock(files.PipelineFolder(Path(sys.argv[1]))):\n"
            "    print('held', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        assert files.PipelineFolder(tmp_path).holder() == proc.pid
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 5
    while files.PipelineFolder(tmp_path).holder() is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert files.PipelineFolder(tmp_path).holder() is None  # SIGKILL released it
