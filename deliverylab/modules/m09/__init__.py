"""Module 09, failures beyond the driver: the course on a Spark standalone cluster and a three-broker
Kafka cluster (both started on this machine by stack/cluster.py and stack/brokers.py).

    clusters   use_the_clusters(): start both clusters, point the kernel (and what it starts) at them
    executors  an executor killed mid-task: the Outbox (a notification service with idempotency keys),
               the notify UDF, the run and what it left (the Delta table, the notifications)
    repeats    a Python UDF called more or fewer times than once per row, with no failure at all
    leaders    a partition leader killed mid-stream: producing through it, and a stream reading through it
    durability what an acknowledgement promises: the cluster's settings, a write refused by
               min.insync.replicas and an acks=1 write no reader sees while one replica is left,
               and an acks=1 write lost when the leader dies before its follower fetched it
    lab        the lab's checks, one function per exercise
    hidden_runs  the lab's hidden runs: a batch of another topic whose tasks were killed (played in the kernel
               on a real Outbox), and which partition's leader is killed, and when

The driver crashes of section 4 are the crash lab's own pipelines (crashlab/), unchanged.
"""
from . import clusters, durability, executors, lab, leaders, repeats

__all__ = ["clusters", "durability", "executors", "lab", "leaders", "repeats"]
