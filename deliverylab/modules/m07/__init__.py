"""Module 07, what breaks exactly-once.

    notifications  the side effect of lesson section 1: read the notifications table, count repeats
    restarts       a deleted checkpoint: stop, delete, restart from earliest or latest
    kernel         short streams in the notebook's own SparkSession (availableNow): a restart after
                   the topic lost unread records, a changed query, a foreachBatch stopped mid-batch,
                   and Spark's error (first line, or its name)
    topicchanges   a topic added to or replaced in ``subscribe`` on a restart: read from earliest, or data loss
    logs           the warnings Spark's Kafka source logs during one run (the course's sessions log at
                   ERROR), and which class logged each: a task's reader or the driver
    keys           a MERGE keyed on a random id, run twice on the same batch
    clock          current_timestamp() on a replay: in the stream's plan, and inside foreachBatch
    quarantine     poison pills: raw records to a topic, classify each one, good rows and a
                   quarantine table written by one foreachBatch, the counts that must add up
    twocommits     the quarantine pipeline stopped between its two table commits, read, restarted
    lab            the lab's checks, one function per exercise

The pipelines the lesson crashes are variants of the crash lab (crashlab/variants.py:
notify_per_batch, notify_once, at_least_once, delta_txn).
"""
from . import clock, keys, kernel, lab, logs, notifications, quarantine, restarts, topicchanges, twocommits

__all__ = ["clock", "keys", "kernel", "lab", "logs", "notifications", "quarantine", "restarts", "topicchanges",
           "twocommits"]
