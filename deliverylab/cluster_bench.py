"""``python -m deliverylab.cluster_bench``: the cluster figures, next to their targets (issue 13).

Like ``deliverylab.bench``, a script that measures and prints and never fails a build. It
starts what is not running (the Spark cluster, then the three-broker Kafka cluster), and so
measures a cold start only when neither runs; it sums the resident memory of every daemon,
runs the cluster smoke (cluster_smoke.py), and stops again whatever it started.
"""
from __future__ import annotations

import time
from pathlib import Path

from .bench import _row
from .config import CourseError
from . import cluster_smoke
from .stack import brokers, cluster


def _rss_mb(pids) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def main() -> int:
    quiet = lambda m: None  # noqa: E731
    spark_was_up, kafka_was_up = cluster.status().ready, brokers.status().ready
    print("Beyond one machine: the local clusters, measured on this machine")
    try:
        start = time.monotonic()
        cluster.up(log=quiet)
        spark_s = time.monotonic() - start
        brokers.up(log=quiet)
        both_s = time.monotonic() - start
        _row("spark cluster up (master + 2 workers)", spark_s if not spark_was_up else "running", "s", "-")
        _row("+ kafka cluster up (3 brokers)", both_s if not (spark_was_up or kafka_was_up) else "running", "s",
             "< 30 s together")
        st, kst = cluster.status(), brokers.status()
        daemons = [st.master_pid, *st.worker_pids.values(), *kst.pids.values()]
        _row("daemons resident (6 JVMs, idle)", _rss_mb(p for p in daemons if p), "MB", "whole stack < 6 GB")
        try:
            figures = cluster_smoke.run(log=quiet)
        except CourseError as error:
            print(f"cluster smoke: did not complete: {error}")
        else:
            _row("cluster smoke (one Kafka->Delta batch)", figures["total_s"], "s", "< 90 s")
            print(f"  smoke: {figures['rows']} of {figures['produced']} orders in Delta, {figures['executors']} "
                  f"executor(s), ok={figures['ok']}")
    finally:
        if not kafka_was_up:
            brokers.down(log=quiet)
        if not spark_was_up:
            cluster.down(log=quiet)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
