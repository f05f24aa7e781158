"""The class-data-sharing archive that makes every course JVM with Spark start quicker.

A JVM loads and verifies thousands of classes before Spark answers. With
``-XX:ArchiveClassesAtExit`` one JVM writes the classes it loaded into an archive file (a
JDK feature, "dynamic CDS"); every later JVM started with ``-XX:SharedArchiveFile`` maps
that file instead. ``make setup`` records it once, with a run that does what the course's
JVMs do: a Delta table, Parquet, and a stream from Kafka into Delta (for that part setup
starts the course's broker for a few seconds, and stops it again if it was not running).

Two limits of the JDK shape this file:

* only classes of the JVM's built-in loaders go into an archive, which is why session.py
  also puts the course's jars on the driver's own class path;
* an archive belongs to one JDK and one class path. Its file name carries a digest of
  both (and of :data:`RECORDING`), so a changed JDK or jar set, or a changed recording,
  gets a new archive from the next setup, and until then Spark starts without one.

Module 10's kernel (Spark 4.1 + Iceberg, jars.spark_kind ``spark41``) has an archive of its own,
``spark41-classes-<digest>.jsa``, recorded by setup run with that venv's Python; its recording also
writes and reads an Iceberg table (in a scratch warehouse) and streams into one.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import broker, jars, kafka
from ..config import CourseError, settings
from .java import QUICK_JIT, java_executable, path_option, version_text

#: What the recording run does. Its last argument is a broker's address, or "" to leave Kafka out.
RECORDING = """
import sys
from pyspark import SparkContext
from deliverylab.stack.session import get_spark
spark = get_spark("class-archive", extra_conf={"spark.driver.extraJavaOptions": sys.argv[1]})
scratch, bootstrap, topic = sys.argv[2], sys.argv[3], sys.argv[4]
rows = spark.range(4).selectExpr("CAST(id AS STRING) AS order_id", "CAST(id AS DECIMAL(10,2)) AS amount")
rows.write.format("delta").save(scratch + "/delta")
rows.write.parquet(scratch + "/parquet")
spark.read.format("delta").load(scratch + "/delta").count()
if bootstrap:  # the crash lab's drivers: Kafka in (and out), Delta
    (rows.selectExpr("order_id AS key", "to_json(struct(*)) AS value").write.format("kafka")
     .option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save())
    source = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest").load())
else:
    source = spark.readStream.format("rate").load()
query = (source.writeStream.format("delta").trigger(availableNow=True)
         .option("checkpointLocation", scratch + "/checkpoint").start(scratch + "/stream"))
query.awaitTermination()
jvm = SparkContext._gateway.proc
spark.stop()
jvm.stdin.close()  # the JVM exits when its stdin closes, and writes the archive as it exits
jvm.wait()
"""


#: What module 10's kernel records besides (before the JVM stops): an Iceberg table written, read, its snapshots
#: listed, and a stream into it, in a scratch warehouse (the catalog reads its warehouse when first used).
ICEBERG_RECORDING = """
spark.conf.set("spark.sql.catalog.iceberg.warehouse", scratch + "/iceberg")
spark.sql("CREATE TABLE iceberg.archive.orders (order_id STRING, amount DECIMAL(10,2)) USING iceberg")
rows.writeTo("iceberg.archive.orders").append()
spark.table("iceberg.archive.orders").count()
spark.sql("SELECT count(*) FROM iceberg.archive.orders.snapshots").collect()
(source.selectExpr("'x' AS order_id", "CAST(1 AS DECIMAL(10,2)) AS amount").writeStream.format("iceberg")
 .trigger(availableNow=True).option("checkpointLocation", scratch + "/iceberg-checkpoint")
 .toTable("iceberg.archive.orders").awaitTermination())
"""
STOP_LINE = "jvm = SparkContext._gateway.proc"


def recording() -> str:
    """The recording this Python's kernel runs: RECORDING, with ICEBERG_RECORDING before the JVM stops under
    module 10's kernel."""
    if jars.spark_kind() == jars.MAIN_SPARK_KIND:
        return RECORDING
    return RECORDING.replace(STOP_LINE, ICEBERG_RECORDING.lstrip("\n") + STOP_LINE)


#: The recording takes about 30 s on two cores; one that takes this long is given up.
RECORDING_TIMEOUT_S = 600


def path() -> Path:
    """Where the archive for this JDK, these jars and this recording lives (it may not exist)."""
    output = version_text(java_executable())
    # the JDK's version and build; not the VM line, whose mode changes with JIT options
    version = "\n".join(line for line in output.splitlines() if "version" in line or "Runtime Environment" in line)
    kind = jars.spark_kind()  # the main kernel's jars, or module 10's
    digest = hashlib.sha256((version + jars.stamp(kind) + recording()).encode()).hexdigest()[:12]
    return settings().jars / f"{kind}-classes-{digest}.jsa"


def build(log=print) -> Path | None:
    """Record the archive (once per JDK, jars and recording). ``None`` if it could not be made."""
    archive = path()
    if archive.exists():
        return archive
    for old in settings().jars.glob(f"{jars.spark_kind()}-classes-*.jsa"):  # this kernel's older archives only
        old.unlink()
    scratch = tempfile.mkdtemp(prefix="class-archive-", dir=settings().state)
    options = " ".join((path_option("-Dderby.system.home", settings().state / "derby"), QUICK_JIT,
                        path_option("-XX:ArchiveClassesAtExit", archive)))
    topic = settings().lesson_prefix("class-archive") + "orders"
    started_broker = False
    try:
        bootstrap, started_broker = _a_broker(log)
        if bootstrap:
            kafka.ensure_topic(bootstrap, topic, partitions=1)  # the course's broker creates no topic by itself
        proc = _record(options, scratch, bootstrap, topic, archive, log)
        if bootstrap:
            kafka.delete_topics(bootstrap, [topic])
        failure = "" if proc.returncode == 0 and archive.exists() else (proc.stdout + proc.stderr)[-800:]
    except Exception as error:  # noqa: BLE001 - the archive is optional, whatever stopped its recording
        failure = f"{type(error).__name__}: {error}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if started_broker:
            broker.down(log=lambda msg: None)
    if failure:
        archive.unlink(missing_ok=True)  # optional: Spark starts without it, only slower
        log("could not record the class archive; Spark will start without it (slower):\n" + failure)
        return None
    return archive


#: What setup says before the recording (measured: about 30 s on two quiet cores; five minutes on a busy machine).
RECORDING_ESTIMATE = "about 30 s on a quiet two-core machine, several minutes on a busy one"


def recording_step(scratch: Path, archive: Path) -> str:
    """How far the recording got, read from what it has written so far (RECORDING's folders, the archive)."""
    if archive.exists():
        return f"step 5 of 5: the JVM writes the archive ({archive.stat().st_size / 1e6:.0f} MB so far)"
    if (scratch / "iceberg").exists():  # module 10's kernel only (ICEBERG_RECORDING)
        return "step 5 of 5: the stream is done; an Iceberg table and a stream into it, then the archive"
    if (scratch / "stream" / "_delta_log").exists():
        return "step 5 of 5: the stream is done; the JVM stops and writes the archive"
    if (scratch / "checkpoint").exists():
        return "step 4 of 5: a streaming query into Delta"
    if (scratch / "parquet").exists():
        return "step 3 of 5: Parquet written, reading the Delta table back"
    if (scratch / "delta").exists():
        return "step 2 of 5: writing a Delta table"
    return "step 1 of 5: starting Spark's JVM"


def _record(options: str, scratch: str, bootstrap: str, topic: str, archive: Path, log) -> subprocess.CompletedProcess:
    """Run RECORDING, saying at least every few seconds which of its steps it is on (stack/heartbeat.py)."""
    from .heartbeat import Step

    output = Path(scratch) / "recording.log"
    cmd = [sys.executable, "-c", recording(), options, scratch, bootstrap, topic]
    with Step("recording Spark's classes, so that every later Spark start is quicker", RECORDING_ESTIMATE,
              detail=lambda: recording_step(Path(scratch), archive), log=log) as step, open(output, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            code = proc.wait(timeout=RECORDING_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        finally:
            step.failed = proc.returncode != 0
    return subprocess.CompletedProcess(cmd, code, output.read_text(errors="replace"), "")


def _a_broker(log) -> tuple[str, bool]:
    """The course's broker for the recording: ``(address, started here)``, or ``("", False)``.

    A shared broker (a workshop's) is left alone: the archive is then recorded without Kafka,
    and the crash lab's drivers start a little slower.
    """
    s = settings()
    if s.shared:
        return "", False
    was_running = broker.status().answering
    if not was_running:
        log("starting the broker for the recording (a few seconds), to record Kafka's classes too ...")
        try:
            broker.up(log=lambda msg: None)
        except CourseError as error:
            log(f"{error}\nRecording the archive without Kafka's classes (drivers start a little slower).")
            return "", False
    return s.bootstrap, not was_running
