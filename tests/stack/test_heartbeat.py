"""Setup is never silent: a long step says what it does with an estimate, then how far it got at least every
EVERY_S, then how long it took (pip, Ivy, the class archive's recording). No test here asserts a duration."""
from __future__ import annotations

import sys
import threading

from deliverylab import __main__ as cli
from deliverylab.stack import classarchive, heartbeat, jars


def test_a_step_says_its_estimate_then_its_progress_then_its_time():
    said = []
    progressed = threading.Event()

    def detail():
        progressed.set()
        return "3 modules found"

    with heartbeat.Step("resolving the spark jars", "about a minute", detail=detail, log=said.append, every_s=0.01):
        assert progressed.wait(timeout=60)  # at least one heartbeat, however slow the machine
    assert said[0] == "resolving the spark jars (about a minute) ..."
    assert said[1].startswith("  ... resolving the spark jars: 3 modules found, ") and said[1].endswith(" s so far")
    assert said[-1].startswith("resolving the spark jars: done in ")


def test_a_failed_step_says_so_and_a_broken_detail_never_stops_it():
    said = []
    with heartbeat.Step("installing", detail=lambda: 1 / 0, log=said.append) as step:
        assert step.line().startswith("  ... installing: ") and "so far" in step.line()
        step.failed = True
    assert said[0] == "installing ..." and said[-1].startswith("installing: FAILED after ")


def test_pip_lines_become_what_pip_is_doing_now(tmp_path):
    watch = heartbeat.PipWatch(tmp_path / "site-packages", tmp_path / "tmp")
    assert watch.read("Collecting pyspark==4.2.0") is None
    assert watch.detail() == "collecting pyspark==4.2.0 (1 packages so far)"
    assert watch.read("  Downloading pyspark-4.2.0.tar.gz (434.5 MB)") == "  downloading pyspark-4.2.0.tar.gz (434.5 MB) ..."
    partial = tmp_path / "tmp" / "pip-unpack-abc" / "pyspark-4.2.0.tar.gz"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"x" * 3_000_000)
    assert watch.detail() == "downloading pyspark-4.2.0.tar.gz: 3 MB of 434.5 MB"
    watch.read("  Downloading wcwidth-0.9.4-cp310-abi3-manylinux2014_x86_64.whl (785 kB)")
    (partial.parent / "wcwidth-0.9.4-cp310-abi3-manylinux2014_x86_64.whl").write_bytes(b"x" * 600_000)
    assert watch.detail().endswith(": 600 kB of 785 kB")  # in pip's unit, never "1 MB of 785 kB"
    watch.read("  Downloading pyspark-4.2.0.tar.gz (434.5 MB)")
    assert watch.read("  Downloading six-1.17.0-py2.py3-none-any.whl (11 kB)") is None  # small: no line of its own
    assert watch.read("Building wheel for pyspark (pyproject.toml): started") == "  building the wheel of pyspark ..."
    assert watch.read("Installing collected packages: py4j, pyspark") == "  installing 2 package(s) into .venv ..."
    (tmp_path / "site-packages" / "pyspark").mkdir(parents=True)
    (tmp_path / "site-packages" / "pyspark" / "big.jar").write_bytes(b"x" * 2_000_000)
    assert watch.detail() == "installing 2 package(s) into .venv: 2 MB written"
    assert watch.read("ERROR: Could not find a version that satisfies the requirement nope") is not None


def test_pip_that_fails_says_so_with_its_last_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    said = []
    code = heartbeat.pip(["install", "--no-index", "--find-links", str(tmp_path), "no-such-package-xo"],
                         "installing a package that is not there", "seconds", log=said.append)
    assert code != 0
    assert said[0] == "installing a package that is not there (seconds) ..."
    assert any(line.startswith("ERROR") for line in said)
    assert any(line.startswith("pip's last lines:") for line in said)
    assert said[-1].startswith("installing a package that is not there: FAILED after ")


def test_make_setup_s_three_pip_runs_say_what_they_install(monkeypatch):
    runs = []
    monkeypatch.setattr(heartbeat, "pip", lambda args, what, estimate: runs.append((what, estimate)) or 0)
    for args in (["install", "--use-pep517", "pyspark==4.2.0"], ["install", "-r", "requirements.txt"],
                 ["install", "--no-deps", "-e", "."]):
        assert cli.main(["pip", *args]) == 0
    assert runs[0][0] == "installing pyspark 4.2.0 (one 450 MB package: Spark's jars inside)"
    assert runs[1][0].startswith("installing the course's other Python packages")
    assert runs[2][0].startswith("installing the course's own package")
    assert all(estimate for _, estimate in runs)


def test_ivy_s_output_becomes_modules_found_and_files_downloaded(monkeypatch):
    script = ("for i in range(3): print(f'\\tfound org.example#m{i};1.0 in central')\n"
              "print('\\t[SUCCESSFUL ] org.example#m0;1.0!m0.jar (12ms)')\n")
    steps = []

    class Recorded(heartbeat.Step):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            steps.append(self)

    monkeypatch.setattr(heartbeat, "Step", Recorded)
    said = []
    proc = jars._ivy_with_progress([sys.executable, "-c", script], jars.CLASSPATHS["spark"], said.append)
    assert proc.returncode == 0 and "found org.example#m2" in proc.stdout
    assert said[0].startswith("resolving the spark jars (spark-connectors.ivy.xml) (about 105 MB from Maven Central")
    assert steps[0].detail() == "3 modules found, 1 files downloaded"  # what its heartbeat lines say
    assert said[-1].startswith("resolving the spark jars (spark-connectors.ivy.xml): done in ")


def test_the_recording_s_step_is_read_from_what_it_has_written(tmp_path):
    scratch, archive = tmp_path / "scratch", tmp_path / "spark-classes-x.jsa"
    scratch.mkdir()
    steps = [classarchive.recording_step(scratch, archive)]
    for folder in ("delta", "parquet", "checkpoint", "stream/_delta_log"):
        (scratch / folder).mkdir(parents=True)
        steps.append(classarchive.recording_step(scratch, archive))
    archive.write_bytes(b"x" * 5_000_000)
    steps.append(classarchive.recording_step(scratch, archive))
    assert [s.split(":")[0] for s in steps] == ["step 1 of 5", "step 2 of 5", "step 3 of 5", "step 4 of 5",
                                                 "step 5 of 5", "step 5 of 5"]
    assert steps[-1].endswith("(5 MB so far)")
