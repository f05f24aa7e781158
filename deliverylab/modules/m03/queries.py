"""What a running query in this notebook's own SparkSession uses as its checkpoint.

    checkpoint_folder(query)   the folder Spark resolved for the query: the one you gave, or the
                               temporary folder it made up when you gave none
    subfolders(path)           the folders directly under ``path`` (the queries' checkpoints under a
                               session-wide spark.sql.streaming.checkpointLocation)

PySpark's ``StreamingQuery`` does not expose this, so it is read from the JVM object behind
it (``StreamExecution.resolvedCheckpointRoot``, Spark 4.2). Only for looking: nothing here
changes a query.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from ...config import CourseError


def checkpoint_folder(query) -> str:
    """The local folder a running query keeps its checkpoint in (a ``file:`` URI made a path)."""
    try:
        root = str(query._jsq.streamingQuery().resolvedCheckpointRoot())
    except Exception as error:  # noqa: BLE001 - not a PySpark StreamingQuery, or another Spark version
        raise CourseError(f"Cannot read the checkpoint folder of {type(query).__name__}: pass the StreamingQuery "
                          f"that writeStream...start() returned ({error}).") from None
    return unquote(urlparse(root).path) if root.startswith("file:") else root


def subfolders(path) -> list[str]:
    """The names of the folders directly under ``path``, sorted ([] if it does not exist)."""
    folder = Path(path)
    return sorted(f.name for f in folder.iterdir() if f.is_dir()) if folder.is_dir() else []
