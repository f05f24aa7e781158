"""Module 09, failures beyond the driver: the course on a Spark standalone cluster and a three-broker
Kafka cluster (both started on this machine by stack/cluster.py and stack/brokers.py).

    clusters   use_the_clusters(): start both clusters, point the kernel (and what it starts) at them
    executors  an executor killed mid-task: the Outbox (a notification service with idempotency keys),
               the notify UDF, the run and what it left (the Delta table, the notifications)
    leaders    a partition leader killed mid-stream: producing through it, a stream reading through
               it, and a write refused by min.insync.replicas when one replica is left
    lab        the lab's checks, one function per exercise

The driver crashes of section 4 are the crash lab's own pipelines (crashlab/), unchanged.
"""
from . import clusters, executors, lab, leaders

__all__ = ["clusters", "executors", "lab", "leaders"]
