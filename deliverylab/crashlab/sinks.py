"""Where a crash-lab pipeline writes, one small class per kind of sink.

Each sink knows four things: where it lives for a pipeline of a lesson, what must exist
before the first batch (``prepare``, run in the driver), the rows its *readers* see
(``rows``: what the ledger reconciles, duplicates included), and which files on disk no
reader sees (``files``: leftovers of attempts that never committed).

    kind         what it is                                     readers see
    parquet      a folder of Parquet files (plain append)        every file in the folder
    parquet-log  Spark's file sink (a folder + _spark_metadata)  files the log lists
    delta        a Delta table                                   files a commit added
    sqlite       a table in a SQLite file                        committed rows
    kafka        a Kafka topic                                   every record (read_committed)
    memory       a table in the driver's memory (memory sink)    rows of the running driver only
    sqlite-log   a SQLite table with no key, plus a table of       committed rows, duplicates included
                 processed batch ids (a "control table")
    two-phase    a folder: staging/ then published/, per epoch    published epochs only (twophase.py)
    iceberg      an Iceberg table in the course's catalog          files the current snapshot lists
                 (written on the Iceberg kernel; module 10)        (read with pyiceberg, no JVM; on the
                                                                   main kernel by the Iceberg venv's Python)
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from .. import checkpoint, deltalog, ledger
from ..orders import ORDER_SCHEMA
from ..stack.session import ICEBERG_CATALOG  # the course's Iceberg catalog (the Iceberg kernel only)


class Sink:
    kind: ClassVar[str] = ""
    #: Can the notebook read its rows without a SparkSession?
    reads_without_spark: ClassVar[bool] = False

    def __init__(self, location: str, bootstrap: str):
        self.location = location
        self.bootstrap = bootstrap
        self.pipeline = None  # set by the Pipeline that writes here

    @classmethod
    def location_for(cls, lesson, name: str) -> str:
        """Where the sink of pipeline ``name`` lives in ``lesson``."""
        return lesson.table(name)

    def prepare(self, spark, table_first: bool = False) -> None:
        """In the driver, before the query starts: create what the first batch needs."""

    def exists(self) -> bool:
        """Is there anything a reader could read yet?"""
        return Path(self.location).exists()

    def rows(self, spark=None) -> list[tuple]:
        """``(order_id, amount)`` of every row as the sink's readers see it, duplicates included."""
        raise NotImplementedError

    def files(self) -> dict:
        """``{"committed": n, "leftovers": [relative paths], "note": text}`` for the data files on disk."""
        return {"committed": None, "leftovers": [], "note": ""}

    def log_view(self) -> tuple[str, str] | None:
        """``(heading, text)`` of the sink's own commit log, for sinks that keep one."""
        return None

    def _spark(self, spark):
        from ..stack.session import get_spark

        return spark or get_spark()

    def _parquet_files(self) -> list[str]:
        folder = Path(self.location)
        if not folder.is_dir():
            return []
        return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.parquet")
                      if not p.name.startswith(".") and "_delta_log" not in p.parts)


class ParquetFolder(Sink):
    kind = "parquet"

    def exists(self) -> bool:
        folder = Path(self.location)
        return folder.is_dir() and any(p.suffix == ".parquet" and not p.name.startswith((".", "_"))
                                       for p in folder.iterdir())

    def rows(self, spark=None) -> list[tuple]:
        return ledger.read_parquet(self._spark(spark), self.location) if self.exists() else []

    def files(self) -> dict:
        data = self._parquet_files()
        left = [f for f in data if f.startswith("_temporary/")]
        return {"committed": len(data) - len(left), "leftovers": left,
                "note": "under _temporary: a write job that never committed" if left else ""}


class FileSinkFolder(ParquetFolder):
    kind = "parquet-log"

    def exists(self) -> bool:
        return (Path(self.location) / "_spark_metadata").is_dir() or super().exists()

    def files(self) -> dict:
        data = self._parquet_files()
        listed = checkpoint.file_sink_files(self.location)
        left = [f for f in data if f not in listed]
        return {"committed": len(data) - len(left), "leftovers": left,
                "note": ("not in _spark_metadata: hidden from Spark reading the sink's root folder, "
                         "visible to a folder listing or a glob") if left else ""}


class DeltaTable(Sink):
    kind = "delta"

    def prepare(self, spark, table_first: bool = False) -> None:
        from delta.tables import DeltaTable as Table

        if table_first and not Table.isDeltaTable(spark, self.location):
            spark.createDataFrame([], ORDER_SCHEMA).write.format("delta").save(self.location)

    def exists(self) -> bool:
        return (Path(self.location) / "_delta_log").is_dir()

    def rows(self, spark=None) -> list[tuple]:
        return ledger.read_delta(self._spark(spark), self.location) if self.exists() else []

    def files(self) -> dict:
        committed = deltalog.committed_files(self.location)
        left = deltalog.orphan_files(self.location)
        return {"committed": sum(1 for f in self._parquet_files() if f in committed), "leftovers": left,
                "note": "in no Delta commit: no Delta reader sees them" if left else ""}

    def log_view(self) -> tuple[str, str] | None:
        from .. import inspector

        return "delta log", str(inspector.format_delta_log(self.location))


class SQLiteTable(Sink):
    kind = "sqlite"
    reads_without_spark = True
    TABLE = "orders"

    @classmethod
    def location_for(cls, lesson, name: str) -> str:
        return lesson.path("tables", f"{name}.db")

    def prepare(self, spark, table_first: bool = False) -> None:
        import sqlite3

        with sqlite3.connect(self.location) as db:
            db.execute(f"CREATE TABLE IF NOT EXISTS {self.TABLE} (order_id TEXT PRIMARY KEY, customer_id TEXT, "
                       "amount TEXT, status TEXT, event_time TEXT)")

    def rows(self, spark=None) -> list[tuple]:
        return ledger.read_sqlite(self.location, self.TABLE) if self.exists() else []

    def files(self) -> dict:
        journal = Path(f"{self.location}-journal")
        left = [journal.name] if journal.exists() and journal.stat().st_size else []
        return {"committed": None, "leftovers": left,
                "note": "a hot journal is rolled back the next time the database is opened" if left else ""}


class KafkaTopic(Sink):
    kind = "kafka"
    reads_without_spark = True

    @classmethod
    def location_for(cls, lesson, name: str) -> str:
        return lesson.topic(f"{name}-out")

    def prepare(self, spark, table_first: bool = False) -> None:
        from ..stack.kafka import ensure_topic

        ensure_topic(self.bootstrap, self.location)

    def exists(self) -> bool:
        return True

    def rows(self, spark=None) -> list[tuple]:
        from ..stack.kafka import ensure_topic

        ensure_topic(self.bootstrap, self.location)
        return ledger.read_kafka_topic(self.bootstrap, self.location)

    def files(self) -> dict:
        return {"committed": None, "leftovers": [], "note": "a Kafka topic keeps every record it was sent"}


class SQLiteLog(SQLiteTable):
    """Orders appended with no key (a second copy is a second row), and the batch ids already processed."""

    kind = "sqlite-log"
    CONTROL = "processed_batches"

    def prepare(self, spark, table_first: bool = False) -> None:
        import sqlite3

        with sqlite3.connect(self.location) as db:
            db.execute(f"CREATE TABLE IF NOT EXISTS {self.TABLE} (order_id TEXT, customer_id TEXT, "
                       "amount TEXT, status TEXT, event_time TEXT)")
            db.execute(f"CREATE TABLE IF NOT EXISTS {self.CONTROL} (batch_id INTEGER PRIMARY KEY)")

    def processed_batches(self) -> list[int]:
        """The batch ids the control table says are done."""
        import sqlite3

        if not self.exists():
            return []
        db = sqlite3.connect(f"{Path(self.location).resolve().as_uri()}?mode=ro", uri=True)
        try:
            return [row[0] for row in db.execute(f"SELECT batch_id FROM {self.CONTROL} ORDER BY batch_id")]
        finally:
            db.close()


class TwoPhaseFolder(Sink):
    """The two-phase-commit sink of twophase.py: readers see published epochs only."""

    kind = "two-phase"
    reads_without_spark = True

    def rows(self, spark=None) -> list[tuple]:
        from . import twophase

        return ledger.normalise_rows(twophase.read_published(self.location), f"two-phase sink {self.location}")

    def files(self) -> dict:
        from . import twophase

        staged = twophase.epochs(self.location, twophase.STAGING)
        published = twophase.epochs(self.location, twophase.PUBLISHED)
        return {"committed": len(published), "leftovers": [f"staging/epoch={e}" for e in staged],
                "note": "staged but never published: no reader of the published folder sees it" if staged else ""}


class MemoryTable(Sink):
    """Spark's memory sink: rows live in the driver process's memory, and die with it.

    It is read by asking the running driver for its rows (a dump request, see files.py).
    """

    kind = "memory"
    reads_without_spark = True
    DUMP_TIMEOUT_S = 60

    @classmethod
    def location_for(cls, lesson, name: str) -> str:
        import re

        return "orders_" + re.sub(r"[^a-z0-9_]", "_", name.lower())  # a table name: the query's name

    def exists(self) -> bool:
        return True

    def rows(self, spark=None) -> list[tuple]:
        import time

        pipe = self.pipeline
        if pipe is None or not pipe.running:
            return []  # no driver, no memory: the table is gone
        home = pipe.driver.home
        home.dump.unlink(missing_ok=True)
        home.dump_request.write_text(self.location)
        deadline = time.monotonic() + self.DUMP_TIMEOUT_S
        while not home.dump.exists() and time.monotonic() < deadline and pipe.running:
            time.sleep(0.05)
        if not home.dump.exists():
            return []
        from ..stack.processes import read_jsonl

        return ledger.normalise_rows(read_jsonl(home.dump), f"memory table {self.location}")

    def files(self) -> dict:
        return {"committed": None, "leftovers": [], "note": "a memory table is never on disk"}


# --------------------------------------------------------------------------- Iceberg (module 10)
#: ``metadata/v<N>.metadata.json`` (``v<N>.gz.metadata.json`` when the table compresses its metadata).
_ICEBERG_METADATA = re.compile(r"^v(\d+)(?:\.[a-z0-9]+)?\.metadata\.json$")


def iceberg_metadata_file(table: str | Path) -> Path | None:
    """The newest ``metadata/v<N>.metadata.json`` of the Iceberg table in folder ``table`` (None: no table yet).

    Found by listing the folder, never from ``version-hint.text`` alone: the Hadoop catalog rewrites that
    hint after each commit (delete, then rename), so for an instant, or after a SIGKILL, it is missing or one
    version behind (Iceberg's Java reader reads the hint, then looks for newer versions; pyiceberg trusts it).
    Each ``v<N>`` arrives whole, by a rename."""
    folder = Path(table) / "metadata"
    if not folder.is_dir():
        return None
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _ICEBERG_METADATA.match(p.name))]
    return max(found)[1] if found else None


def iceberg_identifier(table: str | Path, spark=None) -> str:
    """The course catalog's name for the table in folder ``table``: ``iceberg.`a`.`b`.`name```, the folders
    under the catalog's warehouse (a Hadoop catalog's namespaces are folders)."""
    from ..config import CourseError

    key = f"spark.sql.catalog.{ICEBERG_CATALOG}.warehouse"
    warehouse = (spark or _active_spark()).conf.get(key, None)
    if not warehouse:
        raise CourseError(f"This Spark session has no Iceberg catalog ({key} is unset): module 10 runs on the "
                          "kernel \"Python 3 (Spark 4.1 + Iceberg)\"; pick it under Kernel > Change Kernel.")
    root = Path(warehouse.removeprefix("file://").removeprefix("file:")).resolve()
    try:
        parts = Path(table).resolve().relative_to(root).parts
    except ValueError:
        raise CourseError(f"{table} is not under the Iceberg catalog's warehouse {root}.") from None
    return ".".join([ICEBERG_CATALOG] + [f"`{p}`" for p in parts])


def _active_spark():
    from ..stack.session import get_spark

    return get_spark()


def open_iceberg(table: str | Path):
    """A pyiceberg ``StaticTable`` of the newest metadata of the table in folder ``table`` (no JVM)."""
    from ..config import CourseError

    try:
        from pyiceberg.table import StaticTable
    except ImportError:
        raise CourseError("Reading an Iceberg table without Spark needs pyiceberg, which the Iceberg kernel "
                          "(\"Python 3 (Spark 4.1 + Iceberg)\") has.") from None
    metadata = iceberg_metadata_file(table)
    if metadata is None:
        raise CourseError(f"no Iceberg table at {table} (no metadata/v<N>.metadata.json). Run the pipeline first.")
    return StaticTable.from_metadata(str(metadata))


def read_iceberg(table: str | Path) -> list[tuple]:
    """``(order_id, amount)`` of every row the current snapshot of the Iceberg table in ``table`` holds.
    Where pyiceberg is missing (the main kernel: the capstone's matrix), the Iceberg venv's Python reads them."""
    if not _has_pyiceberg():
        return ledger.normalise_rows([tuple(r) for r in _in_iceberg_python("rows", table)], f"Iceberg table {table}")
    scan = open_iceberg(table).scan(selected_fields=("order_id", "amount")).to_arrow()
    return ledger.normalise_rows(zip(scan.column("order_id").to_pylist(), scan.column("amount").to_pylist()),
                                 f"Iceberg table {table}")


def _has_pyiceberg() -> bool:
    import importlib.util

    return importlib.util.find_spec("pyiceberg") is not None


#: What the Iceberg venv's Python runs for ``_in_iceberg_python``: a reader of its own, with no JVM.
_READER = ("import json, sys; from deliverylab.crashlab import sinks; t = sys.argv[2]; "
           "out = [[i, str(a)] for i, a in sinks.read_iceberg(t)] if sys.argv[1] == 'rows' "
           "else sinks.IcebergTable(t, '').files(); print(json.dumps(out))")


def _in_iceberg_python(what: str, table: str | Path):
    """``rows`` (``[[order_id, "amount"], ...]``) or ``files`` of an Iceberg table, read by the Iceberg venv's
    Python (module 10's, which has pyiceberg) in a subprocess and passed back as JSON."""
    import json
    import subprocess

    from ..config import CourseError
    from ..stack.kernels import iceberg_python

    python = iceberg_python()
    if not python.exists():
        raise CourseError(f"Reading the Iceberg table {table} needs pyiceberg, which module 10's venv has, and "
                          f"{python} does not exist: run `make setup`.")
    done = subprocess.run([str(python), "-c", _READER, what, str(table)], capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-3:])
        raise CourseError(f"Reading the Iceberg table {table} with {python} failed:\n{tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table_relative(table: str | Path, path: str) -> str:
    """A file path from Iceberg's manifests (``file:/abs/...``) relative to the table's folder."""
    absolute = Path(path.removeprefix("file://").removeprefix("file:"))
    try:
        return absolute.resolve().relative_to(Path(table).resolve()).as_posix()
    except ValueError:
        return absolute.as_posix()


class IcebergTable(Sink):
    """An Iceberg table of the course's catalog, in its own folder (``metadata/`` and ``data/``)."""

    kind = "iceberg"
    reads_without_spark = True  # pyiceberg reads it (in the Iceberg kernel)

    def prepare(self, spark, table_first: bool = False) -> None:  # always: a streaming write needs the table
        spark.sql(f"CREATE TABLE IF NOT EXISTS {iceberg_identifier(self.location, spark)} ({ORDER_SCHEMA}) "
                  "USING iceberg TBLPROPERTIES ('format-version' = '2')")

    def exists(self) -> bool:
        return iceberg_metadata_file(self.location) is not None

    def rows(self, spark=None) -> list[tuple]:
        return read_iceberg(self.location) if self.exists() else []

    def files(self) -> dict:
        if self.exists() and not _has_pyiceberg():
            return _in_iceberg_python("files", self.location)
        data = Path(self.location) / "data"
        on_disk = {p.relative_to(self.location).as_posix() for p in data.rglob("*.parquet")
                   if not p.name.startswith(".")} if data.is_dir() else set()
        listed = set()
        if self.exists():
            for path in open_iceberg(self.location).inspect.all_files().column("file_path").to_pylist():
                listed.add(_table_relative(self.location, path))
        left = sorted(on_disk - listed)
        return {"committed": len(on_disk & listed), "leftovers": left,
                "note": "in no snapshot's manifests: no Iceberg reader sees them" if left else ""}

    def log_view(self) -> tuple[str, str] | None:
        from .. import inspector

        if not self.exists():
            return None
        rows = [{"n": n, "operation": s.summary.operation.value,
                 "epoch": s.summary.get("spark.sql.streaming.epochId"),
                 "added": s.summary.get("added-records", "0"), "total": s.summary.get("total-records")}
                for n, s in enumerate(open_iceberg(self.location).snapshots(), start=1)]
        return "iceberg snapshots", inspector.text_table(
            rows, [("n", "#"), ("operation", "operation"), ("epoch", "epochId"), ("added", "rows added"),
                   ("total", "rows in table")], numeric=("n", "added", "total"))


SINKS: dict[str, type[Sink]] = {cls.kind: cls for cls in (ParquetFolder, FileSinkFolder, DeltaTable, SQLiteTable,
                                                           KafkaTopic, MemoryTable, SQLiteLog, TwoPhaseFolder,
                                                           IcebergTable)}


def sink(kind: str, location: str, bootstrap: str) -> Sink:
    """The sink of ``kind`` at ``location``."""
    return SINKS[kind](location, bootstrap)
