"""Module 05, exactly-once sinks.

    merges      MERGE in the kernel: duplicate keys in a batch, deterministic columns, a relative
                update, Delta's txnAppId/txnVersion session settings, replays
    conflicts   another writer commits first: an append and a foreachBatch MERGE raced by a compaction,
                the MERGE's restart, and a retry inside the batch with the same or a new txnVersion
    sqlreplay   the lab's note after exercise 3: one transaction vs a key, after two kinds of crash (SQLite)
    scenarios   the lesson's and lab's runs in one call: a crash and a replay, a crash in the first
                batch of orders, a new checkpoint
    hidden_runs the runs the lab's checks judge besides the one shown: a MERGE into a copy of the table
                the exercise left, a writer's batch on a hidden topic run again after its write
    lab         the lab's checks, one function per exercise

The pipelines the lesson crashes are variants of the crash lab (crashlab/variants.py:
delta_sink, file_sink, delta_txn, delta_txn_per_checkpoint, control_table_after,
control_table_atomic, two_phase_commit, sqlite_upsert).
"""
from . import conflicts, hidden_runs, lab, merges, scenarios, sqlreplay

__all__ = ["conflicts", "hidden_runs", "lab", "merges", "scenarios", "sqlreplay"]
