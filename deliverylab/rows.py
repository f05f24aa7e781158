"""An order row from any sink, as the ledger compares it: the id checked, the amount an exact Decimal in cents.

Rows come as ``(order_id, amount)`` pairs, dicts with ``order_id`` and ``amount`` keys, or Spark ``Row`` objects;
rows with a status as ``(order_id, amount, status)`` or with a ``status`` key (:func:`normalise_states`). Amounts
are kept as :class:`decimal.Decimal` rounded to cents, so a difference of 0.01 is a real difference, never
floating-point noise. Pure Python: the ledger (``ledger.py``) and the sink readers (``sinkrows.py``) both use it.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from .config import CourseError

CENT = Decimal("0.01")


def to_amount(value: Any, order_id: Any = None) -> Decimal:
    """Turn an amount from any sink (Decimal, int, float, str) into a Decimal rounded to cents.

    Floats go through their shortest text form, so ``19.99`` becomes ``Decimal('19.99')``
    and not the binary approximation ``19.989999...``.
    """
    if isinstance(value, bool) or value is None:
        raise CourseError(f"order {order_id!r} has amount {value!r}; every row needs a numeric amount.")
    try:
        if isinstance(value, Decimal):
            amount = value
        elif isinstance(value, int):
            amount = Decimal(value)
        elif isinstance(value, float):
            amount = Decimal(repr(value))
        elif isinstance(value, (str, bytes)):
            text = value.decode() if isinstance(value, bytes) else value
            amount = Decimal(text.strip())
        else:
            raise InvalidOperation
        if not amount.is_finite():
            raise InvalidOperation
    except (InvalidOperation, ValueError, UnicodeDecodeError):
        raise CourseError(
            f"order {order_id!r} has amount {value!r}, which is not a number. "
            "Amounts must be numbers like 19.99 (or strings such as '19.99')."
        ) from None
    return amount.quantize(CENT, rounding=ROUND_HALF_EVEN)


def split_row(row: Any, side: str) -> tuple[Any, Any]:
    """One row as (order_id, raw amount): accepts pairs, dicts and Spark Rows."""
    if hasattr(row, "asDict"):  # pyspark.sql.Row
        row = row.asDict()
    if isinstance(row, Mapping):
        if "order_id" not in row or "amount" not in row:
            raise CourseError(
                f"a {side} row has keys {sorted(row)}; it needs 'order_id' and 'amount'."
            )
        return row["order_id"], row["amount"]
    if isinstance(row, (tuple, list)) and len(row) >= 2:
        return row[0], row[1]
    raise CourseError(
        f"a {side} row looks like {row!r}; give (order_id, amount) pairs or dicts "
        "with 'order_id' and 'amount'."
    )


def check_id(order_id: Any, side: str) -> Any:
    if order_id is None or isinstance(order_id, bool):
        raise CourseError(f"a {side} row has order_id {order_id!r}; every row needs a real order id.")
    return order_id


def normalise_rows(rows: Iterable[Any], side: str = "delivered") -> list[tuple[Any, Decimal]]:
    """Rows of any accepted shape as a list of ``(order_id, Decimal amount)``."""
    pairs = []
    for row in rows:
        order_id, raw = split_row(row, side)
        order_id = check_id(order_id, side)
        pairs.append((order_id, to_amount(raw, order_id)))
    return pairs


def id_sort_key(order_id: Any) -> tuple:
    """Sort key that keeps numbers in numeric order and never compares a str with an int."""
    if isinstance(order_id, (int, float, Decimal)):
        return (0, order_id, "")
    if isinstance(order_id, str):
        return (1, 0, order_id)
    return (2, 0, repr(order_id))


def sorted_ids(ids: Iterable[Any]) -> tuple:
    return tuple(sorted(ids, key=id_sort_key))


def _as_mapping(row: Any) -> Any:
    return row.asDict() if hasattr(row, "asDict") else row


def normalise_states(rows: Iterable[Any], side: str = "delivered") -> list[tuple[Any, Decimal, Any]]:
    """Rows with a status as a list of ``(order_id, Decimal amount, status)``: triples, or dicts / Spark Rows
    with ``order_id``, ``amount`` and ``status``."""
    triples = []
    for row in rows:
        row = _as_mapping(row)
        if isinstance(row, Mapping):
            if "status" not in row:
                raise CourseError(f"a {side} row has keys {sorted(row)}; it needs 'order_id', 'amount' and 'status'.")
            status = row["status"]
        elif isinstance(row, (tuple, list)) and len(row) >= 3:
            status = row[2]
        else:
            raise CourseError(f"a {side} row looks like {row!r}; give (order_id, amount, status) triples or dicts "
                              "with 'order_id', 'amount' and 'status'.")
        order_id, raw = split_row(row, side)
        order_id = check_id(order_id, side)
        triples.append((order_id, to_amount(raw, order_id), status))
    return triples
