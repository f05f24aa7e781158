"""Child processes: spawned in their own group, watching their parent, found and stopped when left over."""
import os
import subprocess
import sys
import time

from deliverylab.stack import processes


def test_event_logs_skip_a_line_cut_short(tmp_path):
    log = tmp_path / "events.jsonl"
    processes.append_jsonl(log, {"event": "a", "n": 1})
    with open(log, "a") as fh:
        fh.write('{"event": "b", "n"')  # what a SIGKILL in the middle of a write leaves
    assert processes.read_jsonl(log) == [{"event": "a", "n": 1}]
    assert processes.read_jsonl(tmp_path / "missing.jsonl") == []


def test_the_parent_pid_travels_after_the_marker():
    args, parent = processes.parent_pid_from(["run", "--x", "1", processes.MARKER, "4242"])
    assert args == ["run", "--x", "1"] and parent == 4242
    assert processes.parent_pid_from(["run"]) == (["run"], None)


def test_a_child_notices_its_parent_is_gone(tmp_path):
    # "middle" spawns a watcher child and exits: the watcher must notice and end by itself
    (tmp_path / "watcher.py").write_text(
        "import sys, time\nfrom deliverylab.stack import processes\n"
        "args, parent = processes.parent_pid_from(sys.argv[1:])\n"
        "watch = processes.ParentWatch(parent)\n"
        "while not watch.gone():\n    time.sleep(0.05)\n")
    middle = ("from deliverylab.stack import processes\n"
              f"child = processes.spawn('watcher', log={str(tmp_path / 'watcher.log')!r})\n"
              "print(child.pid)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])}
    child = int(subprocess.run([sys.executable, "-c", middle], capture_output=True, text=True, env=env,
                               check=True).stdout)
    deadline = time.monotonic() + 10
    while processes.alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not processes.alive(child), "the child outlived its parent"


def test_course_processes_are_found_by_their_marker_and_killed(tmp_path):
    code = "import time; time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code, processes.MARKER, "1", str(tmp_path)],
                            start_new_session=True)
    try:
        time.sleep(0.2)
        assert proc.pid in processes.course_processes(within=tmp_path)
        assert proc.pid not in processes.course_processes(within=tmp_path / "elsewhere")
        assert processes.stop_course_processes(within=tmp_path) == 1
        assert proc.wait(timeout=5) == -9
    finally:
        if proc.poll() is None:
            proc.kill()
