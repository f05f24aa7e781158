"""Lab 05, after exercise 3: which half of "one transaction + a key" saves which crash, run in SQLite.

Spark's replay of a foreachBatch calls the same function again with the same batch id and the
same rows. Here each writer is called that way, twice, against an in-memory SQLite database:

    crash mid-write       the first attempt dies half-way through the batch; then the replay
    crash after COMMIT    the first attempt commits everything, the driver dies before Spark
                          writes commits/N; then the replay

An exception half-way through the rows stands in for the kill: SQLite discards a transaction that
was never committed, whether the process raised or died. The driver-killing version of both crashes
runs in lesson 05 (section 4: a crash after the data's COMMIT) and in exercise 3 (mid-write).
"""
from __future__ import annotations

import sqlite3
from typing import Callable, Iterable

Row = tuple[str, str]   # (order_id, amount)


class _Killed(Exception):
    """The stand-in for a driver killed in the middle of a batch."""


def _dies_half_way(rows: list[Row]) -> Iterable[Row]:
    for n, row in enumerate(rows):
        if n == len(rows) // 2:
            raise _Killed
        yield row


def insert_per_row(db, batch_id: int, rows: Iterable[Row]) -> None:
    """No transaction around the batch (each row commits alone), no key: a plain INSERT."""
    for row in rows:
        with db:
            db.execute("INSERT INTO orders VALUES (?, ?)", row)


def insert_one_transaction(db, batch_id: int, rows: Iterable[Row]) -> None:
    """One transaction for the whole batch, no key: a plain INSERT."""
    with db:
        db.executemany("INSERT INTO orders VALUES (?, ?)", rows)


def upsert_per_row(db, batch_id: int, rows: Iterable[Row]) -> None:
    """No transaction around the batch, but an upsert on order_id: a second copy lands on the first."""
    for row in rows:
        with db:
            db.execute("INSERT INTO keyed_orders VALUES (?, ?) "
                       "ON CONFLICT (order_id) DO UPDATE SET amount = excluded.amount", row)


def insert_with_marker(db, batch_id: int, rows: Iterable[Row]) -> None:
    """No key, but the batch id is recorded in the data's own transaction and checked first."""
    if db.execute("SELECT 1 FROM processed_batches WHERE batch_id = ?", (batch_id,)).fetchone():
        return
    with db:
        db.executemany("INSERT INTO orders VALUES (?, ?)", rows)
        db.execute("INSERT INTO processed_batches VALUES (?)", (batch_id,))


WRITERS: dict[str, Callable] = {
    "plain INSERT, a commit per row": insert_per_row,
    "plain INSERT, one transaction": insert_one_transaction,
    "upsert on order_id, a commit per row": upsert_per_row,
    "plain INSERT + batch-id marker, one transaction": insert_with_marker,
}


def _database() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.executescript("CREATE TABLE orders (order_id TEXT, amount TEXT);"
                     "CREATE TABLE keyed_orders (order_id TEXT PRIMARY KEY, amount TEXT);"
                     "CREATE TABLE processed_batches (batch_id INTEGER PRIMARY KEY);")
    return db


def duplicates_after_replay(writer: Callable, rows: list[Row], crash: str, batch_id: int = 7) -> int:
    """Rows written more than once after ``crash`` ("mid-write" or "after COMMIT") and the replay."""
    db = _database()
    try:
        try:
            writer(db, batch_id, _dies_half_way(rows) if crash == "mid-write" else iter(rows))
        except _Killed:
            pass
        writer(db, batch_id, iter(rows))   # the replay: same batch id, same rows
        written = sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("orders", "keyed_orders"))
        return written - len({order_id for order_id, _ in rows})
    finally:
        db.close()


def table(rows: list[Row]) -> list[str]:
    """One line per writer: duplicates after each kind of crash and its replay."""
    return [f"{name:<48} mid-write: {duplicates_after_replay(writer, rows, 'mid-write')}"
            f" | after COMMIT: {duplicates_after_replay(writer, rows, 'after COMMIT')}"
            for name, writer in WRITERS.items()]
