"""The delivery ledger: which produced orders reached a sink, how often, with which values, and what it did to revenue.

Every lab ends the same way: we know exactly which orders the producer sent (the
*produced* list) and we read back whatever the sink holds (the *delivered* rows). The
ledger lines the two up, id by id, and amount by amount:

    >>> ledger = reconcile(produced, delivered, label="at-least-once")
    >>> print(ledger.verdict_line())
    verdict: at-least-once (produced=2000 lost=0 duplicated=37)

Counting ids is not enough: an upsert that *adds* the amount on a conflict keeps every id once and doubles the
replayed batch's revenue. So the ledger also compares each delivered row's amount with the produced one
(``wrong_amount``), and where an order has several events (a status change, a later correction, an event that
arrives after a newer one) :func:`reconcile_states` compares what the sink holds per order with the order's final
state at the source (:func:`final_states`): its latest event's amount and status.

Rows on both sides are ``(order_id, amount)`` pairs or dicts with ``order_id`` and
``amount`` keys (Spark ``Row`` objects work too; ``rows.py``). Amounts are exact
Decimals in cents. The ``read_*`` helpers that fetch delivered rows from the course's
real sinks live in ``sinkrows.py`` and are re-exported here.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from .config import CourseError
from .rows import CENT, id_sort_key, normalise_rows, normalise_states, sorted_ids, to_amount  # noqa: F401
from .sinkrows import (ISOLATION_LEVELS, parse_order_json, read_delta, read_delta_states,  # noqa: F401
                       read_kafka_topic, read_parquet, read_sqlite)

EXACTLY_ONCE = "exactly-once"
AT_MOST_ONCE = "at-most-once"
AT_LEAST_ONCE = "at-least-once"
LOST_AND_DUPLICATED = "lost and duplicated"

#: Every verdict the ledger can reach, in the order the course introduces them.
VERDICTS = (AT_MOST_ONCE, AT_LEAST_ONCE, EXACTLY_ONCE, LOST_AND_DUPLICATED)

#: Labels of the copy buckets used by :meth:`Ledger.copy_buckets` and the charts.
COPY_BUCKETS = ("0", "1", "2", "3+")


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _money(value: Decimal) -> str:
    return f"{value:.2f}"


def _signed_money(value: Decimal) -> str:
    return f"{value:+.2f}" if value else "0.00"


# --------------------------------------------------------------------------- the ledger


@dataclass(frozen=True, repr=False)
class Ledger:
    """The outcome of one pipeline run, id by id. Build it with :func:`reconcile`.

    Counts of ids (not rows) unless the name says otherwise:

    * ``produced``        ids the producer sent
    * ``delivered_once``  produced ids found exactly once in the sink
    * ``duplicated``      produced ids found more than once
    * ``extra_copies``    rows beyond the first, summed over the duplicated ids
    * ``lost``            produced ids never found
    * ``unexpected``      ids in the sink that were never produced
    * ``delivered_rows``  every row the sink holds, duplicates and unexpected ones included
    * ``wrong_amount``    produced ids found in the sink with a row whose amount is not the one produced
                          (an upsert that adds on a replay keeps the ids unique and doubles the value)

    ``copies`` maps every id found in the sink to its number of rows (a Counter, so a
    lost id reads as 0). ``lost_ids``, ``duplicated_ids``, ``unexpected_ids`` and
    ``wrong_amount_ids`` are sorted tuples; ``wrong_amounts`` maps each of the latter to
    ``(produced amount, the amounts found)``. The verdict names ids (lost, duplicated); the
    verdict line adds ``wrong_amount=N`` only when some amount is wrong.
    """

    label: str | None
    copies: Counter
    produced: int
    delivered_rows: int
    delivered_once: int
    duplicated: int
    extra_copies: int
    lost: int
    unexpected: int
    revenue_expected: Decimal
    revenue_observed: Decimal
    lost_ids: tuple
    duplicated_ids: tuple
    unexpected_ids: tuple
    copies_of_produced: tuple  # copies per produced id, same order as the produced input
    verdict: str
    wrong_amount_ids: tuple = ()
    wrong_amounts: Mapping = field(default_factory=dict)

    @property
    def wrong_amount(self) -> int:
        return len(self.wrong_amount_ids)

    @property
    def values_right(self) -> bool:
        """Every produced id found in the sink holds the amount produced (copies may still be missing or extra)."""
        return not self.wrong_amount_ids

    def amount_problem(self) -> str | None:
        """The first wrong amount in words, or None: ``order o-000012 holds 20.00 where 10.00 was produced``."""
        if not self.wrong_amount_ids:
            return None
        first = self.wrong_amount_ids[0]
        produced, found = self.wrongs_of(first)
        more = f" (and {_plural(self.wrong_amount - 1, 'other order', 'other orders')})" if self.wrong_amount > 1 else ""
        return f"order {first} holds {found} where {produced} was produced{more}"

    def wrongs_of(self, order_id: Any) -> tuple[str, str]:
        produced, found = self.wrong_amounts[order_id]
        return _money(produced), " and ".join(_money(a) for a in found)

    @property
    def revenue_difference(self) -> Decimal:
        """Observed minus expected revenue: positive when duplicates inflate it, negative on loss."""
        return self.revenue_observed - self.revenue_expected

    def copy_buckets(self) -> dict[str, int]:
        """How many produced ids have 0, 1, 2 and 3 or more copies in the sink."""
        buckets = dict.fromkeys(COPY_BUCKETS, 0)
        for count in self.copies_of_produced:
            buckets[str(count) if count < 3 else "3+"] += 1
        return buckets

    def verdict_line(self) -> str:
        """One stable line, e.g. ``verdict: exactly-once (produced=2000 lost=0 duplicated=0)``.

        In shared-broker mode the verdict also goes to the class board (workshop/events.py).
        """
        from .workshop import events

        events.verdict_seen(self.verdict, self.produced, self.lost, self.duplicated)
        wrong = f" wrong_amount={self.wrong_amount}" if self.wrong_amount else ""
        return (
            f"verdict: {self.verdict} "
            f"(produced={self.produced} lost={self.lost} duplicated={self.duplicated}{wrong})"
        )

    def summary(self) -> str:
        """A few aligned lines: counts, revenue expected against observed, and the verdict."""
        figures = [
            ("produced", str(self.produced), ""),
            ("delivered once", str(self.delivered_once), ""),
            ("duplicated", str(self.duplicated), f"({_plural(self.extra_copies, 'extra copy', 'extra copies')})"),
            ("lost", str(self.lost), ""),
        ]
        if self.unexpected:
            figures.append(("unexpected", str(self.unexpected), "(ids never produced)"))
        if self.wrong_amount:
            figures.append(("wrong amount", str(self.wrong_amount), "(ids whose rows hold another amount)"))
        figures += [
            ("revenue expected", _money(self.revenue_expected), ""),
            ("revenue observed", _money(self.revenue_observed), f"({_signed_money(self.revenue_difference)})"),
        ]
        name_width = max(len(name) for name, _, _ in figures)
        value_width = max(len(value) for _, value, _ in figures)
        lines = [f"pipeline: {self.label}"] if self.label else []
        for name, value, note in figures:
            lines.append(f"{name:<{name_width}}  {value:>{value_width}}  {note}".rstrip())
        lines.append(self.verdict_line())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values; money as strings with two decimals so nothing is rounded."""
        return {
            "label": self.label,
            "verdict": self.verdict,
            "produced": self.produced,
            "delivered_rows": self.delivered_rows,
            "delivered_once": self.delivered_once,
            "duplicated": self.duplicated,
            "extra_copies": self.extra_copies,
            "lost": self.lost,
            "unexpected": self.unexpected,
            "revenue_expected": _money(self.revenue_expected),
            "revenue_observed": _money(self.revenue_observed),
            "revenue_difference": _signed_money(self.revenue_difference),
            "copy_buckets": self.copy_buckets(),
            "lost_ids": list(self.lost_ids),
            "duplicated_ids": list(self.duplicated_ids),
            "unexpected_ids": list(self.unexpected_ids),
            "wrong_amount": self.wrong_amount,
            "wrong_amount_ids": list(self.wrong_amount_ids),
        }

    def __repr__(self) -> str:
        name = f" {self.label!r}" if self.label else ""
        return f"<Ledger{name} {self.verdict_line()}>"

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython: show the summary, not the Counter
        printer.text(self.summary())


def verdict_for(lost: int, duplicated: int) -> str:
    """Name the delivery guarantee a run actually gave."""
    if lost and duplicated:
        return LOST_AND_DUPLICATED
    if lost:
        return AT_MOST_ONCE
    if duplicated:
        return AT_LEAST_ONCE
    return EXACTLY_ONCE


def _index_produced(pairs: list[tuple[Any, Decimal]]) -> dict[Any, Decimal]:
    """Produced ids must be unique: they are the truth the sink is measured against."""
    amounts: dict[Any, Decimal] = {}
    for order_id, amount in pairs:
        if order_id in amounts:
            raise CourseError(
                f"order id {order_id!r} appears twice in the produced list. Produced ids must be "
                "unique; pass the generator's list of orders, not rows read back from a topic."
            )
        amounts[order_id] = amount
    return amounts


def _check_id_types(produced: Iterable[Any], delivered: Iterable[Any]) -> None:
    """Catch the classic mismatch: ids are ints on one side and strings on the other."""
    produced_types = {type(i).__name__ for i in produced}
    delivered_types = {type(i).__name__ for i in delivered}
    if produced_types and delivered_types and produced_types.isdisjoint(delivered_types):
        raise CourseError(
            f"produced order ids are {'/'.join(sorted(produced_types))} but delivered ones are "
            f"{'/'.join(sorted(delivered_types))}, so nothing can match. Convert one side, "
            "e.g. cast the sink's order_id column to the producer's type."
        )


def reconcile(produced: Iterable[Any], delivered: Iterable[Any], label: str | None = None) -> Ledger:
    """Compare the orders a producer sent with the rows a sink holds and name the guarantee.

    ``produced``: the producer's orders, each id once. ``delivered``: every row read
    from the sink, duplicates included. Observed revenue sums *all* delivered rows
    (what a dashboard on that sink would report), unexpected ids included.
    """
    produced_amounts = _index_produced(normalise_rows(produced, "produced"))
    delivered_pairs = normalise_rows(delivered, "delivered")
    copies = Counter(order_id for order_id, _ in delivered_pairs)
    _check_id_types(produced_amounts, copies)
    found_amounts: dict[Any, list[Decimal]] = {}
    for order_id, amount in delivered_pairs:
        if order_id in produced_amounts and amount != produced_amounts[order_id]:
            found_amounts.setdefault(order_id, []).append(amount)
    wrong_amount_ids = sorted_ids(found_amounts)

    copies_of_produced = tuple(copies[order_id] for order_id in produced_amounts)
    lost_ids = sorted_ids(i for i in produced_amounts if copies[i] == 0)
    duplicated_ids = sorted_ids(i for i in produced_amounts if copies[i] > 1)
    unexpected_ids = sorted_ids(i for i in copies if i not in produced_amounts)

    return Ledger(
        label=label,
        copies=copies,
        produced=len(produced_amounts),
        delivered_rows=len(delivered_pairs),
        delivered_once=sum(1 for n in copies_of_produced if n == 1),
        duplicated=len(duplicated_ids),
        extra_copies=sum(copies[i] - 1 for i in duplicated_ids),
        lost=len(lost_ids),
        unexpected=len(unexpected_ids),
        revenue_expected=sum(produced_amounts.values(), Decimal("0.00")),
        revenue_observed=sum((amount for _, amount in delivered_pairs), Decimal("0.00")),
        lost_ids=lost_ids,
        duplicated_ids=duplicated_ids,
        unexpected_ids=unexpected_ids,
        copies_of_produced=copies_of_produced,
        verdict=verdict_for(len(lost_ids), len(duplicated_ids)),
        wrong_amount_ids=wrong_amount_ids,
        wrong_amounts={i: (produced_amounts[i], tuple(found_amounts[i])) for i in wrong_amount_ids},
    )


# --------------------------------------------------------------------------- final states (several events per order)


def _event_time(value: Any, order_id: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
    raise CourseError(f"order {order_id!r} has event_time {value!r}; give a datetime or an ISO time such as "
                      "'2026-01-01T00:00:05Z'.")


def final_states(events: Iterable[Any]) -> dict[Any, tuple[Decimal, Any]]:
    """Each order's final state at the source, ``{order_id: (amount, status)}``: its latest event by event time,
    wherever it came in the stream (an event that arrives after a newer one does not win). Two events of one order
    at the same time are broken by status, the greater one winning, as the course's MERGEs break them
    (``event_time DESC, status DESC``). ``events`` are dicts or Rows with order_id, amount, status and event_time."""
    latest: dict[Any, tuple[datetime, Any, Decimal]] = {}
    for event in events:
        event = event.asDict() if hasattr(event, "asDict") else event
        if not isinstance(event, Mapping) or not {"order_id", "amount", "status", "event_time"} <= set(event):
            raise CourseError(f"an event looks like {event!r}; give dicts with order_id, amount, status and "
                              "event_time (the generator's orders are).")
        order_id = event["order_id"]
        key = (_event_time(event["event_time"], order_id), event["status"], to_amount(event["amount"], order_id))
        if order_id not in latest or key[:2] > latest[order_id][:2]:
            latest[order_id] = key
    return {order_id: (amount, status) for order_id, (_, status, amount) in latest.items()}


@dataclass(frozen=True, repr=False)
class StateLedger:
    """What a keyed sink (one row per order, kept by upserts or MERGEs) holds against each order's final state.

    Ids: ``missing`` (in the source, not in the sink), ``duplicated`` (more than one row), ``wrong_amount`` and
    ``wrong_status`` (a row that is not the order's final state: an older event won, or a replay added instead
    of setting), ``unexpected`` (never in the source). Revenue: the final amounts against every row's amount.
    ``found`` maps each wrong id to what its rows hold, ``[(amount, status), ...]``.
    """

    label: str | None
    orders: int
    rows: int
    missing_ids: tuple
    duplicated_ids: tuple
    wrong_amount_ids: tuple
    wrong_status_ids: tuple
    unexpected_ids: tuple
    revenue_expected: Decimal
    revenue_observed: Decimal
    expected: Mapping
    found: Mapping

    @property
    def right(self) -> bool:
        return not (self.missing_ids or self.duplicated_ids or self.wrong_amount_ids or self.wrong_status_ids
                    or self.unexpected_ids)

    def line(self) -> str:
        """One stable line, e.g. ``final state: right (orders=40 missing=0 duplicated=0 wrong_amount=0 wrong_status=0)``."""
        word = "right" if self.right else "wrong"
        extra = f" unexpected={len(self.unexpected_ids)}" if self.unexpected_ids else ""
        return (f"final state: {word} (orders={self.orders} missing={len(self.missing_ids)} "
                f"duplicated={len(self.duplicated_ids)} wrong_amount={len(self.wrong_amount_ids)} "
                f"wrong_status={len(self.wrong_status_ids)}{extra})")

    def problem(self) -> str | None:
        """The first thing wrong, in words with one example order, or None when the sink is right."""
        def held(order_id) -> str:
            return " and ".join(f"{_money(a)} {s}" for a, s in self.found[order_id])

        def final(order_id) -> str:
            amount, status = self.expected[order_id]
            return f"{_money(amount)} {status}"

        checks = [
            (self.missing_ids, lambda i: f"order {i} is not in the sink"),
            (self.duplicated_ids, lambda i: f"order {i} has {len(self.found[i])} rows ({held(i)}): one row per order expected"),
            (self.wrong_amount_ids, lambda i: f"order {i} holds amount {held(i)} where its final event says {final(i)}"),
            (self.wrong_status_ids, lambda i: f"order {i} holds status {held(i)} where its final event says {final(i)}"),
            (self.unexpected_ids, lambda i: f"order {i} is in the sink but was never produced"),
        ]
        for ids, words in checks:
            if ids:
                more = f" (and {_plural(len(ids) - 1, 'other order', 'other orders')} like it)" if len(ids) > 1 else ""
                return words(ids[0]) + more
        return None

    def __repr__(self) -> str:
        return f"<StateLedger {self.line()}>"


def reconcile_states(events: Iterable[Any], rows: Iterable[Any], label: str | None = None) -> StateLedger:
    """Compare a keyed sink's rows ``(order_id, amount, status)`` with each order's final state at the source
    (:func:`final_states` of every event produced, several per order allowed)."""
    expected = final_states(events)
    held: dict[Any, list[tuple[Decimal, Any]]] = {}
    for order_id, amount, status in normalise_states(rows):
        held.setdefault(order_id, []).append((amount, status))
    _check_id_types(expected, held)
    present = [i for i in expected if i in held]
    wrong_amount = sorted_ids(i for i in present if any(a != expected[i][0] for a, _ in held[i]))
    wrong_status = sorted_ids(i for i in present if any(s != expected[i][1] for _, s in held[i]))
    return StateLedger(
        label=label,
        orders=len(expected),
        rows=sum(len(v) for v in held.values()),
        missing_ids=sorted_ids(i for i in expected if i not in held),
        duplicated_ids=sorted_ids(i for i in present if len(held[i]) > 1),
        wrong_amount_ids=wrong_amount,
        wrong_status_ids=wrong_status,
        unexpected_ids=sorted_ids(i for i in held if i not in expected),
        revenue_expected=sum((a for a, _ in expected.values()), Decimal("0.00")),
        revenue_observed=sum((a for v in held.values() for a, _ in v), Decimal("0.00")),
        expected=expected,
        found=held,
    )
