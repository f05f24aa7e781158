"""What the course runs, by notebook kernel, with its memory: pure functions of a process table,
and the standby pool's trim, with stand-in drivers."""
import json

from deliverylab import running
from deliverylab.crashlab import drivers
from deliverylab.running import Proc

VENV = "/home/ada/course/.venv/bin/python"
STATE = "/home/ada/course/.state"
JAVA = "/usr/lib/jvm/java-17/bin/java"


def table(tmp_path):
    home = tmp_path / "drivers" / "100" / "d001-abc"
    home.mkdir(parents=True)
    (home / "assignment.json").write_text(json.dumps({"name": "at_least_once"}))
    standby = tmp_path / "drivers" / "100" / "d002-def"
    standby.mkdir(parents=True)
    driver = [VENV, "-m", "deliverylab.crashlab.driver"]
    return [
        Proc(7, 1, [JAVA, "-Xmx512m", "kafka.Kafka", f"{STATE}/kafka/server.properties"], 400 * 1024),
        Proc(100, 50, [VENV, "-m", "ipykernel_launcher", "-f", "/tmp/k.json"], 120 * 1024),
        Proc(101, 100, [JAVA, "-cp", f"{STATE}/jars/spark/x.jar", "org.apache.spark.deploy.SparkSubmit"], 300 * 1024),
        Proc(110, 100, [*driver, str(home), "--deliverylab-child", "100"], 60 * 1024),
        Proc(111, 110, [JAVA, "-cp", f"{STATE}/jars/spark/x.jar", "SparkSubmit"], 500 * 1024),
        Proc(120, 100, [*driver, str(standby), "--deliverylab-child", "100"], 55 * 1024),
        Proc(121, 120, [JAVA, "-cp", f"{STATE}/jars/spark/x.jar", "SparkSubmit"], 310 * 1024),
        # a driver's JVM whose driver process has already ended: found by its drivers folder
        Proc(131, 1, [JAVA, f"-Djava.io.tmpdir={tmp_path}/drivers/100/d003-ghi/tmp", "SparkSubmit"], 280 * 1024),
    ]


def test_each_process_gets_its_role_and_its_kernel(tmp_path):
    rows = running.classify(table(tmp_path))
    assert [(r["pid"], r["role"], r["kernel"]) for r in rows] == [
        (100, "notebook kernel", 100),
        (101, "its Spark session (JVM)", 100),
        (110, "crash-lab driver (pipeline at_least_once)", 100),
        (111, "its Spark JVM", 100),
        (120, "crash-lab driver (standby)", 100),
        (121, "its Spark JVM", 100),
        (131, "Spark JVM of a crash-lab driver that ended", 100),
        (7, "Kafka broker", None),
    ]


def test_the_table_says_how_many_jvms_and_how_much_memory(tmp_path):
    text = running.lines(running.classify(table(tmp_path)))
    assert text[0].startswith("  notebook kernel") and "120 MB" in text[0]
    assert text[3].startswith("      its Spark JVM") and "500 MB" in text[3]
    assert text[-1] == "course processes: 8 (5 JVMs), 1 notebook kernel(s), 2.0 GB resident"
    assert running.lines([]) == ["course processes: none running"]


class StandIn:
    def __init__(self, warm):
        self.warm, self.killed = warm, False

    @property
    def running(self):
        return not self.killed

    def kill(self):
        self.killed = True


def test_trim_keeps_the_warmest_standbys_and_release_stops_them_all(tmp_path, monkeypatch):
    pool = drivers.DriverPool(tmp_path, standby=2)
    pool.warm_up = False  # as during a chaos run
    cold, warm = StandIn(False), StandIn(True)
    pool._ready = [cold, warm]
    assert pool.trim(1) == 1 and pool._ready == [warm] and cold.killed and pool.standby == 1
    assert pool.warm_up  # standbys booted after the run warm up again
    monkeypatch.setattr(drivers, "_pool", pool)
    assert drivers.release_standbys() == 1 and warm.killed and pool._ready == []
    assert pool.standby == 1  # the next crash still boots one for its restart


def test_a_kernel_is_named_by_its_notebook_and_shared_pages_are_counted_once(tmp_path):
    procs = table(tmp_path)
    procs[1].argv = [VENV, "-m", "ipykernel_launcher", "-f", "/run/jupyter/kernel-4f2a-77.json"]
    procs[2].pss_kb = 200 * 1024  # its Spark JVM maps the class archive that other JVMs map too
    rows = running.classify(procs)
    text = running.lines(rows, {"4f2a-77": "notebooks/03-at-most-once.ipynb"})
    assert text[0].startswith("  notebook kernel 03-at-most-once.ipynb") and "120 MB" in text[0]
    assert "300 MB (200 MB its share)" in text[1]
    assert text[-1].endswith("2.0 GB resident, 1.9 GB its own share")


def test_memory_warns_when_open_kernels_leave_less_than_a_lesson_and_names_them(tmp_path):
    rows = running.classify(table(tmp_path))
    assert running.memory_warning(rows, running.LESSON_GB + 2) == []  # room enough: nothing said
    assert running.memory_warning(rows, None) == []                   # unknown: nothing said
    assert running.memory_warning([r for r in rows if r["kernel"] is None], 0.2) == []  # no kernel to shut down
    warning = running.memory_warning(rows, 0.4)
    assert warning[0].startswith("warning: 1 open notebook kernel(s) hold 1.6 GB and this machine has 0.4 GB left")
    assert warning[0].endswith("kernel pid 100 1.6 GB")
    assert "Kernel > Shut Down Kernel" in warning[1]


def test_doctor_counts_what_the_course_holds_toward_its_memory_and_warns(tmp_path, monkeypatch):
    from deliverylab import doctor
    from deliverylab.stack import jupyter

    procs = table(tmp_path)
    monkeypatch.setattr(running, "course_procs", lambda: procs)
    monkeypatch.setattr(jupyter, "kernel_notebooks", lambda: {})
    monkeypatch.setattr(doctor, "available_memory_gb", lambda: 2.5)  # 2.5 free + 2.0 held: the course fits
    finding = doctor.check_memory()
    assert finding.ok and finding.detail == "2.5 GB available; the course holds 2.0 GB already"
    monkeypatch.setattr(doctor, "available_memory_gb", lambda: 0.5)
    finding = doctor.check_memory()
    assert not finding.ok and "needs about 4 GB" in finding.fix
    bigger = [Proc(p.pid, p.ppid, p.argv, p.rss_kb * 2) for p in procs]  # twice as much held
    monkeypatch.setattr(running, "course_procs", lambda: bigger)
    finding = doctor.check_memory()
    assert finding.ok and "warning: 1 open notebook kernel(s) hold" in finding.detail
