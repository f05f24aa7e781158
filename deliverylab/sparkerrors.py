"""Spark's error classes, read out of an error's text: ``[STREAMING_CHECKPOINT_MISSING_METADATA_FILE] ...``.

Spark (and Delta) start each error message with its class in brackets; a lesson prints the class,
which stays the same across releases, rather than the message, whose wording and paths do not.
"""
from __future__ import annotations

import logging
import re
from contextlib import contextmanager

_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")


def error_class(error) -> str | None:
    """The first error class in an exception's or a message's text, or None
    (``[id = ...]`` and other bracketed text that is not an upper-case name are skipped)."""
    found = _CLASS.search(str(error))
    return found.group(1) if found else None


#: Classes that wrap the error which says what went wrong (a stream's end, a foreachBatch function's
#: error, a failed write task).
WRAPPERS = frozenset({"STREAM_FAILED", "FOREACH_BATCH_USER_FUNCTION_ERROR", "TASK_WRITE_FAILED"})


def cause_line(error) -> str | None:
    """The first line of the first error class in the text that is not a wrapper, without its SQLSTATE:
    ``[CAST_INVALID_INPUT] The value 'forty' of the type "STRING" cannot be cast ...``; None if there is none."""
    text = str(error)
    for found in _CLASS.finditer(text):
        if found.group(1) not in WRAPPERS:
            return text[found.start():].splitlines()[0].split(" SQLSTATE:")[0].strip()
    return None


def with_causes(error) -> str:
    """The error's text and the text of every exception that caused it: pyspark keeps a Java error's causes in
    ``_cause`` and the JVM's trace, with its "Caused by:" lines, in ``_stackTrace``."""
    texts, seen = [], 0
    while error is not None and seen < 10:
        texts += [str(error), str(getattr(error, "_stackTrace", None) or "")]
        error, seen = getattr(error, "_cause", None), seen + 1
    return "\n".join(texts)


def cause_class(error) -> str | None:
    """The first error class anywhere in the error and its causes that is not a wrapper (a stream's
    ``STREAM_FAILED`` around a foreachBatch function's Delta conflict gives the conflict's class), or None."""
    for found in _CLASS.finditer(with_causes(error)):
        if found.group(1) not in WRAPPERS:
            return found.group(1)
    return None


#: The loggers PySpark writes an error with a query context to (SQL and DataFrame contexts).
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


@contextmanager
def quiet_error_log():
    """PySpark logs each error it raises that has a query context to stderr (:data:`QUERY_CONTEXT_LOGGERS`:
    one JSON line of many KB, the JVM's stack included). Code that turns the error into a line of its own
    silences that copy while it runs."""
    loggers = [logging.getLogger(name) for name in QUERY_CONTEXT_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
