"""The course's SparkSession: one per Python process, local, quiet, with Delta and Kafka.

Jars come from the project-local cache (resolved once by ``make setup``), so starting Spark
never touches the network. They are on the driver's own class path; on a cluster they also go
to the executors through ``spark.jars``. In local mode the one JVM has them already, and
``spark.jars`` would only make each JVM copy them into a scratch folder as it starts.

The JVM's own output (its start-up warnings, log4j lines) goes to a log file in the state
folder, not to the notebook: JupyterLab would show it in a red stderr box that a newcomer
reads as an error. The JVM also runs in a working folder under the state folder, so
Spark's scratch folders (``artifacts/spark-<id>``) never appear next to the notebooks;
every course path handed to Spark is absolute.

Starting a JVM that loads Spark, Delta and Kafka classes takes seconds, and the course
starts many (every kernel, every crash-lab driver). ``make setup`` therefore records the
classes a Spark session loads in a class-data-sharing archive (classarchive.py); every
later Spark JVM maps it instead of loading and verifying those classes again. The same
jars are also on the driver's own class path (``spark.driver.extraClassPath``): a JVM's
archive can only hold classes of its built-in class loaders, and through ``spark.jars``
alone Kafka's client and Delta (about 2,000 classes) came from the jar files at every start.

Every Spark JVM of the course also stops its JIT at the quick tier (C1, ``java.QUICK_JIT``).
They live for minutes on a few hundred rows, so the optimising compiler never pays back
the CPU it burns; measured on two cores, lesson 07 took 291 CPU-seconds with it and 221
without, and its wall time fell from 153 s to 123 s.

A running query with no new data asks its source again after ``spark.sql.streaming.pollingDelay``
(an internal Spark setting, 10 ms by default): for Kafka, a request to the broker a hundred times
a second. Lessons leave several pipelines running while they read their results, so the course
waits ``POLLING_DELAY`` instead: an idle Delta pipeline then costs about 5 % of a core (its driver
and the broker together) instead of about 28 %, and a new batch starts at most that much later.

Spark also writes Java source for each query's operators and expressions and compiles it
(Janino) before the first row moves: worth it on millions of rows, pure cost on a batch of a
few hundred orders in a JVM that is seconds old, and the crash lab starts such JVMs all the
time. The course runs queries interpreted instead (``INTERPRETED``): whole-stage code
generation off, and expressions evaluated without generated code (``factoryMode``, an
internal Spark setting documented as not meant for end users, so do not copy it into a
production job). Results are the same; a fresh driver's recovery and first batch take about
15 % less CPU, lesson 05 about 10 % less. A query over real volumes wants Spark's defaults.

A Spark start takes seconds on a quiet machine and up to a minute on a busy one, so ``get_spark``
says what it is doing through ``progress`` (a notebook's status line passes one: statusline.py) with
how long the last start took on this machine (:func:`start_estimate`, kept in ``.state/logs``).

Under module 10's kernel (``.venv-iceberg``, pyspark 4.1.3: stack/kernels.py) the session takes that
venv's own jars (jars.spark_kind: ``spark41``, with Iceberg's runtime) and class archive, and adds
Iceberg: its SQL extensions after Delta's, and the course's catalog ``iceberg`` (:func:`iceberg_conf`),
a Hadoop catalog whose warehouse is the learner's lessons folder. Delta stays on
Spark's own catalog, as in every other module. Crash-lab drivers started from that kernel run its
Python, so they build the same session.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from . import classarchive, foreachbatch, idlesession, jars
from ..config import HOST, CourseError, settings
from .java import QUICK_JIT, path_option, require_java

_session = None

#: How long an idle streaming query waits before asking its source for new data again (see above).
POLLING_DELAY = "250ms"
#: Tasks that list a table's files in parallel (VACUUM among others): the two cores of local[2].
LISTING_PARALLELISM = "2"
#: Partitions after a shuffle (Spark's default is 200). One: a batch is a few hundred orders, and a
#: stateful query keeps one state store per shuffle partition, each writing its own files every
#: batch; lessons 04 and its lab took 17 % less CPU with one than with two. The crash lab's
#: mid-write gate is unaffected: it sits on the Kafka source's partitions (minPartitions).
SHUFFLE_PARTITIONS = "1"
#: Queries run interpreted, with no Java source generated and compiled per query (see above).
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}

DELTA_EXTENSIONS = "io.delta.sql.DeltaSparkSessionExtension"
#: Module 10's kernel: Iceberg's SQL extensions (CALL, ALTER TABLE ... WRITE ORDERED BY, ...) and its catalog's name.
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
ICEBERG_CATALOG = "iceberg"


def iceberg_warehouse(s=None) -> Path:
    """Module 10's Iceberg warehouse: the learner's lessons folder (``.state/lessons/<learner>``). A Hadoop
    catalog's namespaces are folders, so a lesson's table folder (``lesson.table(name)``:
    ``<lesson>/tables/<name>``) is the catalog's table ``iceberg.`<lesson>`.tables.<name>``, and setting a lesson
    up again or resetting it deletes its Iceberg tables with the rest of its folder."""
    s = s or settings()
    return s.lessons_dir / s.learner


def iceberg_conf(s=None) -> dict[str, str]:
    """The course's Iceberg catalog ``iceberg``: Iceberg's Spark catalog over a Hadoop catalog (tables as folders
    of metadata and data files, no catalog service) in the learner's warehouse.

    Its table cache is off. With the cache on (Iceberg's default), the catalog hands out the table it loaded
    first and does not read the table's metadata again until nobody has used the entry for 30 s: a notebook that
    reads a table every few seconds goes on counting what it saw first while a crash-lab driver (another JVM)
    commits new snapshots to it. With the cache off, each read loads the table's current metadata. Writes are
    not affected either way: a commit reads the newest metadata before it applies."""
    prefix = f"spark.sql.catalog.{ICEBERG_CATALOG}"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "hadoop",
        f"{prefix}.warehouse": str(iceberg_warehouse(s)),
        f"{prefix}.cache-enabled": "false",
    }


def with_iceberg() -> bool:
    """Does this Python's Spark session carry Iceberg (module 10's kernel, the spark41 jars)?"""
    return jars.spark_kind() == jars.ICEBERG_SPARK_KIND


def spark_conf(app_name: str = "exactly-once-for-real", extra: dict[str, str] | None = None) -> dict[str, str]:
    s = settings()
    kind = jars.spark_kind()  # the main kernel's jars, or module 10's (Spark 4.1 + Iceberg)
    iceberg = kind == jars.ICEBERG_SPARK_KIND
    conf = {
        # local[2] unless DELIVERYLAB_SPARK_MASTER names a cluster (config.py, stack/cluster.py)
        "spark.master": s.spark_master,
        "spark.app.name": app_name,
        "spark.sql.shuffle.partitions": SHUFFLE_PARTITIONS,
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.driver.memory": "1g",
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.driver.extraClassPath": os.pathsep.join(str(p) for p in jars.jars(kind)),  # see above
        "spark.sql.extensions": DELTA_EXTENSIONS + (f",{ICEBERG_EXTENSIONS}" if iceberg else ""),
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.warehouse.dir": str(s.state / "warehouse"),
        "spark.driver.extraJavaOptions": f"{path_option('-Dderby.system.home', s.state / 'derby')} {QUICK_JIT}",
        "spark.sql.session.timeZone": "UTC",
        # Delta rebuilds a table's state with this many tasks (default 50): tiny tables, two cores
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.pollingDelay": POLLING_DELAY,
        # Delta's VACUUM lists a table's folders with this many tasks, Spark's default being 10000:
        # lesson 05's VACUUM of a table of ten files took 33 s on two cores, 10000 empty tasks
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": LISTING_PARALLELISM,
        **INTERPRETED,
        **(iceberg_conf(s) if iceberg else {}),
    }
    if s.on_cluster:  # executors of their own: one small executor per application (see stack/cluster.py)
        from .cluster import app_conf

        conf.update(app_conf())
        conf["spark.jars"] = ",".join(str(p) for p in jars.jars(kind))  # the executors' copy
    archive = classarchive.path()
    if archive.exists():
        conf["spark.driver.extraJavaOptions"] += " " + path_option("-XX:SharedArchiveFile", archive)
    if os.environ.get("TMPDIR"):  # the JVM ignores TMPDIR; Spark's scratch space defaults to java.io.tmpdir
        conf["spark.driver.extraJavaOptions"] += " " + path_option("-Djava.io.tmpdir", os.environ["TMPDIR"])
    conf.update(extra or {})
    return conf


#: Where the length of the last Spark start on this machine is kept (for the next start's estimate).
STARTS_FILE = "spark-starts.json"
#: The estimate before any start was measured here: two quiet cores, the class archive in place.
FIRST_START_ESTIMATE = "about 15 s on a quiet machine, up to a minute on a busy one"


def _starts_file() -> Path:
    """The last start's length, one file per kernel kind (module 10's JVM loads more classes)."""
    kind = jars.spark_kind()
    return settings().state / "logs" / (STARTS_FILE if kind == jars.MAIN_SPARK_KIND else f"{kind}-{STARTS_FILE}")


def start_estimate() -> str:
    """How long a Spark start takes here: the last start's seconds, or the usual figure."""
    try:
        last = json.loads(_starts_file().read_text())["last_s"]
    except (OSError, ValueError, KeyError, TypeError):
        return FIRST_START_ESTIMATE
    return f"the last start here took {last:.0f} s"


def _record_start(seconds: float) -> None:
    path = _starts_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"last_s": round(seconds, 1)}) + "\n")
    except OSError:  # an estimate is a courtesy, never a failure
        pass


def running() -> bool:
    """Has this process a live SparkSession (so get_spark returns at once)?"""
    return _session is not None and _session._jsc is not None and not _session._jsc.sc().isStopped()


def log_path(app_name: str):
    """Where the JVM of this process writes its output."""
    return settings().state / "logs" / f"spark-{app_name}-{os.getpid()}.log"


def get_spark(app_name: str = "exactly-once-for-real", extra_conf: dict[str, str] | None = None, log=None,
              progress=None):
    """Build the SparkSession once per process and return it (later calls return the same one).

    The JVM writes its output to ``log`` (default: a file per process under ``.state/logs``).
    ``progress(text)``, if given, is told each step of a start (none when the session runs already).
    """
    global _session
    if running():
        return _session
    say = progress or (lambda text: None)
    started = time.monotonic()
    parts = "Spark 4.1, Delta, Iceberg and Kafka" if with_iceberg() else "Spark, Delta and Kafka"
    say(f"starting Spark's JVM with {parts} ({start_estimate()})")
    require_java()
    from .cluster import require_master

    require_master()  # on a spark:// master: it answers, or a CourseError says how to start it
    os.environ.setdefault("SPARK_LOCAL_IP", HOST)
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    conf = SparkConf()
    for key, value in spark_conf(app_name, extra_conf).items():
        conf.set(key, value)
    if SparkContext._gateway is None:
        log = Path(log) if log else log_path(app_name)
        workdir = settings().state / "spark-work"
        log.parent.mkdir(parents=True, exist_ok=True)
        workdir.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            try:
                gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out, "cwd": str(workdir)})
            except Exception as error:  # the JVM exited before it answered: its log says why
                tail = "\n".join(log.read_text(errors="replace").strip().splitlines()[-15:])
                raise CourseError(f"Spark's JVM did not start ({error}). The end of its log "
                                  f"({log}):\n{tail}") from None
        SparkContext._ensure_initialized(gateway=gateway)
    if with_iceberg():  # a Hadoop catalog cannot list the namespaces of a warehouse that does not exist yet
        iceberg_warehouse().mkdir(parents=True, exist_ok=True)
    say("creating the SparkSession in the JVM (Spark's context, " +
        ("Delta's and Iceberg's SQL extensions)" if with_iceberg() else "Delta's SQL extension)"))
    _session = SparkSession.builder.config(conf=conf).getOrCreate()
    _session.sparkContext.setLogLevel("ERROR")
    foreachbatch.install()  # a foreachBatch query stopped mid-batch ends quietly (see foreachbatch.py)
    # in a notebook kernel: the session is released when the lesson is left idle (idlesession.py)
    idlesession.watch(lambda: get_spark(app_name), preferred=False,
                      controls=idlesession.Controls(running, lambda: _session, release, jvm_memory_gb))
    _record_start(time.monotonic() - started)
    return _session


def stop_spark() -> None:
    global _session
    if _session is not None:
        _session.stop()
        _session = None


def jvm_memory_gb() -> float | None:
    """What this process's Spark JVM holds (its resident memory), or None when it cannot be read."""
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    try:
        for line in open(f"/proc/{proc.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024 / 1024
    except (AttributeError, OSError, ValueError):
        return None
    return None


def release(wait_s: float = 30) -> None:
    """Stop the session and let its JVM exit (its memory goes back to the machine); the next
    ``get_spark`` starts a new JVM. Used for a kernel left idle (idlesession.py)."""
    from pyspark import SparkContext

    stop_spark()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()  # its callback server too (foreachBatch functions)
    except Exception:  # noqa: BLE001 - the JVM is going away either way
        pass
    if proc is not None:
        try:
            proc.stdin.close()  # Spark's gateway server exits when its stdin closes
            proc.wait(timeout=wait_s)
        except Exception:  # noqa: BLE001
            proc.kill()
            proc.wait()
    SparkContext._gateway = None
    SparkContext._jvm = None


def _python() -> str:
    import sys

    return sys.executable
