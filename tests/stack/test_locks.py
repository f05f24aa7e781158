"""The cross-process lock: one holder at a time, a timeout that says so, nothing stale after a SIGKILL."""
import subprocess
import sys
import time

import pytest

from deliverylab.stack import locks

HOLD = """
import sys, time
from deliverylab.stack import locks
with locks.exclusive(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def holder(tmp_path):
    """Another process that holds the lock until it is killed."""
    path = tmp_path / "sub" / "x.lock"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield path, proc
    proc.kill()
    proc.wait()


def test_a_lock_held_elsewhere_times_out(holder):
    path, _ = holder
    started = time.monotonic()
    with pytest.raises(locks.LockBusy, match="still locked after 0.3 s"):
        with locks.exclusive(path, timeout=0.3):
            pass
    assert time.monotonic() - started >= 0.3


def test_a_sigkilled_holder_leaves_no_stale_lock(holder):
    path, proc = holder
    proc.kill()
    proc.wait()
    with locks.exclusive(path, timeout=5):
        pass


def test_the_lock_is_free_again_after_the_block(tmp_path):
    path = tmp_path / "y.lock"
    with locks.exclusive(path):
        pass
    with locks.exclusive(path, timeout=0):
        pass


def test_held_says_whether_another_process_holds_the_lock(holder, tmp_path):
    path, proc = holder
    assert locks.held(path)
    proc.kill()
    proc.wait()
    assert not locks.held(path)
    assert not locks.held(tmp_path / "never-made.lock")
