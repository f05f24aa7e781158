"""Module 06's consume-transform-produce relay: ``python -m deliverylab.modules.m06.relay run ...``.

The relay reads orders from one topic, enriches each one, and writes it to another topic,
one Kafka transaction per batch. The batch's output records and the consumer group's new
offsets go into the same transaction (``send_offsets_to_transaction``), so they become
visible together or not at all. This is Kafka's own exactly-once, Kafka to Kafka, with no
Spark involved.

Like module 01's consumers it runs in a process of its own and logs one JSON line per
event, so the notebook (harness.py) can tell afterwards what happened before the process
died. Armed with ``--crash-transaction N``, it kills itself with SIGKILL at a named moment
of its N-th transaction (:data:`CRASH_MOMENTS`).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from decimal import Decimal
from typing import Callable

from ...config import CourseError
from ...stack import kafka, processes

#: The moments of one transaction at which the relay can be killed, in the order they come.
CRASH_MOMENTS = {
    "after_send": "the batch's output records are in the topic, inside an open transaction; no offsets yet",
    "before_commit": "output records and consumer offsets are both in the open transaction; commit not sent",
    "after_commit": "the transaction is committed: output and offsets are visible together",
}
DEFAULT_BATCH_SIZE = 50


def check_moment(moment: str) -> str:
    if moment not in CRASH_MOMENTS:
        raise CourseError(f"Unknown crash moment {moment!r}. Moments: {', '.join(CRASH_MOMENTS)}.")
    return moment


# --------------------------------------------------------------------------- the code the lesson shows


def enrich(value: bytes) -> bytes:
    """The transform: the same order, with a size band added (amount and id unchanged)."""
    order = json.loads(value, parse_float=Decimal)
    order["band"] = "large" if Decimal(str(order["amount"])) >= 100 else "small"
    return json.dumps(order, default=str, sort_keys=True).encode()


def relay_batches(consumer, producer, sink_topic: str, crash, batch_size: int, done: Callable[[], bool]) -> int:
    """Poll a batch, write its enriched records and its offsets in ONE transaction, repeat."""
    from kafka.structs import OffsetAndMetadata

    transactions = 0
    while not done():
        polled = consumer.poll(timeout_ms=300, max_records=batch_size)
        batch = [record for tp in sorted(polled) for record in polled[tp]]
        if not batch:
            continue
        transactions += 1
        crash.starting(transactions, batch)

        producer.begin_transaction()
        for record in batch:
            producer.send(sink_topic, key=record.key, value=enrich(record.value))
        crash.maybe("after_send")

        next_offsets = {tp: OffsetAndMetadata(records[-1].offset + 1, "", -1) for tp, records in polled.items()}
        producer.send_offsets_to_transaction(next_offsets, consumer.group_metadata())
        crash.maybe("before_commit")

        producer.commit_transaction()
        crash.committed()
        crash.maybe("after_commit")
    return transactions


# --------------------------------------------------------------------------- the process around it


class CrashPoint:
    """Logs each transaction and SIGKILLs this process at the armed moment of the armed transaction.

    Before the kill it waits until the broker has every record sent so far (``flush``), so
    the records of the open transaction really are in the output topic when the process dies.
    """

    def __init__(self, moment: str | None, transaction: int | None, log: Callable[[dict], None], flush):
        self.moment, self.transaction, self.log, self.flush = moment, transaction, log, flush
        self.current = 0

    def starting(self, number: int, batch: list) -> None:
        self.current = number
        self.log({"event": "transaction", "transaction": number, "records": len(batch),
                  "order_ids": [json.loads(r.value)["order_id"] for r in batch]})

    def committed(self) -> None:
        self.log({"event": "committed", "transaction": self.current})

    def maybe(self, moment: str) -> None:
        if moment == self.moment and self.current == self.transaction:
            self.flush()
            self.log({"event": "crash", "moment": moment, "transaction": self.current})
            os.kill(os.getpid(), signal.SIGKILL)


def run(*, bootstrap: str, source: str, sink: str, group: str, transactional_id: str,
        batch_size: int = DEFAULT_BATCH_SIZE, crash: str | None = None, crash_transaction: int | None = None,
        log: Callable[[dict], None] = print, parent: processes.ParentWatch | None = None) -> dict:
    """Relay ``source`` to ``sink`` until the source's end offsets (seen at start) are committed."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    if crash is not None:
        check_moment(crash)
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(True))

    # the producer first: init_transactions fences an earlier instance with the same
    # transactional_id and aborts whatever transaction it left open, offsets included
    # on a class broker with logins both log in: this process reads the notebook's settings from the
    # environment and the workshop file it inherits (never from its command line, which ps shows)
    producer = kafka.client(KafkaProducer, bootstrap, transactional_id=transactional_id,
                            client_id=f"deliverylab-relay-{os.getpid()}")
    with kafka.refusals(bootstrap, "use transactional id", transactional_id):  # a class broker's ACLs: one line
        producer.init_transactions()
    consumer = kafka.client(KafkaConsumer, bootstrap, group_id=group, enable_auto_commit=False,
                            isolation_level="read_committed", auto_offset_reset="earliest",
                            allow_auto_create_topics=False, client_id=f"deliverylab-relay-{os.getpid()}")
    crash_point = CrashPoint(crash, crash_transaction, log, producer.flush)
    transactions = 0
    try:
        partitions = consumer.partitions_for_topic(source)
        if not partitions:
            kafka.refuse_if_hidden(bootstrap, source, "read topic")
            raise CourseError(f"Topic {source!r} does not exist yet. Produce orders first, e.g. lesson.produce_orders(300).")
        tps = [TopicPartition(source, p) for p in sorted(partitions)]
        consumer.assign(tps)
        end = consumer.end_offsets(tps)
        start = {str(tp.partition): consumer.position(tp) for tp in tps}  # committed offsets (or earliest)
        log({"event": "start", "pid": os.getpid(), "transactional_id": transactional_id,
             "start_offsets": start, "end_offsets": {str(tp.partition): o for tp, o in end.items()}})

        def done() -> bool:
            return bool(stopping) or bool(parent and parent.gone()) or all(consumer.position(tp) >= end[tp] for tp in tps)

        transactions = relay_batches(consumer, producer, sink, crash_point, batch_size, done)
    finally:
        consumer.close(autocommit=False)
        producer.close(timeout=5)
    ended = {"event": "end", "reason": "stopped" if stopping else "drained", "transactions": transactions}
    log(ended)
    return ended


def _json_log(path: str | None) -> Callable[[dict], None]:
    stream = open(path, "a", buffering=1, encoding="utf-8") if path else sys.stdout

    def log(event: dict) -> None:
        stream.write(json.dumps(event) + "\n")
        stream.flush()

    return log


def main(argv: list[str] | None = None) -> int:
    argv, parent = processes.parent_pid_from(list(sys.argv[1:] if argv is None else argv))
    parser = argparse.ArgumentParser(prog="python -m deliverylab.modules.m06.relay",
                                     description="Relay orders from one topic to another, one transaction per batch.")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("run", help="relay until the source topic (as seen at start) is drained")
    cmd.add_argument("--bootstrap", required=True)
    cmd.add_argument("--source", required=True)
    cmd.add_argument("--sink", required=True)
    cmd.add_argument("--group", required=True, help="consumer group whose offsets commit with each transaction")
    cmd.add_argument("--transactional-id", required=True)
    cmd.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    cmd.add_argument("--crash", choices=list(CRASH_MOMENTS), default="before_commit")
    cmd.add_argument("--crash-transaction", type=int, default=None, help="SIGKILL in transaction N (from 1)")
    cmd.add_argument("--log", default=None, help="file for the JSON events (default: stdout)")
    args = parser.parse_args(argv)
    try:
        run(bootstrap=args.bootstrap, source=args.source, sink=args.sink, group=args.group,
            transactional_id=args.transactional_id, batch_size=args.batch_size,
            crash=args.crash if args.crash_transaction else None, crash_transaction=args.crash_transaction,
            log=_json_log(args.log), parent=processes.ParentWatch(parent) if parent else None)
    except CourseError as error:
        print(f"CourseError: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
