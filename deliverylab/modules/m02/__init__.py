"""Module 02, anatomy of a micro-batch.

    groups   where a query's progress is: consumer groups on the broker (none for Spark) against
             the checkpoint; a plain consumer that commits, for comparison; lag both ways
    feed     LineFeed: a TCP server on 127.0.0.1 that sends each line once (the far end of the
             socket source, a source Spark cannot replay)
    ranges   a batch's offset range as Spark reported it (progress) and as a learner wrote it
    limits   how maxOffsetsPerTrigger shares a batch out between partitions (share_out), and topics
             whose partitions are filled, or added, by hand
    tracking what each batch of a query read, from its progress reports (batches_read, describe): the
             asynchronous progress tracking demo
    asynctracking  asynchronous progress tracking: the writers Spark refuses, and a checkpoint it leaves that a
             restart with the option off refuses (lesson 02)
    crashed  crashed_copy: a copy of a pipeline as a crash in batch N would have left it (offsets/N, no
             commits/N, no progress record), for the lab's hidden runs
    lab      the lab's checks, one function per exercise, and their hidden runs

    from deliverylab.modules import m02
    m02.groups_reading(lesson.bootstrap, pipe.topic)      # {} while only Spark reads the topic
"""
from . import asynctracking
from .feed import LineFeed, wait_until
from .groups import (SPARK_GROUP_PREFIX, checkpoint_lag, group_lag, groups_reading, read_and_commit,
                     spark_named_groups)
from .limits import add_partition, fill_partitions, rows_per_batch, share_out, write_to_partition
from .ranges import reported_range, spark_range
from .tracking import batches_read, describe

__all__ = ["LineFeed", "asynctracking", "SPARK_GROUP_PREFIX", "add_partition", "batches_read", "checkpoint_lag", "describe",
           "fill_partitions", "group_lag", "groups_reading", "read_and_commit", "reported_range", "rows_per_batch",
           "share_out", "spark_named_groups", "spark_range", "wait_until", "write_to_partition"]
