"""A pipeline started again on a new checkpoint: what a clean-up or a release does, and what it costs.

A new checkpoint is a new query: a new query id, and batch ids that begin again at 0. Where it
starts reading is its ``startingOffsets`` (``earliest`` for the course's pipelines: the whole topic
again), unless it is told where the old checkpoint had finished.
"""
from __future__ import annotations

import json

from .. import checkpoint


def resume_offsets_json(pipe) -> str:
    """Where the pipeline's checkpoint has finished, as Spark's ``startingOffsets`` JSON."""
    done = checkpoint.done_offsets(pipe.checkpoint, pipe.topic)
    return json.dumps({pipe.topic: {str(p): o for p, o in sorted(done.items())}})


def new_checkpoint(pipe, orders: int = 100, resume_where_it_stopped: bool = False,
                   new_app_id: str | None = None) -> None:
    """Stop the pipeline, delete its checkpoint, start it again, then produce and process ``orders`` orders.

    With ``resume_where_it_stopped`` the new query starts at the offsets the old checkpoint had finished;
    with ``new_app_id`` its writer gets that ``out.app_id`` (``<old>-<new_app_id>``), as a release that knows
    batch ids begin again would do.
    """
    pipe.stop()
    resume = resume_offsets_json(pipe) if resume_where_it_stopped else None
    pipe.delete_checkpoint()
    if resume:
        pipe.options["starting_offsets"] = resume
    if new_app_id:
        pipe.app_id = f"{pipe.app_id}-{new_app_id}"
    pipe.restart()
    pipe.produce(orders)
    pipe.drain()
