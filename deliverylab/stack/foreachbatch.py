"""A ``foreachBatch`` query stopped in the middle of a batch ends quietly, as Spark means it to.

What happened without this, on Spark 4.2.0 (pyspark's default pinned-thread mode): ``query.stop()``
interrupts the query's thread while it waits for the Python function of a batch. The next call that
Python makes into the JVM on that thread (pyspark's own ``jdf.sparkSession()`` before the function
runs, so even a function that does nothing) fails with ``java.lang.InterruptedException``; Python
hands the JVM that error as the text of its traceback, which holds the whole Java stack of the
interrupted call (several thousand characters). To tell a stop from a real failure, Spark's
``StreamExecution.isInterruptionException`` matches that text against ``PROXY_ERROR``::

    "py4j.protocol.Py4JJavaError: An error occurred while calling" +
      s"((.|\\r\\n|\\r|\\n)*)(${IO_EXCEPTION_NAMES.mkString("|")})"

(``StreamExecution.scala``, object ``StreamExecution``; the pattern came with SPARK-48717, apache/spark
pull request 47093). Java's regex engine recurses once per character for a repeated group of
alternatives, so the greedy ``((.|\\r\\n|\\r|\\n)*)`` over that text overflows the thread's stack:
``java.lang.StackOverflowError`` with thousands of ``java.util.regex.Pattern$Loop`` /
``GroupHead`` / ``Branch`` frames, thrown from the ``catch`` that was meant to recognise the stop, so
the query's thread dies with it (printed to the JVM's stderr: the kernel's Spark log, or a crash-lab
driver's log, whose tail the course shows when a driver fails).

:func:`install` wraps pyspark's ``ForeachBatchFunction.call`` (the Python object the JVM calls for each
batch): when a batch's Python side fails with a ``Py4JJavaError`` caused by one of those interruption
exceptions, it raises instead a short error that names the same call and exception, and nothing
else. Spark's pattern then matches a few hundred characters, the stop is recognised as a stop, and
the query ends as ``stop()`` intends, with nothing on stderr. Any other failure of a batch's function
goes to Spark untouched.
"""
from __future__ import annotations

#: The exceptions Spark counts as "interrupted by stop()" (StreamExecution.IO_EXCEPTION_NAMES).
INTERRUPTIONS = ("java.lang.InterruptedException", "java.io.InterruptedIOException",
                 "java.nio.channels.ClosedByInterruptException")
#: What Spark's PROXY_ERROR looks for before the exception's name.
PROXY_PREFIX = "py4j.protocol.Py4JJavaError: An error occurred while calling"


class StoppedMidBatch(Exception):
    """The query was stopped while a batch's Python function ran (its JVM call was interrupted)."""


def short_message(text: str) -> str | None:
    """For a Py4JJavaError's text caused by an interruption: the few lines Spark needs to recognise a
    stop (the call that failed, the exception's name). None for any other error."""
    names = [name for name in INTERRUPTIONS if name in text]
    if not names:
        return None
    call = text.split("An error occurred while calling", 1)[-1].strip().splitlines()
    where = call[0].strip() if call and "An error occurred while calling" in text else "a JVM method."
    return f"{PROXY_PREFIX} {where}\n: {names[0]} (the query was stopped during this batch)"


def install() -> bool:
    """Wrap pyspark's ForeachBatchFunction.call once per process. Returns True if it is wrapped now."""
    try:
        from py4j.protocol import Py4JJavaError
        from pyspark.sql import utils
    except ImportError:
        return False
    function = getattr(utils, "ForeachBatchFunction", None)
    if function is None:
        return False
    if getattr(function.call, "_deliverylab_quiet_stop", False):
        return True
    original = function.call

    def call(self, jdf, batch_id):
        try:
            return original(self, jdf, batch_id)
        except Py4JJavaError as error:
            try:
                short = short_message(str(error))
            except Exception:  # noqa: BLE001 - the JVM gone as well: let the original error through
                short = None
            if short is None:
                raise
            raise StoppedMidBatch(short) from None

    call._deliverylab_quiet_stop = True
    function.call = call
    return True
