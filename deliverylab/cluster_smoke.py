"""The cluster smoke run: one real micro-batch, Kafka -> Delta, through the local Spark cluster.

    python -m deliverylab.cluster_smoke        # prints `name: value` lines, exit 0 when it held

It starts the cluster if it is not running (and stops it again afterwards, leaving a cluster
that was already up alone), produces a few hundred seeded orders to a topic of its own on
the course's broker (or whatever DELIVERYLAB_BROKER names), and runs, in a fresh Python
process with ``DELIVERYLAB_SPARK_MASTER`` pointing at the cluster, the same SparkSession
builder the kernel and the crash-lab drivers use: a Kafka source, a Delta sink, one
``availableNow`` batch. It then checks what a cluster run must show: the session's master
is the cluster, the application got executors of its own (their folders appear under the
workers' work directories), and the Delta table holds every order exactly once.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

from .config import CourseError, settings
from .stack import cluster, kafka

ORDERS = 300

#: what runs in the driver process (a fresh interpreter: its SparkSession is built from the environment)
_DRIVER = """
import json, sys, time
started = time.monotonic()
from deliverylab.stack.session import get_spark
bootstrap, topic, folder = sys.argv[1:4]
spark = get_spark("cluster-smoke")
session_s = time.monotonic() - started
orders = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("startingOffsets", "earliest").load()
          .selectExpr("CAST(key AS STRING) AS order_id", "partition", "offset"))
query = (orders.writeStream.format("delta").option("checkpointLocation", folder + "/checkpoint")
         .trigger(availableNow=True).start(folder + "/table"))
query.awaitTermination()
progress = query.lastProgress or {}
table = spark.read.format("delta").load(folder + "/table")
print("RESULT " + json.dumps({
    "master": spark.sparkContext.master, "app_id": spark.sparkContext.applicationId,
    "executors": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1,
    "batch_id": progress.get("batchId"), "rows": table.count(),
    "distinct": table.select("order_id").distinct().count(),
    "session_s": round(session_s, 1), "total_s": round(time.monotonic() - started, 1)}), flush=True)
spark.stop()
"""


def run(orders: int = ORDERS, log=print, timeout_s: float = 240) -> dict:
    """Run the smoke and return its figures (``ok`` says whether every check held)."""
    s = settings()
    figures: dict = {}
    was_up = cluster.status().ready
    started = time.monotonic()
    st = cluster.up(log=log)
    figures["cluster_up_s"] = round(st.seconds, 1) if st.seconds is not None and not was_up else 0.0
    bootstrap = s.bootstrap
    topic = s.learner_prefix() + "cluster-smoke.orders"
    folder = s.lessons_dir / "cluster-smoke"
    try:
        if not kafka.answers(bootstrap):
            raise CourseError(f"No Kafka broker answers at {bootstrap}: run `python -m deliverylab stack up` first.")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        kafka.delete_topics(bootstrap, [topic])
        kafka.ensure_topic(bootstrap, topic)
        from .orders import produce_orders

        produce_orders(bootstrap, topic, orders, progress=False)
        env = dict(os.environ, DELIVERYLAB_SPARK_MASTER=cluster.master_url())
        try:
            proc = subprocess.run([sys.executable, "-c", _DRIVER, bootstrap, topic, str(folder)], env=env,
                                  capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise CourseError(f"The smoke run's driver did not finish within {timeout_s:.0f} s. Is the machine busy "
                              "(`uptime`)? Its executors' logs are under .state/cluster/work/.") from None
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            raise CourseError("The smoke run's driver failed:\n" + (proc.stdout + proc.stderr)[-3000:])
        figures.update(json.loads(lines[-1][len("RESULT "):]))
        app_dirs = sorted(p.parent.name for p in (s.state / "cluster" / "work").glob(f"*/{figures['app_id']}/*"))
        figures["executor_folders"] = len(app_dirs)
        figures["produced"] = orders
        figures["ok"] = (figures["master"] == cluster.master_url() and figures["executors"] >= 1
                         and figures["executor_folders"] >= 1 and figures["rows"] == orders
                         and figures["distinct"] == orders)
    finally:
        kafka.delete_topics(bootstrap, [topic])
        shutil.rmtree(folder, ignore_errors=True)
        if not was_up:
            cluster.down(log=log)
        figures["smoke_s"] = round(time.monotonic() - started, 1)
    return figures


def main() -> int:
    try:
        figures = run()
    except CourseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for key in ("master", "executors", "executor_folders", "batch_id", "produced", "rows", "distinct",
                "cluster_up_s", "session_s", "total_s", "smoke_s", "ok"):
        print(f"{key}: {figures.get(key)}")
    return 0 if figures.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
