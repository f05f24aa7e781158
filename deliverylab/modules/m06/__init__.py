"""Module 06, Kafka end to end.

    producers   a produce reply lost on the flaky network: what the producer's settings
                and the application's re-send make of it
    idempotence Spark's Kafka sink: the producer it builds (idempotent or not, asked of the
                broker) and the same rows written twice through one cached producer
    relay       the consume-transform-produce relay the lesson shows (one transaction per
                batch, offsets sent to the transaction) and its process, armed to SIGKILL
                itself mid-transaction
    harness     the notebook side of the relay: run, crash, restart, reconcile at both
                isolation levels
    txversions  the transaction protocol the broker finalized (2, KIP-890) and the one kafka-python speaks (1)
    realtime    Spark's real-time mode: the sinks it refuses, and offsets/N written after the sink's rows
    rtwriters   real-time mode into a ForeachWriter, two ways to key the writes, under a crash and replay
    epochsplit  the same two writers in micro-batch mode: a replayed batch split into other partitions
    lab         the lab's checks (each tested against planted wrong answers)
    probes      the lab's hidden topics: aborted transactions (one never sent again), a Kafka sink's replays

    from deliverylab.modules import m06
    report = m06.crash_and_restart(lesson, crash_transaction=3)
"""
from __future__ import annotations

import inspect

from . import epochsplit, idempotence, realtime, rtwriters, txversions
from .harness import (RelayReport, RelayRun, crash_and_restart, crash_relay, fill_source, names, output, reconcile,
                      reset, run_relay, start_relay)
from .producers import LostReply, send_with_lost_reply
from .relay import CRASH_MOMENTS, enrich, relay_batches

__all__ = ["CRASH_MOMENTS", "LostReply", "RelayReport", "RelayRun", "crash_and_restart", "crash_relay", "enrich", "epochsplit",
           "fill_source", "idempotence", "names", "realtime", "rtwriters", "output", "reconcile", "relay_batches",
           "reset", "run_relay", "send_with_lost_reply", "source", "start_relay"]


def source(name: str) -> str:
    """The code of one of the module's functions, to read in the notebook (``print(m06.source("relay_batches"))``)."""
    from ...config import CourseError

    shown = {"relay_batches": relay_batches, "enrich": enrich, "send_with_lost_reply": send_with_lost_reply}
    if name not in shown:
        raise CourseError(f"No code called {name!r} to show. Choose one of: {', '.join(shown)}.")
    return inspect.getsource(shown[name]).rstrip()
