"""The running example: a seeded stream of order events, and a producer that writes them to Kafka.

Every ``order_id`` is unique at the source, so an id seen twice in a sink is a duplicate
and an id missing from it is a loss. The same seed always gives the same orders.
"""
from __future__ import annotations

import json
import random
import sys
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Iterable, Iterator

STATUSES = ("placed", "paid", "shipped")
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)

#: The schema of an order event, as Spark DDL (used with from_json).
ORDER_SCHEMA = "order_id STRING, customer_id STRING, amount DECIMAL(10,2), status STRING, event_time TIMESTAMP"


def order_id(n: int) -> str:
    return f"o-{n:06d}"


def generate_orders(n: int, seed: int = 7, start: int = 0) -> list[dict]:
    """Orders number ``start`` .. ``start + n - 1``. Deterministic for a given (seed, number).

    Event times advance one second per order with up to 4 s of jitter, so events arrive a
    little out of order, as they do in real streams.
    """
    orders = []
    for k in range(start, start + n):
        rng = random.Random(seed * 1_000_003 + k)
        cents = rng.randint(500, 25_000)
        orders.append({
            "order_id": order_id(k),
            "customer_id": f"c-{rng.randint(1, 300):04d}",
            "amount": str((Decimal(cents) / 100).quantize(Decimal("0.01"))),
            "status": rng.choice(STATUSES),
            "event_time": (EPOCH + timedelta(seconds=k + rng.randint(0, 4))).strftime("%Y-%m-%dT%H:%M:%SZ"),
        })
    return orders


def _parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def follow_up_events(orders: list[dict], rng: random.Random, count: int, older_share: float = 0.3) -> list[dict]:
    """Later events of ``count`` of ``orders`` (picked by ``rng``), for hidden runs where an order has several
    events: mostly a status change 1-30 s after the order's event, some with a corrected amount; about
    ``older_share`` of them are *stale*: a time 1-30 s before the order's event, so they must not win however
    late they arrive. Times never tie with the order's own event, so each order's final state is unambiguous
    (``ledger.final_states``). Ids and customers are the orders' own; the list is in ``rng``'s order."""
    events = []
    for order in rng.sample(orders, min(count, len(orders))):
        first = _parse_time(order["event_time"])
        stale = rng.random() < older_share
        shift = timedelta(seconds=rng.randint(1, 30)) * (-1 if stale else 1)
        later = STATUSES[min(STATUSES.index(order["status"]) + 1, len(STATUSES) - 1)]
        amount = Decimal(order["amount"])
        if stale or rng.random() < 0.3:  # a stale copy, or a correction: another amount
            amount = (amount + Decimal(rng.randint(-300, 300)) / 100).quantize(Decimal("0.01"))
            amount = max(amount, Decimal("1.00"))
        events.append({**order, "amount": str(amount), "status": "placed" if stale else later,
                       "event_time": (first + shift).strftime("%Y-%m-%dT%H:%M:%SZ")})
    return events


def revenue(orders: Iterable[dict]) -> Decimal:
    return sum((Decimal(o["amount"]) for o in orders), Decimal("0.00"))


def encode(order: dict) -> bytes:
    return json.dumps(order, sort_keys=True, separators=(",", ":")).encode()


def _progress(done: int, total: int, width: int = 30) -> str:
    filled = int(width * done / total) if total else width
    return f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} orders"


def produce(bootstrap: str, topic: str, orders: list[dict], progress: bool = True) -> int:
    """Write orders to a topic, keyed by order id, waiting until the broker has them all.

    A query polling the topic meanwhile can still see one partition's share before the
    other's, so lessons print what holds whatever the split (see docs/authoring.md).
    """
    from kafka import KafkaProducer

    from .stack.kafka import client, ensure_topic

    ensure_topic(bootstrap, topic)
    # Records wait up to 50 ms to be sent together (up to 1 MB per partition): a few hundred
    # orders leave in one request, so a running query sees a chunk whole, not half of it.
    producer = client(KafkaProducer, bootstrap, acks="all", linger_ms=50, batch_size=1 << 20)
    try:
        step = max(1, len(orders) // 20)
        for i, order in enumerate(orders, 1):
            producer.send(topic, key=order["order_id"].encode(), value=encode(order))
            if progress and (i % step == 0 or i == len(orders)):
                sys.stdout.write(_progress(i, len(orders)))
                sys.stdout.flush()
        producer.flush()
    finally:
        producer.close()
    if progress:
        sys.stdout.write("\n")
    return len(orders)


def produce_orders(bootstrap: str, topic: str, n: int, seed: int = 7, start: int = 0, progress: bool = True) -> list[dict]:
    """Generate ``n`` seeded orders and write them to ``topic``. Returns the orders written."""
    orders = generate_orders(n, seed=seed, start=start)
    produce(bootstrap, topic, orders, progress=progress)
    return orders


def iter_jsonl(path) -> Iterator[str]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield line.rstrip("\n")
