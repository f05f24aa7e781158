"""A foreachBatch query stopped in the middle of a batch ends quietly (stack/foreachbatch.py): Spark 4.2.0's
PROXY_ERROR regex no longer overflows its thread's stack on the Python traceback."""
from __future__ import annotations

import threading
import time

import pytest

from deliverylab.stack import foreachbatch


def test_an_interruption_becomes_a_short_message_spark_recognises_as_a_stop():
    text = ("An error occurred while calling o123.count.\n: java.lang.InterruptedException\n"
            + "\tat org.apache.spark.SomeClass.method(SomeClass.scala:1)\n" * 400)
    short = foreachbatch.short_message(text)
    assert short.startswith(foreachbatch.PROXY_PREFIX + " o123.count.")
    assert "\n: java.lang.InterruptedException" in short and len(short) < 200
    assert foreachbatch.short_message("An error occurred while calling o1.x.\n: java.lang.IllegalStateException") is None


def test_install_wraps_pyspark_s_batch_function_once():
    from pyspark.sql import utils

    assert foreachbatch.install() and foreachbatch.install()
    assert getattr(utils.ForeachBatchFunction.call, "_deliverylab_quiet_stop", False)
    assert not hasattr(getattr(utils.ForeachBatchFunction.call, "__wrapped__", None), "_deliverylab_quiet_stop")


@pytest.mark.stack
def test_a_query_stopped_while_its_batch_runs_ends_without_an_error_or_a_stack_overflow():
    """A real Spark session: the batch's Python function is still running (it waits, then calls the JVM) when
    the query is stopped; the call it then makes is interrupted. The query must end as stopped, with nothing
    new in the JVM's log about a StackOverflowError."""
    from deliverylab.stack import session

    spark = session.get_spark("tests")
    log = session.log_path("tests")
    before = log.stat().st_size if log.exists() else 0
    in_batch, called = threading.Event(), []

    def batch(frame, batch_id):
        # this runs on the query's own JVM thread (pinned threads): wait until stop() has interrupted it
        thread = frame.sparkSession._jvm.java.lang.Thread.currentThread()
        in_batch.set()
        deadline = time.monotonic() + 300
        while not thread.isInterrupted() and time.monotonic() < deadline:
            time.sleep(0.05)
        called.append(batch_id)
        frame.count()  # a JVM call on the interrupted thread: java.lang.InterruptedException

    query = spark.readStream.format("rate").option("rowsPerSecond", 5).load().writeStream.foreachBatch(batch).start()
    assert in_batch.wait(timeout=300), "no batch started"
    query.stop()
    assert called, "the batch's function never got past its wait"
    assert not query.isActive and query.exception() is None
    new = log.read_bytes()[before:].decode(errors="replace") if log.exists() else ""
    assert "StackOverflowError" not in new, new[-2000:]
