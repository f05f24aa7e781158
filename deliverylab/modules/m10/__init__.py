"""Module 10, Iceberg under the same crashes (on the Iceberg kernel: Spark 4.1 + Iceberg 1.12).

    tables      an Iceberg table read from its folder without a JVM: the newest metadata file, snapshots
                and their summaries, the current snapshot's ancestors, batch stamps, rows (pyiceberg)
    runs        the lesson's runs and table chores: a crash and a replay, the Delta txn-retention run, another
                writer's commit, expire_snapshots, the catalog-cache trap, the ledger without the foreign row
    twodrivers  two drivers on one checkpoint: Iceberg's sink commits batch N twice, Delta's fails the second
    scenarios   the lab's runs in one call each (helper of lab 10)
    hidden_runs the runs the lab's checks judge besides the one shown
    lab         the lab's checks, one function per exercise

The pipelines the lesson crashes are variants of the crash lab (crashlab/variants.py: iceberg_sink,
iceberg_append, iceberg_stamped, iceberg_merge), writing the crash lab's "iceberg" sink (crashlab/sinks.py).
"""
from . import runs, tables, twodrivers

__all__ = ["runs", "tables", "twodrivers"]
