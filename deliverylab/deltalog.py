"""Reading a Delta table's transaction log and its data files straight from disk (no Spark needed).

A Delta table is a folder of Parquet data files plus ``_delta_log/<20-digit version>.json``
commits, one JSON action per line (``commitInfo``, ``add``, ``remove``, ``metaData``,
``protocol``, ``txn``). Data files never go into ``_delta_log``: a writer puts them in the
table folder first, then one commit names them with ``add`` actions. A reader sees only
files that a commit added (and no later commit removed).

So a data file that no commit ever added is invisible to every Delta reader. Two kinds
exist: *orphans* of an attempt that crashed before its commit (they hold rows), and the
*schema-only* files Delta leaves when it writes no rows (an empty batch, or an empty table
created up front): it writes one empty Parquet file but adds nothing. ``VACUUM`` deletes
both once they are older than its retention period.
"""
from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

_COMMIT = re.compile(r"^(\d{20})\.json$")


def commit_files(table: str | Path) -> list[tuple[int, Path]]:
    """``(version, path)`` of every ``_delta_log/<20 digits>.json``, oldest first."""
    log = Path(table) / "_delta_log"
    if not log.is_dir():
        return []
    found = []
    for path in log.iterdir():
        match = _COMMIT.match(path.name)
        if match and path.is_file():
            found.append((int(match.group(1)), path))
    return sorted(found)


def read_actions(path: str | Path) -> list[dict[str, Any]]:
    """The actions of one commit file, one dict per non-empty line."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def is_table(table: str | Path) -> bool:
    return bool(commit_files(table))


def _relative(table: Path, path: str) -> str:
    """A path from an add action as a table-relative POSIX path (they are URL-encoded)."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file") and (parsed.scheme or path.startswith("/")):
        absolute = Path(unquote(parsed.path))
        try:
            return absolute.resolve().relative_to(table.resolve()).as_posix()
        except ValueError:
            return absolute.as_posix()
    return unquote(path)


def committed_files(table: str | Path) -> set[str]:
    """Every data file any commit ever added (later removals included), relative to the table."""
    table = Path(table)
    files = set()
    for _, path in commit_files(table):
        for action in read_actions(path):
            for kind in ("add", "cdc"):
                if kind in action and "path" in action[kind]:
                    files.add(_relative(table, action[kind]["path"]))
    return files


def txn_versions(table: str | Path) -> dict[str, int]:
    """``{appId: highest txn version}`` recorded in the log: what Delta would skip for each writer."""
    highest: dict[str, int] = {}
    for _, path in commit_files(table):
        for action in read_actions(path):
            txn = action.get("txn")
            if isinstance(txn, dict) and "appId" in txn:
                highest[txn["appId"]] = max(highest.get(txn["appId"], -1), int(txn.get("version", -1)))
    return highest


def data_files(table: str | Path) -> list[str]:
    """Every Parquet file under the table folder (``_delta_log`` aside), relative, sorted."""
    table = Path(table)
    if not table.is_dir():
        return []
    found = []
    for folder, subfolders, names in os.walk(table):
        if Path(folder) == table:
            subfolders[:] = [d for d in subfolders if d != "_delta_log"]
        found += [(Path(folder) / n).relative_to(table).as_posix()
                  for n in names if n.endswith(".parquet") and not n.startswith(".")]
    return sorted(found)


def uncommitted_files(table: str | Path) -> list[str]:
    """Data files that no commit ever added, schema-only files included."""
    committed = committed_files(table)
    return [f for f in data_files(table) if f not in committed]


def orphan_files(table: str | Path) -> list[str]:
    """Data files with rows that no commit added: what an attempt that crashed before its commit left.

    Delta's schema-only files (no rows) are not counted: nothing was lost or left behind there.
    """
    table = Path(table)
    return [f for f in uncommitted_files(table) if parquet_rows(table / f) != 0]


# --------------------------------------------------------------------------- parquet footer

# The footer is a Thrift struct (FileMetaData) in Thrift's compact protocol; its field 3 is
# num_rows. Only enough of the protocol to skip fields 1 and 2 and read field 3 is needed.
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def byte(self) -> int:
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip(self, kind: int) -> None:
        if kind in (_TRUE, _FALSE):
            return
        if kind == _BYTE:
            self.pos += 1
        elif kind in (_I16, _I32, _I64):
            self.varint()
        elif kind == _DOUBLE:
            self.pos += 8
        elif kind == _BINARY:
            length = self.varint()  # read first: `self.pos += self.varint()` would lose the varint's bytes
            self.pos += length
        elif kind in (_LIST, _SET):
            header = self.byte()
            size, element = header >> 4, header & 0x0F
            if size == 15:
                size = self.varint()
            for _ in range(size):
                if element in (_TRUE, _FALSE):  # booleans in a list take one byte each
                    self.pos += 1
                else:
                    self.skip(element)
        elif kind == _MAP:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    self.skip(types >> 4)
                    self.skip(types & 0x0F)
        elif kind == _STRUCT:
            self.struct_field(None)
        else:
            raise ValueError(f"unknown thrift type {kind}")

    def struct_field(self, wanted: int | None) -> int | None:
        """Skip through a struct; return the i64 value of field ``wanted`` if met (stops there)."""
        field = 0
        while True:
            header = self.byte()
            kind = header & 0x0F
            if kind == _STOP:
                return None
            delta = header >> 4
            field = field + delta if delta else self.zigzag()
            if field == wanted and kind == _I64:
                return self.zigzag()
            self.skip(kind)


def parquet_rows(path: str | Path) -> int | None:
    """The row count in a Parquet file's footer, or None if the file is not readable Parquet."""
    try:
        with open(path, "rb") as fh:
            fh.seek(-8, os.SEEK_END)
            length, magic = struct.unpack("<i4s", fh.read(8))
            if magic != b"PAR1" or length <= 0:
                return None
            fh.seek(-8 - length, os.SEEK_END)
            footer = fh.read(length)
        return _Reader(footer).struct_field(3)
    except (OSError, ValueError, IndexError, struct.error):
        return None
