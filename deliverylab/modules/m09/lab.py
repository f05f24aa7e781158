"""Lab 09's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Answers are passed as lambdas, so a check whose exercise is not done yet says SKIP. Each exercise is also judged on
a hidden run (checks/hidden.py; the runs are built in hidden_runs.py): the idempotency key on a batch the learner has
not seen (more partitions, partitions of over a thousand records, order ids past o-000999, some tasks killed, one of
them twice), played on a real Outbox in the kernel; the settings with the leader of a hidden partition killed after
a hidden number of orders (the run the lab's cell makes, so it costs no second leader kill).
"""
from __future__ import annotations

import random
from typing import Callable

from ...checks import hidden
from . import hidden_runs

LAB = "09-beyond-the-driver-lab"


# --------------------------------------------------------------------------- exercise 1: an idempotency key


def _notified(found):
    """The notifications' ledger of the run shown (an ExecutorKill) or of a hidden one (hidden_runs.Notified)."""
    return found.notified


def check_idempotency_key(checks, run: Callable, key: Callable) -> None:
    """Exercise 1: your idempotency key, sent with every notification of a task an executor kill retried; then
    the same key on a hidden batch (hidden_runs.retried_tasks), its notifications sent through a real Outbox."""
    retried = "an executor died mid-task and Spark ran the task again"
    checks.that(retried, lambda: bool(run().killed) and run().retried,
                expected="a killed executor and a second attempt of its task",
                found=lambda: f"killed: {len(run().killed)} executor(s), attempts seen: {sorted(run().calls_per_attempt)}",
                hint="Run the cell that runs the query with your key: it kills the executor by itself.")
    checks.that("the Delta table: every order exactly once",
                lambda: run().table.lost == 0 and run().table.duplicated == 0,
                expected="0 lost, 0 duplicated", found=lambda: run().table.verdict_line(),
                hint="The table is written by Spark's commit protocol; if it is wrong, run the cell again.",
                depends_on=retried)
    runs = hidden.Runs(f"{LAB}:key", shown=run,
                       hidden=lambda rng: hidden_runs.notify_retried(hidden_runs.retried_tasks(rng), key()))

    def delivered(_, found):
        lost = _notified(found).lost
        why = f": {found.shared}" if getattr(found, "shared", None) else ""
        return None if lost == 0 else ("0 lost", f"{lost} orders never notified{why}")

    def once(_, found):
        twice = _notified(found).duplicated
        why = f": {found.changed}" if getattr(found, "changed", None) else ""
        return None if twice == 0 else ("0 duplicated", f"{twice} orders notified twice{why}")

    checks.on_runs("every order's notification delivered", key, runs, delivered, depends_on=retried,
                   hint="Some orders' messages were refused as repeats although they were never sent: two different "
                        "orders must never share a key, however many partitions the topic has and however far its "
                        "offsets and order ids have run.")
    checks.on_runs("no notification delivered twice", key, runs, once, depends_on=retried,
                   hint="The retry called the service again for orders the killed attempt had already notified, "
                        "with a different key. Which part of the call changes between two attempts of the same "
                        "task, and which parts stay the same?")


# --------------------------------------------------------------------------- exercise 2: settings under a leader kill


def hidden_kill() -> dict:
    """The leader kill of exercise 2 for this kernel (its exercise seed): which partition's leader, after how many
    orders; stream_through_a_leader_kill's options, with its lines keeping both hidden."""
    return {**hidden_runs.leader_kill(random.Random(hidden.seed_for(f"{LAB}:replication"))), "hidden": True}


def check_replication(checks, result: Callable) -> None:
    """Exercise 2: your topic and producer settings, with the leader of a hidden partition killed mid-stream after
    a hidden number of orders (the run of the lab's cell, made with hidden_kill())."""
    took = "Kafka took your settings"
    checks.that(took, lambda: result().refused is None, expected="the topic created, the producer built",
                found=lambda: result().refused,
                hint="That line is Kafka's (or kafka-python's) own reason: check each setting's name and value "
                     "against the lesson (kafka-python's names use underscores, topic configs are text).")
    checks.that("every partition has a copy on each of the three brokers",
                lambda: result().topic.get("replication_factor") == 3,
                expected="replication factor 3", found=lambda: f"replication factor {result().topic.get('replication_factor')}",
                hint="With one copy, the partition dies with its leader; with two, one more failure does.", depends_on=took)
    checks.that("a write with acks=all needs two copies in sync",
                lambda: str(result().topic.get("min.insync.replicas")) == "2",
                expected="min.insync.replicas=2", found=lambda: f"min.insync.replicas={result().topic.get('min.insync.replicas')}",
                hint="With min.insync.replicas=1, acks=all can be satisfied by the leader alone: the write is "
                     "acknowledged while one disk holds it. Set it on the topic: a cluster's default is not yours "
                     "to count on.", depends_on=took)
    checks.that("no replica out of sync can become the leader",
                lambda: str(result().topic.get("unclean.leader.election.enable")).lower() != "true",
                expected="unclean.leader.election.enable left false",
                found=lambda: f"unclean.leader.election.enable={result().topic.get('unclean.leader.election.enable')}",
                hint="An unclean election lets a replica that missed acknowledged writes lead: those writes are gone "
                     "for every reader. The lesson's cluster settings say what this cluster does.", depends_on=took)
    checks.that("the producer waits for every in-sync replica",
                lambda: str(result().settings.get("acks")) in ("all", "-1"),
                expected="acks='all' (kafka-python says -1)", found=lambda: f"acks={result().settings.get('acks')!r}",
                hint="acks=1 is acknowledged by the leader alone: what happens to a record the leader had "
                     "acknowledged but not yet passed to a follower when it dies?", depends_on=took)
    checks.that("the producer is idempotent",
                lambda: result().settings.get("enable_idempotence", True) is True,
                expected="enable_idempotence=True", found=lambda: f"enable_idempotence={result().settings.get('enable_idempotence')!r}",
                hint="A retried send whose first attempt did reach the old leader would be written twice. kafka-python "
                     "turns idempotence off by itself when another setting cannot go with it.", depends_on=took)
    runs = hidden.Runs(f"{LAB}:replication", hidden=lambda rng: (result(), hidden_runs.leader_kill(rng)))

    def as_drawn(found, drawn) -> tuple[str, str] | None:
        if (found.partition, found.kill_after) != (drawn["partition"], drawn["kill_after"]):
            return ("the leader kill lab.hidden_kill() drew for this kernel",
                    "another one: run the cell as the lab has it, with **lab.hidden_kill()")
        return None

    def in_topic(_, run):
        found, drawn = run
        ledger = found.in_topic
        return as_drawn(found, drawn) or (None if ledger.lost == 0 and ledger.duplicated == 0 else
                                           ("0 lost, 0 duplicated", ledger.verdict_line()))

    def in_table(_, run):
        found, drawn = run
        ledger = found.table
        return as_drawn(found, drawn) or (None if ledger.lost == 0 and ledger.duplicated == 0 else
                                           ("0 lost, 0 duplicated", ledger.verdict_line()))

    checks.on_runs("the topic: every order exactly once", result, runs, in_topic, depends_on=took,
                   hint="Look at the producer errors line above the checks.")
    checks.on_runs("the Delta table the stream wrote: every order exactly once", result, runs, in_table,
                   depends_on=took, hint="The stream copies the topic: fix the topic first.")
