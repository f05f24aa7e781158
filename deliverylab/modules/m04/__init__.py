"""Module 04, at-least-once and deduplication.

    retries      duplicates at the source: a producer retry through the flaky network, and copies
                 with chosen event times
    defaults     is a kafka-python producer idempotent? Its defaults, and the settings that switch
                 idempotence off (asked of the broker: the producer ids it holds)
    duplicates   source duplicates (one id, two offsets) told apart from replay duplicates
                 (one record, two rows): classify() is pure
    watermarks   event-time arithmetic (watermark = largest event time seen - delay) and the dedup
                 state a pipeline reported per batch
    pitfall      the five watermark cases with chosen event times, and the table of their outcomes
    charts       rows in the dedup state per batch, one line per pipeline
    lifetime     one dedup key's lifetime with chosen event times (two delays), the no-data batches
                 between, and the state store a checkpoint pins (RocksDB kept after a restart)
    trial        runs a learner's dedupe(orders) in the notebook's own Spark on orders with retries
    hidden_runs  the runs the lab's checks judge besides the one shown: another crash, a replayed sink,
                 a trial topic with late orders, a trial with another delay
    lab          the lab's checks, one function per exercise

    from deliverylab.modules import m04
    sent = m04.produce_with_retries(pipe, 300, lose_every=50)
    print(m04.duplicates.of_pipeline(pipe).summary())
"""
from . import charts, defaults, duplicates, lifetime, pitfall, retries, watermarks
from .duplicates import DuplicateKinds, classify, topic_offsets
from .retries import RetryReport, copy_of, produce_with_retries, send_copies, send_through_flaky_network
from .watermarks import state_history, wait_for_watermark, watermark_after

__all__ = ["DuplicateKinds", "RetryReport", "charts", "classify", "copy_of", "defaults", "duplicates", "lifetime",
           "pitfall", "produce_with_retries", "retries", "send_copies", "send_through_flaky_network", "state_history",
           "topic_offsets", "wait_for_watermark", "watermark_after", "watermarks"]
