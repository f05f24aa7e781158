"""Module 01's consumer process: ``python -m deliverylab.modules.m01.process run --variant NAME ...``.

The loop that polls a batch, hands it to the variant (consumers.py) and logs one JSON
line per event, so the notebook (harness.py) can tell afterwards what happened up to
the moment the process died. It ends when the topic is drained, when it is told to stop
(SIGTERM), when its armed crash kills it, or when the notebook that started it goes away.

A batch polled while the consumer's group is rebalancing is put back (the loop seeks to its
first records and polls again, logging "put_back"): Kafka would refuse its offset commit, and
kafka-python's advice for that error is to poll and try again. Polling alone is not always
enough: kafka-python (3.0.12) can be left in its rebalancing state with no rejoin scheduled,
and then every poll returns records while the group never settles (a make test run spun like
that for 60 s). So the loop also asks the consumer to rejoin, which the next poll does, and it
gives up with an error after ``MAX_PUT_BACKS`` batches in a row were put back.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Callable

from ...config import CourseError
from ...stack import kafka, processes
from .consumers import CRASH_MOMENTS, VARIANTS, CrashPoint, check_moment, check_variant, order_of

DEFAULT_BATCH_SIZE = 100
#: Batches in a row put back before the loop stops with an error (a poll takes at most 200 ms).
MAX_PUT_BACKS = 100


# --------------------------------------------------------------------------- the consumer process


def open_db(db_path: str | Path, variant: str) -> sqlite3.Connection:
    Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(db_path), timeout=30)
    with db:
        for ddl in VARIANTS[variant].tables:
            db.execute(ddl)
    return db


def consume(variant: str, *, bootstrap: str, topic: str, group: str, db_path: str | Path,
            batch_size: int = DEFAULT_BATCH_SIZE, crash: str | None = None, crash_batch: int | None = None,
            until_drained: bool = False, max_records: int | None = None,
            log: Callable[[dict], None] = print, parent: processes.ParentWatch | None = None) -> dict:
    """The consumer loop (runs in the child process). Returns the end event it logged."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import CommitFailedError, RebalanceInProgressError

    spec = VARIANTS[check_variant(variant)]
    if crash is not None:
        check_moment(crash)
    crash_point = CrashPoint(moment=crash, batch=crash_batch, log=log)
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(True))

    db = open_db(db_path, variant)
    # on a class broker with logins it logs in: this process reads the notebook's settings from the
    # environment and the workshop file it inherits (never from its command line, which ps shows)
    consumer = kafka.client(
        KafkaConsumer, bootstrap,
        group_id=group if spec.uses_group else None,
        # static membership: a restarted consumer takes over the killed one's place at once
        # instead of waiting for the broker to notice that the dead one stopped heartbeating
        group_instance_id=f"{group}.consumer" if spec.uses_group else None,
        # a long session: on a busy machine a late heartbeat must not evict the member, or the
        # broker rebalances the group and the next offset commit fails (RebalanceInProgress);
        # a killed member is replaced at once by its restart anyway (static membership)
        session_timeout_ms=45000,
        client_id=f"deliverylab-{variant}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=batch_size,
        allow_auto_create_topics=False,
    )
    batches = records = put_backs = 0
    reason = "stopped"
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            kafka.refuse_if_hidden(bootstrap, topic, "read topic")  # a class broker's ACLs: one line that says so
            raise CourseError(f"Topic {topic!r} does not exist yet. Produce orders first, e.g. lesson.produce_orders(600).")
        end = consumer.end_offsets([TopicPartition(topic, p) for p in sorted(partitions)])
        spec.start(consumer, db, topic)
        log({"event": "start", "variant": variant, "pid": os.getpid(), "group": group if spec.uses_group else None,
             "end_offsets": {str(tp.partition): o for tp, o in end.items()}})
        while not stopping and not (parent and parent.gone()):
            if max_records is not None and records >= max_records:
                reason = "max_records"
                break
            if until_drained and _caught_up(consumer, end):
                reason = "drained"
                break
            want = batch_size if max_records is None else min(batch_size, max_records - records)
            polled = consumer.poll(timeout_ms=200, max_records=want)
            batch = [record for tp in sorted(polled) for record in polled[tp]]
            if not batch:
                continue
            if spec.uses_group and not group_is_stable(consumer):
                # the group is rebalancing: a commit now would be refused, so read the batch again afterwards
                put_back(consumer, polled)
                log({"event": "put_back", "records": len(batch), "reason": "the consumer group is rebalancing"})
                put_backs = _count_put_back(put_backs, group)
                continue
            batches += 1
            crash_point.current_batch = batches
            log({"event": "batch", "batch": batches, "records": len(batch),
                 "offsets": {str(tp.partition): [rs[0].offset, rs[-1].offset] for tp, rs in sorted(polled.items()) if rs},
                 "order_ids": [order_of(record)["order_id"] for record in batch]})
            crash_point.maybe_crash("after_poll")
            try:
                spec.handle(consumer, db, batch, crash_point)
            except (CommitFailedError, RebalanceInProgressError) as refused:
                # a rebalance began after the check above: what the variant did before the commit
                # stays done (write_then_commit's rows: the batch will be written twice, as a crash would)
                put_back(consumer, polled)
                log({"event": "put_back", "batch": batches, "records": len(batch), "reason": type(refused).__name__})
                batches -= 1  # the batch gets this number again when it is read again
                put_backs = _count_put_back(put_backs, group)
                continue
            records += len(batch)
            put_backs = 0
            log({"event": "batch_done", "batch": batches})
            crash_point.maybe_crash("after_batch")
    finally:
        consumer.close(autocommit=False)
        db.close()
    ended = {"event": "end", "reason": reason, "batches": batches, "records": records}
    log(ended)
    return ended


def group_is_stable(consumer) -> bool:
    """Has this consumer joined its group, with no rebalance under way? Only then does Kafka take its commits.

    kafka-python has no public call for this; its coordinator's state is read (kafka-python is
    pinned in requirements.txt, and tests/modules/test_m01_process.py checks this on a real group).
    """
    return consumer._coordinator.generation_if_stable() is not None


def put_back(consumer, polled: dict) -> None:
    """Make the next poll return these records again (each partition seeks back to its first record
    polled), and the group settle first: the consumer is asked to rejoin its group, which the next
    poll does before it fetches (kafka-python's coordinator, see the module's docstring)."""
    assigned = consumer.assignment()
    for tp, polled_records in polled.items():
        if polled_records and tp in assigned:
            consumer.seek(tp, polled_records[0].offset)
    if consumer.config["group_id"] is not None:
        consumer._coordinator.request_rejoin()


def _count_put_back(put_backs: int, group: str) -> int:
    put_backs += 1
    if put_backs >= MAX_PUT_BACKS:
        raise CourseError(f"The consumer group {group!r} kept rebalancing: {put_backs} batches in a row were read "
                          "and put back. Check the broker (`python -m deliverylab stack status`) and run the cell again.")
    return put_backs


def _caught_up(consumer, end: dict) -> bool:
    """True once this consumer's position has reached the end offsets seen at start, everywhere."""
    assigned = consumer.assignment()
    for tp, last in end.items():
        if last == 0:
            continue
        if tp not in assigned or consumer.position(tp) < last:
            return False
    return True


# --------------------------------------------------------------------------- command line


def _json_log(path: str | None) -> Callable[[dict], None]:
    # line-buffered: each event reaches the file (the kernel) before the next step, so a
    # SIGKILL right after it cannot lose it
    stream = open(path, "a", buffering=1, encoding="utf-8") if path else sys.stdout

    def log(event: dict) -> None:
        stream.write(json.dumps(event) + "\n")
        stream.flush()

    return log


def main(argv: list[str] | None = None) -> int:
    argv, parent = processes.parent_pid_from(list(sys.argv[1:] if argv is None else argv))
    parser = argparse.ArgumentParser(prog="python -m deliverylab.modules.m01.process",
                                     description="Run one consumer variant of module 01 (one JSON line per event).")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="consume the orders topic into a SQLite file")
    run.add_argument("--variant", required=True, choices=list(VARIANTS))
    run.add_argument("--bootstrap", required=True)
    run.add_argument("--topic", required=True)
    run.add_argument("--group", required=True, help="consumer group id (offsets_with_data does not use it)")
    run.add_argument("--db", required=True, help="SQLite file to write")
    run.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    run.add_argument("--crash", choices=list(CRASH_MOMENTS), default="between_steps",
                     help="moment of the crash (needs --crash-batch)")
    run.add_argument("--crash-batch", type=int, default=None, help="kill this process with SIGKILL in batch N (from 1)")
    run.add_argument("--until-drained", action="store_true", help="exit once the end offsets seen at start are reached")
    run.add_argument("--max-records", type=int, default=None)
    run.add_argument("--log", default=None, help="file for the JSON events (default: stdout)")
    sub.add_parser("variants", help="list the variants")
    args = parser.parse_args(argv)
    if args.command == "variants":
        for name, v in VARIANTS.items():
            print(f"{name:<18} {v.guarantee}: {v.summary}")
        return 0
    try:
        consume(args.variant, bootstrap=args.bootstrap, topic=args.topic, group=args.group, db_path=args.db,
                batch_size=args.batch_size, crash=args.crash if args.crash_batch else None,
                crash_batch=args.crash_batch, until_drained=args.until_drained, max_records=args.max_records,
                log=_json_log(args.log), parent=processes.ParentWatch(parent) if parent else None)
    except CourseError as error:
        print(f"CourseError: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
