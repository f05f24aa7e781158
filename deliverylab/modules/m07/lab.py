"""Lab 07's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Answers are passed as lambdas, so a check whose exercise is not done yet says SKIP. Each exercise is judged on
a run the learner has not seen (checks/hidden.py). Exercise 1's crash cell is that run: its sizes come from the
exercise's seed, and it crashes the redeployed query too, in a batch 0 as large as the old query's batch 0
(notifications.crash_and_replay). Exercise 2's classifier also meets other good orders and other poison pills,
in several micro-batches (quarantine.hidden_pills), so a list of ids copied from the printout, or a rule that
fits only the demo's six bad records, fails there.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

from ...checks import hidden
from . import notifications, quarantine
from .quarantine import poison_lines

LAB = "07-what-breaks-lab"
#: The good orders of data/orders-with-poison-pills.jsonl: o-100000 .. o-100019.
GOOD_IDS = [f"o-{100000 + n}" for n in range(20)]


class _CrashCellRun:
    """The run exercise 1's checks judge: the one the crash cell ran, its sizes drawn from the exercise's seed
    (``pipe.seed_drawn``), which a FAIL names; read when a check first asks (a pipe still a TODO says SKIP)."""

    def __init__(self, pipe: Callable, notified: Callable):
        self._pipe, self._notified, self._runs = pipe, notified, None

    def __iter__(self):
        if self._runs is None:
            pipe = self._pipe()
            self._runs = [hidden.Run("the run above", getattr(pipe, "seed_drawn", None),
                                     lambda: notifications.outcome(pipe, self._notified()))]
        return iter(self._runs)


def check_notifier(checks, pipe: Callable, crash: Callable, notified: Callable) -> None:
    """Exercise 1: your foreachBatch writer with a notification, crashed after its write, then redeployed
    on a new checkpoint (a new query: its batch ids begin again at 0) and crashed again in the new query's
    batch 0, which holds as many orders as the old query's batch 0 (notifications.crash_and_replay).

    The crash cell is the hidden run: its sizes come from the exercise's seed, and the learner sees only
    the verdicts, so the checks judge it instead of running a second experiment."""
    ran = "your pipeline ran through the crash and the redeploy"
    runs = _CrashCellRun(pipe, notified)

    def judge_ran(_, run):
        return None if run.failure is None else ("no error", run.failure)

    def judge_table(_, run):
        found = run.ledger
        return None if found.lost == 0 and found.duplicated == 0 else ("0 lost, 0 duplicated", found.verdict_line())

    def judge_repeats(_, run):
        repeats = run.notified.repeated_batches
        return None if repeats == 0 else ("0", f"{repeats} batches notified more than once")

    def judge_count(_, run):
        n = run.notified
        return None if n.orders_notified == n.produced else (f"{n.produced} orders notified",
                                                              f"{n.orders_notified} orders notified")

    checks.on_runs(ran, pipe, runs, judge_ran,
                   hint="Your function or its query failed: the line above is the error. Fix it and run the "
                        "crash cell again (a query needs .option('checkpointLocation', out.checkpoint)).")
    checks.that("the crash hit your writer after its write, before the commit",
                lambda: crash().point == "after_sink_write" and crash().by_sigkill,
                expected="a SIGKILL after the sink write", found=lambda: crash().line(),
                hint="Run the cell that crashes the pipeline (notifications.crash_and_replay) again.",
                depends_on=ran)
    checks.on_runs("the orders table: every order exactly once", pipe, runs, judge_table,
                   hint="The table write must skip a replayed batch: which two Delta writer options did module 05 "
                        "use? Orders lost after the redeploy mean your app id stayed the same while batch ids "
                        "began again at 0: use out.app_id, which the redeploy changed.", depends_on=ran)
    checks.on_runs("no batch notified twice", pipe, runs, judge_repeats,
                   hint="A replay ran your function again, in whichever batch a crash hit (the redeployed "
                        "query's batch 0 too). What key does a replayed batch repeat, and what does your table "
                        "do with a key it has already seen?", depends_on=ran)
    checks.on_runs("the notifications count every order once", pipe, runs, judge_count,
                   hint="Fewer: a batch's notification was kept out because its key was already in the table. "
                        "After the redeploy, the new query's batch 0 is not the old query's batch 0, even with as "
                        "many orders: does your key tell the two queries apart? More: a batch was notified "
                        "again. Each notification carries its batch's number of orders (batch.count()).",
                   depends_on=ran)


def check_quarantine(checks, routed: Callable, classify: Callable, spark) -> None:
    """Exercise 2: your classifier, run over the poison-pill records in one stream (the run shown), and on a
    hidden run: other good orders and poison pills, handed to it in two or three micro-batches
    (``quarantine.classify_batches``; no stream, so it costs one Spark job a batch)."""
    def shown():
        return SimpleNamespace(routed=routed(), good=GOOD_IDS, bad=len(poison_lines()) - len(GOOD_IDS))

    def hidden_run(rng):
        pills = quarantine.hidden_pills(rng)
        return SimpleNamespace(routed=quarantine.classify_batches(spark, classify(), pills.lines, pills.batches),
                               good=pills.good_ids, bad=pills.bad)

    exercise = f"{LAB}:quarantine"
    runs = hidden.Runs(exercise, shown=shown, hidden=lambda rng: hidden.once(
        (exercise, id(classify()), hidden.seed_for(exercise)), (classify(),), lambda: hidden_run(rng)))
    ran = "the stream ran to the end"

    def judge_ran(_, run):
        return None if run.routed.error is None else ("no error", run.routed.error)

    def judge_total(_, run):
        r = run.routed
        return None if r.produced == r.good + len(r.quarantined) else (
            f"{r.produced} records in total", f"good={r.good} quarantined={len(r.quarantined)}")

    def judge_good(_, run):
        found = sorted(str(i) for i in run.routed.good_ids)
        if found == sorted(run.good):
            return None
        wrong = sorted(set(found) - set(run.good))
        missing = sorted(set(run.good) - set(found))
        return (f"the {len(run.good)} good orders", f"{len(found)} rows in the orders table"
                + (f"; not good orders: {', '.join(wrong[:3])}" if wrong else "")
                + (f"; good orders missing: {', '.join(missing[:3])}" if missing else ""))

    def judge_bad(_, run):
        n = len(run.routed.quarantined)
        return None if n == run.bad else (f"{run.bad} records quarantined", f"{n}")

    def judge_kept(_, run):
        broken = [row for row in run.routed.quarantined if row[0] is None or not row[1]]
        return None if not broken else ("raw and reason on every quarantined row", f"{broken[:3]}")

    checks.on_runs(ran, routed, runs, judge_ran,
                   hint="A record stopped the stream: your code raised on it, or it passed as a good order and "
                        "could not be written as one (an amount or a time that does not cast). Parse every field "
                        "as text, and give such a record a reason instead. Records reach your function in "
                        "micro-batches of any size and mix: do not count on what else is in the batch.")
    checks.on_runs("produced = good + quarantined", routed, runs, judge_total, depends_on=ran,
                   hint="Some records went nowhere: classify, do not filter. Return every record it is given, "
                        "with reason NULL for a good order and a reason for a bad one.")
    checks.on_runs("the good orders, and only them", routed, runs, judge_good, depends_on=ran,
                   hint="A record with a missing id, an amount that is not a number or an event time that is "
                        "not a real timestamp is not a good order, whatever its id or the order of its fields: "
                        "test what is in the fields, with the casts the orders table makes.")
    checks.on_runs("records quarantined", routed, runs, judge_bad, depends_on=ran,
                   hint="Every record that is not a good order is quarantined, the empty message too.")
    checks.on_runs("each quarantined record keeps its raw value and a reason", routed, runs, judge_kept,
                   depends_on=ran,
                   hint="Keep the Kafka value as text in 'raw', so a fixed record can be replayed later.")
