"""Lab 09's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Answers are passed as lambdas, so a check whose exercise is not done yet says SKIP.
"""
from __future__ import annotations

from typing import Callable


def check_idempotency_key(checks, run: Callable) -> None:
    """Exercise 1: your idempotency key, sent with every notification of a task an executor kill retried."""
    checks.that("an executor died mid-task and Spark ran the task again",
                lambda: bool(run().killed) and run().retried,
                expected="a killed executor and a second attempt of its task",
                found=lambda: f"killed: {len(run().killed)} executor(s), attempts seen: {sorted(run().calls_per_attempt)}",
                hint="Run the cell that runs the query with your key: it kills the executor by itself.")
    checks.that("the Delta table: every order exactly once",
                lambda: run().table.lost == 0 and run().table.duplicated == 0,
                expected="0 lost, 0 duplicated", found=lambda: run().table.verdict_line(),
                hint="The table is written by Spark's commit protocol; if it is wrong, run the cell again.")
    checks.equal("every order's notification delivered", lambda: run().notified.lost, 0,
                 hint="Some orders' messages were refused as repeats although they were never sent: two different "
                      "orders must never share a key.")
    checks.equal("no notification delivered twice", lambda: run().notified.duplicated, 0,
                 hint="The retry called the service again for orders the killed attempt had already notified, "
                      "with a different key. Which part of the call changes between two attempts of the same "
                      "task, and which parts stay the same?")


def check_replication(checks, result: Callable) -> None:
    """Exercise 2: your topic and producer settings, with the leader of partition 0 killed mid-stream."""
    checks.that("every partition has a copy on each of the three brokers",
                lambda: result().topic.get("replication_factor") == 3,
                expected="replication factor 3", found=lambda: f"replication factor {result().topic.get('replication_factor')}",
                hint="With one copy, the partition dies with its leader; with two, one more failure does.")
    checks.that("a write with acks=all needs two copies in sync",
                lambda: str(result().topic.get("min.insync.replicas")) == "2",
                expected="min.insync.replicas=2", found=lambda: f"min.insync.replicas={result().topic.get('min.insync.replicas')}",
                hint="With min.insync.replicas=1, acks=all can be satisfied by the leader alone: the write is "
                     "acknowledged while one disk holds it.")
    checks.that("the producer waits for every in-sync replica",
                lambda: str(result().settings.get("acks")) in ("all", "-1"),
                expected="acks='all' (kafka-python says -1)", found=lambda: f"acks={result().settings.get('acks')!r}",
                hint="acks=1 is acknowledged by the leader alone: what happens to a record the leader had "
                     "acknowledged but not yet passed to a follower when it dies?")
    checks.that("the producer is idempotent",
                lambda: result().settings.get("enable_idempotence", True) is True,
                expected="enable_idempotence=True", found=lambda: f"enable_idempotence={result().settings.get('enable_idempotence')!r}",
                hint="A retried send whose first attempt did reach the old leader would be written twice.")
    checks.that("the topic: every order exactly once",
                lambda: result().in_topic.lost == 0 and result().in_topic.duplicated == 0,
                expected="0 lost, 0 duplicated", found=lambda: result().in_topic.verdict_line(),
                hint="Look at the producer errors line above the checks.")
    checks.that("the Delta table the stream wrote: every order exactly once",
                lambda: result().table.lost == 0 and result().table.duplicated == 0,
                expected="0 lost, 0 duplicated", found=lambda: result().table.verdict_line(),
                hint="The stream copies the topic: fix the topic first.")
