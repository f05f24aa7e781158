"""Lab 07's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Answers are passed as lambdas, so a check whose exercise is not done yet says SKIP.
"""
from __future__ import annotations

from typing import Callable

from .quarantine import poison_lines

#: The good orders of data/orders-with-poison-pills.jsonl: o-100000 .. o-100019.
GOOD_IDS = [f"o-{100000 + n}" for n in range(20)]


def check_notifier(checks, pipe: Callable, crash: Callable, notified: Callable) -> None:
    """Exercise 1: your foreachBatch writer with a notification, crashed after its write, then redeployed
    on a new checkpoint (a new query: its batch ids begin again at 0)."""
    ran = "your pipeline ran through the crash and the redeploy"
    checks.that(ran, lambda: pipe().failure is None, expected="no error", found=lambda: pipe().failure,
                hint="Your function or its query failed: the line above is the error. Fix it and run the "
                     "crash cell again (a query needs .option('checkpointLocation', out.checkpoint)).")
    checks.that("the crash hit your writer after its write, before the commit",
                lambda: crash().point == "after_sink_write" and crash().by_sigkill,
                expected="a SIGKILL after the sink write", found=lambda: crash().line(),
                hint="Run the cell that crashes the pipeline (notifications.crash_and_replay) again.",
                depends_on=ran)
    checks.that("the orders table: every order exactly once",
                lambda: pipe().ledger().lost == 0 and pipe().ledger().duplicated == 0,
                expected="0 lost, 0 duplicated", found=lambda: pipe().ledger().verdict_line(),
                hint="The table write must skip a replayed batch: which two Delta writer options did module 05 "
                     "use? Orders lost after the redeploy mean your app id stayed the same while batch ids "
                     "began again at 0: use out.app_id, which the redeploy changed.", depends_on=ran)
    checks.equal("no batch notified twice", lambda: notified().repeated_batches, 0,
                 hint="The replay ran your function again. What key does a replayed batch repeat, "
                      "and what does your table do with a key it has already seen?", depends_on=ran)
    checks.that("the notifications count every order once",
                lambda: notified().orders_notified == notified().produced,
                expected=lambda: f"{notified().produced} orders notified",
                found=lambda: f"{notified().orders_notified} orders notified",
                hint="Fewer: a batch's notification was kept out. After the redeploy, the new query's batch 0 "
                     "is not the old query's batch 0: does your key tell the two queries apart? More: a batch "
                     "was notified again. Each notification carries its batch's number of orders (batch.count()).",
                depends_on=ran)


def check_quarantine(checks, routed: Callable) -> None:
    """Exercise 2: your classifier, run over the poison-pill records in one stream."""
    checks.that("the stream ran to the end", lambda: routed().error is None,
                expected="no error", found=lambda: routed().error,
                hint="A record stopped the stream: your code raised on it, or it passed as a good order and "
                     "could not be written as one (an amount or a time that does not cast). Parse every field "
                     "as text, and give such a record a reason instead.")
    checks.that("produced = good + quarantined",
                lambda: routed().produced == routed().good + len(routed().quarantined),
                expected=lambda: f"{routed().produced} records in total",
                found=lambda: f"good={routed().good} quarantined={len(routed().quarantined)}",
                hint="Some records went nowhere: classify, do not filter. Return every record it is given, "
                     "with reason NULL for a good order and a reason for a bad one.")
    checks.equal("the good orders, and only them", lambda: sorted(str(i) for i in routed().good_ids), GOOD_IDS,
                 hint="A record with a missing id, a bad amount or a bad time is not a good order: give it a reason.")
    checks.equal("records quarantined", lambda: len(routed().quarantined),
                 len(poison_lines()) - len(GOOD_IDS),
                 hint="There are six bad records, the empty message among them.")
    checks.that("each quarantined record keeps its raw value and a reason",
                lambda: all(raw is not None and reason for raw, reason in routed().quarantined),
                expected="raw and reason on every quarantined row",
                found=lambda: [row for row in routed().quarantined if row[0] is None or not row[1]][:3],
                hint="Keep the Kafka value as text in 'raw', so a fixed record can be replayed later.")
