"""The course's SparkSession: one per Python process, local, quiet, with Delta and Kafka.

Jars come from the project-local cache through ``spark.jars`` (resolved once by
``make setup``), so starting Spark never touches the network.
"""
from __future__ import annotations

import os

from . import jars
from .config import HOST, settings
from .jvm import require_java

#: Internal Spark setting that names the class writing checkpoint files. The crash lab
#: points it at the course's crash hook (see deliverylab/jvm/crashhook) in pipeline drivers.
CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
CRASH_HOOK_CLASS = "deliverylab.crashhook.CrashPointCheckpointFileManager"

_session = None


def spark_conf(app_name: str = "exactly-once-for-real", crash_hook: bool = False) -> dict[str, str]:
    s = settings()
    conf = {
        "spark.master": "local[2]",
        "spark.app.name": app_name,
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.driver.memory": "1g",
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.jars": ",".join(str(p) for p in jars.jars("spark")),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.warehouse.dir": str(s.state / "warehouse"),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={s.state / 'derby'}",
        "spark.sql.session.timeZone": "UTC",
        # Delta rebuilds a table's state with this many tasks (default 50): tiny tables, two cores
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.ui.showConsoleProgress": "false",
    }
    if crash_hook:
        conf[CHECKPOINT_FILE_MANAGER] = CRASH_HOOK_CLASS
    return conf


def get_spark(app_name: str = "exactly-once-for-real", crash_hook: bool = False):
    """Build the SparkSession once per process and return it (later calls return the same one)."""
    global _session
    if _session is not None and _session._jsc is not None and not _session._jsc.sc().isStopped():
        return _session
    require_java()
    os.environ.setdefault("SPARK_LOCAL_IP", HOST)
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in spark_conf(app_name, crash_hook).items():
        builder = builder.config(key, value)
    _session = builder.getOrCreate()
    _session.sparkContext.setLogLevel("ERROR")
    return _session


def stop_spark() -> None:
    global _session
    if _session is not None:
        _session.stop()
        _session = None


def _python() -> str:
    import sys

    return sys.executable
