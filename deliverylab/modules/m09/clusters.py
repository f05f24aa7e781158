"""Moving this notebook onto the two clusters: the README's two settings, set from a cell.

``use_the_clusters()`` starts what is not running yet (the Spark standalone cluster: a master
and two workers; the three-broker Kafka cluster) and sets, in this kernel's environment, the
two variables every part of the course reads:

    DELIVERYLAB_SPARK_MASTER=spark://127.0.0.1:7077                           (stack/cluster.py)
    DELIVERYLAB_BROKER=127.0.0.1:9192,127.0.0.1:9202,127.0.0.1:9212           (stack/brokers.py)

Call it before ``deliverylab.setup(...)`` and before the first ``get_spark()``: a SparkSession
takes its master when it starts, and crash-lab drivers inherit the kernel's environment.

``application(spark)`` says what the master gave this notebook's application: how many executors
(besides the driver) have registered with it, and how many cores the master granted it.
"""
from __future__ import annotations

import os
import time

from ...config import CourseError, settings
from ...stack import brokers, cluster

SPARK_MASTER_VARIABLE = "DELIVERYLAB_SPARK_MASTER"
BROKER_VARIABLE = "DELIVERYLAB_BROKER"


def use_the_clusters(log=print) -> list[str]:
    """Start both clusters if needed, point this kernel (and every process it starts) at them,
    and return a few stable lines saying what the course now runs on."""
    quiet = lambda message: None  # noqa: E731 - the lines returned say what matters
    spark_cluster = cluster.up(log=quiet)
    kafka_cluster = brokers.up(log=quiet)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and not active.sparkContext.master.startswith("spark://"):
        raise CourseError("This kernel already has a local SparkSession, and a session keeps the master it "
                          "started with. Restart the kernel (Kernel > Restart Kernel) and run this cell first.")
    os.environ[SPARK_MASTER_VARIABLE] = cluster.master_url()
    os.environ[BROKER_VARIABLE] = brokers.bootstrap()
    s = settings()
    lines = [f"spark     {s.spark_master}: {spark_cluster.alive} workers alive",
             f"kafka     {len(kafka_cluster.live)} brokers ({', '.join(str(n) for n in sorted(kafka_cluster.live))}), "
             f"new topics get {brokers.REPLICATION['default.replication.factor']} replicas, "
             f"min.insync.replicas={brokers.REPLICATION['min.insync.replicas']}"]
    for line in lines:
        log(line)
    return lines


def application(spark, timeout_s: float = 60) -> dict[str, int]:
    """``{"executors": n, "cores": c}`` for this notebook's application, once its first executor has
    registered (the master starts executors a moment after the application asks for them)."""
    app_id = spark.sparkContext.applicationId
    deadline = time.monotonic() + timeout_s
    while True:
        executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1   # the driver is in it too
        apps = [a for a in (cluster.master_json() or {}).get("activeapps", []) if a.get("id") == app_id]
        if executors >= 1 and apps and apps[0].get("cores"):
            return {"executors": executors, "cores": int(apps[0]["cores"])}
        if time.monotonic() > deadline:
            raise CourseError(f"No executor registered with application {app_id} within {timeout_s:.0f} s. "
                              "`python -m deliverylab cluster status` shows whether the workers are alive.")
        time.sleep(0.3)
