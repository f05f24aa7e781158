"""The class broker's JVM handled without a broker (stack/classprocess.py): the instructor's files private, a stop
that waits while the process makes progress and kills only one that makes none, and a start that fails in one line
naming the cause. Made-up processes stand in for the broker; the real one: tests/stack/test_class_breaches.py."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from deliverylab.config import CourseError
from deliverylab.stack import classprocess, processes


def test_the_state_folder_and_everything_in_it_become_the_instructors_only(tmp_path):
    folder = tmp_path / "class-broker"
    (folder / "data" / "__cluster_metadata-0").mkdir(parents=True)
    log = folder / "data" / "__cluster_metadata-0" / "00000000000000000000.log"
    log.write_text("SCRAM salts and keys")
    log.chmod(0o644)
    (folder / "data").chmod(0o755)
    classprocess.make_private(folder)
    for path in [folder, *folder.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_the_brokers_own_files_are_made_with_umask_077(tmp_path):
    out = tmp_path / "broker.out"
    pid = classprocess.start([sys.executable, "-c", f"open({str(tmp_path / 'made-by-the-jvm')!r}, 'w').write('x')"], out)
    while processes.alive(pid):
        os.waitpid(pid, 0)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "made-by-the-jvm").stat().st_mode) == 0o600


def slow_to_stop(tmp_path, seconds: float, busy: bool) -> tuple[subprocess.Popen, list]:
    """A process that ignores SIGTERM; for ``seconds`` it writes to its log (busy) or sleeps, then exits."""
    log = tmp_path / "broker.log"
    code = ("import signal, time, sys\nsignal.signal(signal.SIGTERM, lambda *a: None)\nend = time.time() + %r\n"
            "print('ready', flush=True)\n"
            "while time.time() < end:\n    %s\n    time.sleep(0.2)\n") % (seconds, "open(sys.argv[1], 'a').write('closing a log\\n')"
                                                                       if busy else "pass")
    proc = subprocess.Popen([sys.executable, "-c", code, str(log)], stdout=subprocess.PIPE, start_new_session=True)
    proc.stdout.readline()
    return proc, [log]


def test_a_stop_waits_as_long_as_the_broker_makes_progress(tmp_path, monkeypatch):
    monkeypatch.setattr(classprocess, "STALL_S", 2)
    monkeypatch.setattr(classprocess, "STOPPING_EVERY_S", 1)
    proc, logs = slow_to_stop(tmp_path, seconds=5, busy=True)  # longer than STALL_S, but never still
    said = []
    assert classprocess.stop(proc.pid, logs, said.append) is True
    assert proc.wait(timeout=5) == 0  # it ended by itself: no SIGKILL
    assert any("still closing its logs" in line for line in said)


def test_a_broker_that_makes_no_progress_stopping_is_killed_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(classprocess, "STALL_S", 1)
    proc, logs = slow_to_stop(tmp_path, seconds=60, busy=False)
    said = []
    assert classprocess.stop(proc.pid, logs, said.append) is False
    assert processes.killed_by_sigkill(proc.wait(timeout=10))
    assert said[-1].startswith("the class broker made no progress stopping") and "next start recovers" in said[-1]


def test_a_broker_that_cannot_start_is_one_line_with_its_cause_and_what_to_do(tmp_path):
    log = tmp_path / "broker.log"
    log.write_text("[2026-03-01] INFO loading logs\n[2026-03-01] ERROR Error while loading log dir "
                   "(java.io.IOException: Too many open files)\n")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with pytest.raises(CourseError) as failed:
        classprocess.wait_ready(proc.pid, lambda: False, [log])
    line = str(failed.value)
    assert "\n" not in line and line.startswith("The class broker exited while starting (it needs more open files")
    assert "stack down --class" in line and "stack wipe --class" in line and str(log) in line
    log.write_text("[2026-03-01] ERROR something new\nKafkaException: the storage is not formatted\n")
    assert classprocess.cause([log]) == "KafkaException: the storage is not formatted"
