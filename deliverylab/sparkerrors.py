"""Spark's error classes, read out of an error's text: ``[STREAMING_CHECKPOINT_MISSING_METADATA_FILE] ...``.

Spark (and Delta) start each error message with its class in brackets; a lesson prints the class,
which stays the same across releases, rather than the message, whose wording and paths do not.
"""
from __future__ import annotations

import re

_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")


def error_class(error) -> str | None:
    """The first error class in an exception's or a message's text, or None
    (``[id = ...]`` and other bracketed text that is not an upper-case name are skipped)."""
    found = _CLASS.search(str(error))
    return found.group(1) if found else None
