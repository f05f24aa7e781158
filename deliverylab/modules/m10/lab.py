"""Lab 10's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Answers are passed as lambdas, so a check whose exercise is not done yet says SKIP. Each exercise is also judged
on a hidden run (checks/hidden.py, built in hidden_runs.py): exercise 1's writer is redeployed on the table the
run shown left, with a new checkpoint in the same folder, crashed right after its first commit in a batch drawn
from the seed, with other writers' commits before the restart, and then made to replay a batch the table was
rolled back past; exercise 2's plan runs on a table of its own where another writer and another streaming
query committed after the sink. A hidden run is built once per answer and seed, so running a check cell again
does not run it again.
"""
from __future__ import annotations

from typing import Callable

from ...checks import hidden
from . import hidden_runs

LAB = "10-iceberg-lab"


def _verdict(found, diagnosis: str = ""):
    if found.lost or found.duplicated:
        return "0 lost, 0 duplicated", f"{found.lost} lost, {found.duplicated} duplicated" + (
            f"; {diagnosis}" if diagnosis else "")
    return None


# --------------------------------------------------------------------------- exercise 1


def check_exactly_once_writer(checks, run: Callable, replay: Callable | None = None) -> None:
    """Exercise 1: your foreachBatch writer (``run``: the scenarios.WriterRun of the lab's cell), crashed after its
    write in batch 1 and replayed; and on a hidden run (``replay(shown, rng)``, default hidden_runs.replay_writer)."""
    ran, lost, duplicated = "exercise 1:ran", "exercise 1:lost", "exercise 1:duplicated"
    checks.that("your writer ran through the crash and the replay", lambda: run().failure is None, id=ran,
                expected="no error", found=lambda: run().failure,
                hint="The line above is what your query reported. Does your function return the started query, "
                     "checkpointed at out.checkpoint, and write each batch from a foreachBatch function? At each "
                     "start it is made again from its source, as a new driver would have it: it must import what it "
                     "needs itself, and nothing it keeps in Python survives a crash.")
    checks.that("the crash hit your writer after its write, before Spark's commit",
                lambda: run().point == "after_write", depends_on=ran,
                expected="a crash after your function returned for batch 1",
                found=lambda: "no crash: your query never reached batch 1" if run().point is None else run().point,
                hint="Run the cell above again: it crashes your writer once its function has returned for batch 1.")
    checks.that("after the replay: no order lost", lambda: run().ledger.lost == 0, depends_on=ran, id=lost,
                expected="0 lost orders", found=lambda: f"{run().ledger.lost} lost",
                hint="Your writer skipped orders it never wrote: skip a batch only when the mark of this query "
                     "(out.query_id()) and this batch is in the table's history.")
    checks.that("after the replay: no order written twice", lambda: run().ledger.duplicated == 0, depends_on=ran,
                id=duplicated, expected="0 duplicated orders", found=lambda: f"{run().ledger.duplicated} duplicated",
                hint="The replay wrote batch 1 again: nothing in the table told your writer that batch 1 was "
                     "committed. Put a mark of (query id, batch id) into the same commit as the rows "
                     "(.option(\"snapshot-property.<key>\", ...)) and look for it before writing, or make the write "
                     "idempotent by itself (a MERGE on order_id, an overwrite of the batch's own rows).")
    replay = replay or hidden_runs.replay_writer
    key = f"{LAB}:writer"
    runs = hidden.Runs(key, shown=run, hidden=lambda rng: hidden.once(
        ("writer", id(run()), hidden.seed_for(key)), (run(),), lambda: replay(run(), rng)))
    first = "exercise 1:hidden"
    checks.on_runs("redeployed with a new checkpoint, crashed right after its first commit in a batch, other "
                   "commits before the restart: nothing lost or written twice", run, runs, _judge_first,
                   depends_on=[ran, lost, duplicated], id=first,
                   hint="The check redeployed your writer on this table with a new checkpoint in the same folder (a "
                        "new query id, batch numbers from 0 again), crashed it right after the first commit it made "
                        "in a batch, and let another writer commit before the restart. The mark must be in the same "
                        "commit as the batch's rows, name the query as well as the batch, and be looked for among "
                        "all the ancestors of the current snapshot, not in the newest one only.")
    checks.on_runs("a batch rolled back out of the table before its replay is written again", run, runs,
                   _judge_second, depends_on=first,
                   hint="Before the replay the table was rolled back to the snapshot before the batch. That batch's "
                        "snapshot is still listed in <table>.snapshots, but it is no longer in the table's history: "
                        "look for your mark among the ancestors of the current snapshot (<table>.history where "
                        "is_current_ancestor), as Iceberg's own sink does.")


def _judge_first(_, found):
    if not hasattr(found, "case"):  # the run shown: judged by the checks above
        return None if found.failure is None and found.ledger is not None else ("no error", found.failure)
    if found.first is None:
        return "no error, 0 lost, 0 duplicated", f"your query stopped: {found.failure}"
    return _verdict(found.first, found.diagnosis)


def _judge_second(_, found):
    if not hasattr(found, "case"):
        return None
    if found.second is None:
        return "no error, 0 lost, 0 duplicated", f"your query stopped: {found.failure}"
    return _verdict(found.second, found.second_diagnosis)


# --------------------------------------------------------------------------- exercise 2


def check_maintenance_plan(checks, run: Callable, replay: Callable | None = None) -> None:
    """Exercise 2: your plan (``run``: the scenarios.PlanRun of the lab's cell) between a crash of Iceberg's sink
    after its commit and the replay; and on a hidden run (``replay(shown, rng)``, default hidden_runs.expire_plan)."""
    replay = replay or hidden_runs.expire_plan
    key = f"{LAB}:plan"
    runs = hidden.Runs(key, shown=run, hidden=lambda rng: hidden.once(
        ("plan", id(run()), hidden.seed_for(key)), (run(),), lambda: replay(run(), rng)))
    ran = "exercise 2:ran"
    checks.on_runs("your plan ran without an error", run, runs,
                   lambda _, r: None if r.failure is None else ("no error", r.failure), id=ran,
                   hint="The line above is the error your plan raised. expire_snapshots takes the table without the "
                        "catalog's name or with it (table => 'ns.name'), and older_than a TIMESTAMP.")
    checks.on_runs("after your plan, the sink's replay: nothing lost or written twice", run, runs, _judge_memory,
                   depends_on=ran,
                   hint="Iceberg's sink recognises a batch it committed by walking from the current snapshot through "
                        "its parents to the newest snapshot whose summary carries its query id "
                        "(spark.sql.streaming.queryId: the id in the checkpoint's metadata file). Other writers and "
                        "other streaming queries commit after it, how many times differs from run to run: keep this "
                        "query's newest snapshot in the ancestry and everything after it, whatever retain_last counts.")
    checks.on_runs("your plan expired every snapshot older than the query's last commit", run, runs, _judge_expired,
                   depends_on=ran,
                   hint="Your plan kept snapshots the sink does not need: everything older than this query's newest "
                        "snapshot in the current ancestry can go (older_than => that snapshot's commit time).")


def _judge_memory(_, found):
    if found.ledger is None:
        return "a replay", "none: your plan stopped"
    return _verdict(found.ledger, "" if found.kept else
                    "your plan expired the query's last commit from the current snapshot's ancestry")


def _judge_expired(_, found):
    if found.older_left == 0:
        return None
    return ("0 snapshots older than the query's last commit",
            f"{found.older_left} of the {found.older_before} there were before your plan")
