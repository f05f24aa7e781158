"""Module 10's kernel without starting Spark: which jars a pyspark gets, the ivy file's pins and exclusion, the
kernelspec, the session's Iceberg settings, the class archive's recording, and who finds its processes."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import nbformat
import pytest

from deliverylab import course, running
from deliverylab.config import CourseError, settings
from deliverylab.running import Proc
from deliverylab.stack import classarchive, jars, kernels, processes, runner, session

ICEBERG_PYTHON = "/home/ada/course/.venv-iceberg/bin/python"


@pytest.mark.parametrize("version, kind", [("4.1.3", "spark41"), ("4.1.1", "spark41"), ("4.2.0", "spark"),
                                           ("4.3.0", "spark"), ("", "spark")])
def test_the_jar_set_follows_the_pyspark_minor_version(version, kind):
    assert jars.spark_kind(version) == kind


def test_this_venv_keeps_the_main_jar_set():
    ivy = (jars.IVY_DIR / "spark-connectors.ivy.xml").read_text()
    assert jars.spark_kind() == jars.MAIN_SPARK_KIND and f'rev="{jars.pyspark_version()}"' in ivy


def dependencies(ivy_file: str) -> dict[str, ET.Element]:
    return {d.get("name"): d for d in ET.parse(jars.IVY_DIR / ivy_file).getroot().iter("dependency")}


def test_the_spark41_ivy_file_pins_the_41_connector_delta_iceberg_and_swaps_the_token_provider():
    pyspark = kernels.pinned_pyspark()
    minor = ".".join(pyspark.split(".")[:2])
    deps = dependencies("spark41-connectors.ivy.xml")
    connector = deps["spark-sql-kafka-0-10_2.13"]
    assert connector.get("rev") == pyspark == "4.1.3"  # the SPARK-55271 fix
    assert [(e.get("org"), e.get("module")) for e in connector.iter("exclude")] == [
        ("org.apache.spark", "spark-token-provider-kafka-0-10_2.13")]
    assert deps["spark-token-provider-kafka-0-10_2.13"].get("rev") == "4.1.1"
    assert deps[f"delta-spark_{minor}_2.13"].get("rev") == "4.4.0"
    assert deps[f"iceberg-spark-runtime-{minor}_2.13"].get("rev") == "1.12.0"
    assert jars.CLASSPATHS[jars.spark_kind(pyspark)].name == "spark41-connectors.ivy.xml"


def test_each_spark_jar_set_has_its_own_stamp_with_the_crash_hook():
    assert jars.is_spark_kind("spark41") and jars.is_spark_kind("spark") and not jars.is_spark_kind("kafka")
    assert len({jars.stamp(kind) for kind in jars.CLASSPATHS}) == len(jars.CLASSPATHS)


def test_the_main_venv_refuses_to_build_the_41_jars(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    monkeypatch.setenv("DELIVERYLAB_JARS", str(tmp_path / "jars"))
    with pytest.raises(CourseError, match="another pyspark"):
        jars.ensure("spark41", log=lambda *_: None)


def test_setup_under_the_iceberg_venv_resolves_its_spark_jars_only(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    monkeypatch.setattr(jars, "pyspark_version", lambda: "4.1.3")
    seen = []
    monkeypatch.setattr(jars, "ensure", lambda kind, log=print: seen.append(kind))
    jars.ensure_all(log=lambda *_: None)
    assert seen == ["spark41"]


def test_the_kernelspec_runs_the_iceberg_venvs_python():
    spec = kernels.kernelspec(ICEBERG_PYTHON)
    assert spec["argv"] == [ICEBERG_PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    assert spec["display_name"] == "Python 3 (Spark 4.1 + Iceberg)" and spec["language"] == "python"
    assert spec["env"] == {"PYSPARK_PYTHON": ICEBERG_PYTHON}
    assert (kernels.ICEBERG_KERNEL, kernels.ICEBERG_DISPLAY_NAME, kernels.MAIN_KERNEL) == (
        course.ICEBERG_KERNEL, course.ICEBERG_KERNEL_DISPLAY_NAME, course.MAIN_KERNEL)


def test_the_kernelspec_is_written_once_into_the_venv_and_not_for_a_missing_python(tmp_path):
    python = tmp_path / "venv-iceberg" / "bin" / "python"
    said = []
    assert kernels.install_kernelspec(python, prefix=tmp_path / "venv", log=said.append) is None
    assert "does not exist" in said[0] and not kernels.kernelspec_dir(tmp_path / "venv").exists()
    python.parent.mkdir(parents=True)
    python.touch()
    folder = kernels.install_kernelspec(python, prefix=tmp_path / "venv", log=said.append)
    assert folder == tmp_path / "venv" / "share" / "jupyter" / "kernels" / "deliverylab-iceberg"
    assert json.loads((folder / "kernel.json").read_text()) == kernels.kernelspec(python)
    assert kernels.install_kernelspec(python, prefix=tmp_path / "venv", log=said.append) == folder
    assert len(said) == 2  # the second install found it in place and said nothing


def test_setup_installs_the_kernelspec_of_the_python_it_is_given(tmp_path):
    python = tmp_path / "python"
    python.touch()
    from deliverylab.__main__ import build_parser

    args = build_parser().parse_args(["setup", "--jars-only", "--iceberg-python", str(python)])
    assert args.iceberg_python == str(python) and args.jars_only


def test_runner_starts_the_kernel_the_notebook_names(monkeypatch, tmp_path):
    import jupyter_client.manager
    import nbclient

    started = []

    class FakeManager:
        has_kernel = False

        def __init__(self, kernel_name, **kwargs):
            started.append(kernel_name)

    class FakeClient:
        def __init__(self, nb, km, **kwargs):
            pass

        def execute(self):
            pass

    monkeypatch.setattr(jupyter_client.manager, "KernelManager", FakeManager)
    monkeypatch.setattr(nbclient, "NotebookClient", FakeClient)
    for name in ("deliverylab-iceberg", None):
        nb = nbformat.v4.new_notebook()
        if name:
            nb.metadata["kernelspec"] = {"name": name, "display_name": "x"}
        nbformat.write(nb, str(tmp_path / "nb.ipynb"))
        runner.run(str(tmp_path / "nb.ipynb"))
    assert started == ["deliverylab-iceberg", "python3"]


def test_the_session_adds_iceberg_only_under_the_41_jars(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_LEARNER", "ada")
    monkeypatch.setattr(jars, "jars", lambda kind: [tmp_path / f"{kind}.jar"])
    monkeypatch.setattr(classarchive, "path", lambda: tmp_path / "none.jsa")
    monkeypatch.setattr(jars, "pyspark_version", lambda: "4.2.0")
    main = session.spark_conf()
    assert main["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert not any(key.startswith("spark.sql.catalog.iceberg") for key in main)
    monkeypatch.setattr(jars, "pyspark_version", lambda: "4.1.3")
    conf = session.spark_conf()
    assert conf["spark.driver.extraClassPath"] == str(tmp_path / "spark41.jar")
    assert conf["spark.sql.extensions"] == ("io.delta.sql.DeltaSparkSessionExtension,"
                                            "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
    assert conf["spark.sql.catalog.spark_catalog"] == "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    assert conf["spark.sql.catalog.iceberg"] == "org.apache.iceberg.spark.SparkCatalog"
    assert conf["spark.sql.catalog.iceberg.type"] == "hadoop"
    assert conf["spark.sql.catalog.iceberg.cache-enabled"] == "false"
    assert conf["spark.sql.catalog.iceberg.warehouse"] == str(settings().lessons_dir / "ada")


def test_each_kernel_records_an_archive_of_its_own(monkeypatch):
    main = classarchive.path()
    assert main.name.startswith("spark-classes-") and classarchive.recording() == classarchive.RECORDING
    monkeypatch.setattr(jars, "pyspark_version", lambda: "4.1.3")
    iceberg = classarchive.recording()
    assert iceberg.startswith(classarchive.RECORDING.split(classarchive.STOP_LINE)[0])
    assert iceberg.index("iceberg.archive.orders") < iceberg.index(classarchive.STOP_LINE)
    assert classarchive.path().name.startswith("spark41-classes-")
    compile(iceberg, "recording", "exec")


def test_status_puts_the_iceberg_kernels_driver_under_its_kernel():
    driver = [ICEBERG_PYTHON, "-m", "deliverylab.crashlab.driver"]
    rows = running.classify([
        Proc(200, 50, [ICEBERG_PYTHON, "-m", "ipykernel_launcher", "-f", "/tmp/kernel-abc.json"], 120 * 1024),
        Proc(201, 200, ["/usr/bin/java", "-cp", "/home/ada/course/.state/jars/spark41/x.jar", "SparkSubmit"], 9 << 10),
        Proc(210, 200, [*driver, "--deliverylab-child", "200"], 60 * 1024),
    ])
    assert [(r["pid"], r["role"].split(" (")[0], r["kernel"]) for r in rows] == [
        (200, "notebook kernel", 200), (201, "its Spark session", 200), (210, "crash-lab driver", 200)]


def test_stack_down_finds_a_process_of_the_iceberg_venv(tmp_path):
    python = kernels.iceberg_python()
    if not python.exists():
        pytest.skip(f"{kernels.ICEBERG_VENV} is not set up here: `make setup` builds it")
    state = tmp_path / "state"
    child = subprocess.Popen([str(python), "-c", "import time; time.sleep(120)", processes.MARKER, "1", str(state)],
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 30  # its command line shows once the interpreter has started
        while processes.course_processes(state) != [child.pid] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes.course_processes(state) == [child.pid]
        assert processes.stop_course_processes(state) == 1
        assert child.wait(timeout=30) == -9
    finally:
        if child.poll() is None:
            child.kill()


def test_the_iceberg_venv_has_the_pinned_pyspark():
    python = kernels.iceberg_python()
    if not python.exists():
        pytest.skip(f"{kernels.ICEBERG_VENV} is not set up here: `make setup` builds it")
    assert kernels.venv_pyspark(python) == kernels.pinned_pyspark()
    assert kernels.venv_pyspark(sys.executable) == jars.pyspark_version()


def test_doctor_checks_the_iceberg_kernel(monkeypatch, tmp_path):
    from deliverylab import doctor

    python = tmp_path / ".venv-iceberg" / "bin" / "python"
    monkeypatch.setattr(kernels, "iceberg_python", lambda root=None: python)
    missing = doctor.check_iceberg_kernel()
    assert missing.ok and "warning: not set up" in missing.detail and "make setup" in missing.detail
    python.parent.mkdir(parents=True)
    python.touch()
    monkeypatch.setattr(kernels, "venv_pyspark", lambda p: "4.1.2")
    monkeypatch.setattr(kernels, "installed_kernelspec", lambda prefix=None: kernels.kernelspec(python))
    monkeypatch.setattr(jars, "is_resolved", lambda kind: True)
    wrong = doctor.check_iceberg_kernel()
    assert not wrong.ok and "its pyspark is 4.1.2, requirements-iceberg.txt pins 4.1.3" in wrong.detail
    assert wrong.fix == "Run `make setup`."
    monkeypatch.setattr(kernels, "venv_pyspark", lambda p: "4.1.3")
    assert doctor.check_iceberg_kernel().ok
    monkeypatch.setattr(kernels, "installed_kernelspec", lambda prefix=None: None)
    assert "JupyterLab does not know it" in doctor.check_iceberg_kernel().detail
    assert doctor.check_iceberg_kernel in doctor.CHECKS and doctor.check_kernel in doctor.CHECKS
