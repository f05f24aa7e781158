"""A deleted checkpoint: what a restart does, depending on where the new query starts reading."""
from __future__ import annotations

from ...config import CourseError

STARTS = ("earliest", "latest")


def delete_checkpoint_and_restart(pipe, starting_offsets: str, orders_while_down: int = 0,
                                  orders_after: int = 100) -> None:
    """Stop ``pipe``, delete its checkpoint, produce ``orders_while_down`` orders, start a new query
    reading from ``starting_offsets`` ("earliest" or "latest"), then produce ``orders_after`` and drain.

    A new query (no checkpoint) is ready once its batch 0 is committed, so with "latest" the
    orders produced while it was down are before its start: it never reads them.
    """
    if starting_offsets not in STARTS:
        raise CourseError(f"starting_offsets is one of {', '.join(STARTS)}, not {starting_offsets!r}.")
    pipe.stop()
    pipe.delete_checkpoint()
    if orders_while_down:
        pipe.produce(orders_while_down)
    pipe.options["starting_offsets"] = starting_offsets
    pipe.restart()
    if orders_after:
        pipe.produce(orders_after)
    pipe.drain()
