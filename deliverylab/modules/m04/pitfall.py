"""The watermark pitfall, as five small cases with chosen event times.

After a pipeline has seen the seeded orders, its watermark stands at (largest event time
seen) minus the delay. Each case then sends one order, or a copy of one, so that the
dedup operators of module 04 must decide about it:

    key        what arrives                                          original's event time
    retry      a fresh order and, right after, an exact copy         just after the latest
    restamped  a fresh order and a copy re-stamped 30 s later        just after the latest
    evicted    a copy of an early order, re-stamped with a fresh time  long behind the watermark
    old_copy   an exact copy of an early order                        long behind the watermark
    late_new   a new order whose event time is long past              (it has no original)

The outcome of a case is read from the sink: how many rows its order id has.

    cases = plan(pipe.produced, delay="1 minute")
    send(pipe, cases); pipe.drain()
    outcome(case, pipe.ledger().copies[case.order_id])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from ...config import CourseError
from ...orders import order_id as seeded_id
from .retries import copy_of, send_copies
from .watermarks import iso, parse_delay, parse_time

#: New orders of the cases are numbered from here, far from the seeded ones.
FIRST_NEW = 900_000


@dataclass(frozen=True)
class Case:
    key: str
    text: str
    order_id: str
    new: list = field(default_factory=list)      # new orders (they join pipe.produced)
    copies: list = field(default_factory=list)   # copies of orders already produced (they do not)

    @property
    def records(self) -> int:
        """Records of this order id the case puts in the topic (the original counts if it is new)."""
        return len(self.new) + len(self.copies)


def _order(n: int, event_time: str) -> dict:
    return {"order_id": seeded_id(FIRST_NEW + n), "customer_id": "c-0001", "amount": "50.00", "status": "paid",
            "event_time": event_time}


def plan(produced: list[dict], delay: str = "1 minute") -> list[Case]:
    """The five cases for a pipeline that has seen ``produced`` (at least 40 seeded orders)."""
    if len(produced) < 40:
        raise CourseError(f"The cases copy early orders (numbers 10 and 20): produce at least 40 orders first, "
                          f"not {len(produced)}.")
    latest = max(parse_time(o["event_time"]) for o in produced)
    fresh = iso(latest + timedelta(seconds=5))
    half = parse_delay(delay) / 2
    later = iso(latest + timedelta(seconds=5) + half)
    early, earlier, earliest = produced[10], produced[20], produced[30]
    first, second = _order(1, fresh), _order(2, fresh)
    late = _order(3, earliest["event_time"])
    return [
        Case("retry", "a retry: an exact copy right after the original", first["order_id"],
             new=[first], copies=[copy_of(first)]),
        Case("restamped", f"a copy re-stamped {int(half.total_seconds())} s later", second["order_id"],
             new=[second], copies=[copy_of(second, later)]),
        Case("evicted", "a copy of an early order, re-stamped with a fresh time", early["order_id"],
             copies=[copy_of(early, iso(latest))]),
        Case("old_copy", "an exact copy of an early order", earlier["order_id"], copies=[copy_of(earlier)]),
        Case("late_new", "a new order with an early event time", late["order_id"], new=[late]),
    ]


def send(pipe, cases: list[Case]) -> None:
    """New orders first (they join ``pipe.produced``), then the copies, each after its original."""
    pipe.send([o for case in cases for o in case.new])
    send_copies(pipe, [c for case in cases for c in case.copies])


def outcome(case: Case, copies: int) -> str:
    """What happened to a case, from the rows its order id has in the sink."""
    if case.key == "late_new":
        return "kept" if copies == 1 else "lost" if copies == 0 else f"{copies} rows"
    if copies == 2:
        return "duplicated"
    return {1: "copy dropped", 0: "lost"}.get(copies, f"{copies} rows")


def table(cases: list[Case], copies_by_pipeline: dict[str, dict]) -> str:
    """One line per case, one column per pipeline: what each pipeline's sink shows."""
    names = list(copies_by_pipeline)
    width = max(len(c.text) for c in cases)
    cols = [max(len(n), 12) for n in names]
    lines = [f"{'case':<{width}}  " + "  ".join(f"{n:<{w}}" for n, w in zip(names, cols))]
    for case in cases:
        cells = [outcome(case, copies_by_pipeline[n].get(case.order_id, 0)) for n in names]
        lines.append(f"{case.text:<{width}}  " + "  ".join(f"{c:<{w}}" for c, w in zip(cells, cols)))
    return "\n".join(line.rstrip() for line in lines)
