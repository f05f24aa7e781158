"""Compact views of a streaming checkpoint and a Delta log, to compare before and after a crash.

The files are read by :mod:`deliverylab.checkpoint` (offsets/, commits/, sources/) and
:mod:`deliverylab.deltalog` (_delta_log); this module only lays them out as text. Neither
needs Spark.

The ``format_*`` functions and :func:`show_before_after` return :class:`TextBlock`: a
plain ``str`` that a notebook shows as the text itself, so a cell can end with it.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import checkpoint, deltalog
from .checkpoint import query_id, read_offsets_file  # noqa: F401 - part of this module's API
from .deltalog import orphan_files  # noqa: F401 - part of this module's API

ARROW = "→"
MISSING = "-"


class TextBlock(str):
    """A ``str`` whose repr is the text itself, so a notebook cell ending with it reads well."""

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))


# --------------------------------------------------------------------------- text tables


def _cell(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def text_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]], numeric: Iterable[str] = ()) -> str:
    """Fixed-width table: ``columns`` are (key, heading) pairs, numeric keys right-aligned."""
    numeric = set(numeric)
    cells = [[_cell(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max([len(heading)] + [len(line[i]) for line in cells]) for i, (_, heading) in enumerate(columns)]

    def render(values: Sequence[str]) -> str:
        parts = []
        for (key, _), width, value in zip(columns, widths, values):
            parts.append(value.rjust(width) if key in numeric else value.ljust(width))
        return "  ".join(parts).rstrip()

    return "\n".join([render([heading for _, heading in columns]), *(render(line) for line in cells)])


# --------------------------------------------------------------------------- checkpoint


def _partition_label(topic: str, partition: int, many_topics: bool) -> str:
    return f"{topic} p{partition}" if many_topics else f"p{partition}"


def describe_range(start_line: str | None, end_line: str) -> tuple[str, int | None]:
    """Text like ``p0 0→500, p1 0→500`` and the number of offsets in it (None if unknown).

    Offsets count records; in a transactional topic the commit markers take offsets too.
    """
    if end_line == MISSING:
        return "no offsets", None
    end = checkpoint.kafka_offsets(end_line)
    if end is None:  # some other source: show its own offset text
        return end_line if len(end_line) <= 40 else end_line[:37] + "...", None
    start = checkpoint.kafka_offsets(start_line) if start_line else None
    many_topics = len({topic for topic, _ in end}) > 1
    parts, rows = [], 0
    for key in sorted(end):
        begin = start.get(key) if start else None
        label = _partition_label(*key, many_topics)
        parts.append(f"{label} {'?' if begin is None else begin}{ARROW}{end[key]}")
        rows = None if rows is None or begin is None else rows + end[key] - begin
    return ", ".join(parts), rows


def _batch_ranges(ckpt: Path, batch: int, offsets: dict[int, Path]) -> tuple[str, int | None]:
    """Range text and offset count of one batch, over all its sources."""
    end_lines = read_offsets_file(offsets[batch])["sources"]
    previous = read_offsets_file(offsets[batch - 1])["sources"] if batch - 1 in offsets else None
    texts, total = [], 0
    for index, end_line in enumerate(end_lines):
        if batch == 0:
            start_line = checkpoint.start_line(ckpt, index)
        else:
            start_line = previous[index] if previous and index < len(previous) else None
        text, rows = describe_range(start_line, end_line)
        texts.append(text)
        total = None if total is None or rows is None else total + rows
    return " | ".join(texts), (total if end_lines else None)


def checkpoint_table(ckpt_path: str | Path) -> list[dict[str, Any]]:
    """One row per batch id: ``batch``, ``offsets`` and ``commits`` (file present?),
    ``range`` (start→end per partition) and ``rows`` (offsets in the range, None if unknown)."""
    ckpt = Path(ckpt_path)
    offsets = checkpoint.numbered_files(ckpt / "offsets")
    commits = checkpoint.numbered_files(ckpt / "commits")
    table = []
    for batch in sorted(set(offsets) | set(commits)):
        text, rows = _batch_ranges(ckpt, batch, offsets) if batch in offsets else ("offsets purged", None)
        table.append({
            "batch": batch,
            "offsets": batch in offsets,
            "commits": batch in commits,
            "range": text,
            "rows": rows,
        })
    return table


def restart_note(table: Sequence[Mapping[str, Any]]) -> str:
    """What Spark does on restart, judged from the last batch of a checkpoint table."""
    if not table:
        return "no batches yet: offsets/ is empty → the first run plans batch 0 from the starting offsets"
    last = table[-1]
    batch = last["batch"]
    planned = "written" if last["offsets"] else "missing"
    if last["commits"]:
        return f"last batch {batch}: offsets/{batch} {planned}, commits/{batch} written → restart goes on with batch {batch + 1}"
    return f"last batch {batch}: offsets/{batch} {planned}, commits/{batch} missing → will re-run on restart"


def format_checkpoint(ckpt_path: str | Path) -> TextBlock:
    """The checkpoint as a fixed-width table plus one line on what a restart will do."""
    table = checkpoint_table(ckpt_path)
    columns = [("batch", "batch"), ("offsets", "offsets"), ("commits", "commits"), ("range", "range"), ("rows", "rows")]
    lines = [text_table(table, columns, numeric=("batch", "rows"))] if table else []
    lines.append(restart_note(table))
    return TextBlock("\n".join(lines))


# --------------------------------------------------------------------------- delta log


def _num_records(add: Mapping[str, Any]) -> int | None:
    """``numRecords`` from an add action's stats (a JSON string), None when absent."""
    stats = add.get("stats")
    if isinstance(stats, str):
        stats = checkpoint.parse_json(stats)
    if isinstance(stats, dict) and isinstance(stats.get("numRecords"), int):
        return stats["numRecords"]
    return None


def summarise_commit(version: int, actions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One row of :func:`delta_log_table` from the actions of one commit."""
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    infos = [a["commitInfo"] for a in actions if "commitInfo" in a]
    txns = [a["txn"] for a in actions if "txn" in a]
    counts = [n for n in (_num_records(add) for add in adds) if n is not None]
    return {
        "version": version,
        "operation": infos[0].get("operation", "?") if infos else "?",
        "files_added": len(adds),
        "rows_added": sum(counts) if counts or not adds else None,
        "files_removed": len(removes),
        "txn_app": str(txns[0].get("appId", ""))[:8] if txns else None,
        "txn_version": txns[0].get("version") if txns else None,
    }


def delta_log_table(table_path: str | Path) -> list[dict[str, Any]]:
    """One row per committed version: ``version``, ``operation``, ``files_added``,
    ``rows_added``, ``files_removed``, ``txn_app`` (first 8 characters) and ``txn_version``."""
    return [summarise_commit(version, deltalog.read_actions(path)) for version, path in deltalog.commit_files(table_path)]


def format_delta_log(table_path: str | Path) -> TextBlock:
    """The Delta log as a fixed-width table plus a line on files that belong to no commit."""
    table = delta_log_table(table_path)
    if not table:
        return TextBlock("no Delta commits yet: _delta_log has no <version>.json files")
    columns = [
        ("version", "version"),
        ("operation", "operation"),
        ("files_added", "files added"),
        ("rows_added", "rows added"),
        ("files_removed", "files removed"),
        ("txn_app", "txn app"),
        ("txn_version", "txn version"),
    ]
    shown = [{k: (MISSING if v is None and k.startswith("txn") else v) for k, v in row.items()} for row in table]
    text = text_table(shown, columns, numeric=("version", "files_added", "rows_added", "files_removed", "txn_version"))
    orphans = len(deltalog.orphan_files(table_path))
    note = f"latest version {table[-1]['version']}; parquet files in no commit: {orphans}"
    return TextBlock(f"{text}\n{note}")


# --------------------------------------------------------------------------- before / after


def _heading(title: str, width: int) -> list[str]:
    return [title, "-" * max(width, len(title))]


def show_before_after(before: str, after: str, side_by_side: bool = False) -> TextBlock:
    """Two snapshots under the headings "before crash" and "after restart".

    Stacked by default (narrow notebooks); ``side_by_side=True`` puts them in two columns.
    """
    before_lines, after_lines = str(before).split("\n"), str(after).split("\n")
    if not side_by_side:
        width = max(len(line) for line in before_lines + after_lines)
        lines = [*_heading("before crash", width), *before_lines, "", *_heading("after restart", width), *after_lines]
        return TextBlock("\n".join(lines))
    left = _heading("before crash", max(len(line) for line in before_lines)) + before_lines
    right = _heading("after restart", max(len(line) for line in after_lines)) + after_lines
    width = max(len(line) for line in left)
    rows = max(len(left), len(right))
    left += [""] * (rows - len(left))
    right += [""] * (rows - len(right))
    return TextBlock("\n".join(f"{l.ljust(width)}  |  {r}".rstrip() for l, r in zip(left, right)))
