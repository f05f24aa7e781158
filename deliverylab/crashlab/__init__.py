"""The crash lab: Spark pipelines in driver processes of their own, killed at named moments.

    variants      the pipelines the course compares: ONE table, each a short function a lesson shows
    sinks         one small class per kind of sink: where it lives, what readers see, leftovers
    twophase      a small two-phase-commit sink: stage a batch invisibly, publish it once per batch id
    crashpoints   the named crash moments (the contract with the Java hook in java/)
    dbwrites      mid_sink_write between the row writes of a learner's SQLite writer
    pipeline      Pipeline: start, produce, drain, crash, restart (the driver process)
    record        what a pipeline did and left: checkpoint, batches, sink rows, status
    redeploy      a pipeline started again on a new checkpoint (where it resumes, which app id it writes)
    drivers       driver processes seen from the notebook, and the standby that makes restarts quick
    driver        the driver process itself (python -m deliverylab.crashlab.driver)
    files         every file a driver and a pipeline share, named once
    attempts      which batches ran and which runs were replays, from events alone
    chaos         crash one pipeline again and again, then count (python -m deliverylab chaos)
    panel         the crash panel: buttons for crash and restart, with Python twins

    pipe = crashlab.Pipeline(lesson, "delta_sink").start()
"""
from .drivers import warm_up
from .pipeline import Crash, Pipeline
from .variants import VARIANTS

__all__ = ["Crash", "Pipeline", "VARIANTS", "CrashPanel", "warm_up"]


def __getattr__(name):  # the panel needs ipywidgets: imported on first use only
    if name == "CrashPanel":
        from .panel import CrashPanel

        return CrashPanel
    raise AttributeError(name)
