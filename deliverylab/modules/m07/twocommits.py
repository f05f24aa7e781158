"""One foreachBatch, two tables: two Delta commits, each skipped on a replay by its own table's txn.

The lesson stops the quarantine pipeline between its two saves (an exception raised there fails
the query with ``offsets/N`` written and ``commits/N`` not), looks at both tables as any reader
would, then restarts the query from the same checkpoint.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ... import deltalog
from .kernel import SimulatedCrash, run_foreach_batch
from .quarantine import Pills, poison_lines, prepare, records_of, writer


def crash_between_writes() -> None:
    """Stands in for a driver that dies after the orders table's commit, before the quarantine's."""
    raise SimulatedCrash("after the orders table's commit, before the quarantine table's")


@dataclass(frozen=True)
class Table:
    """What a reader of one append-only Delta table finds: its rows, and how many commits wrote them."""
    rows: int
    commits: int


def look(table: str) -> Table:
    """Read ``table``'s log and its data files' footers, as a reader of its latest version would
    (the tables here are only appended to, so every file a commit added is still in the table)."""
    rows = sum(deltalog.parquet_rows(Path(table) / name) or 0 for name in deltalog.committed_files(table))
    writes = sum(1 for _, path in deltalog.commit_files(table)
                 if any("add" in action for action in deltalog.read_actions(path)))
    return Table(rows, writes)


def lines(produced: int, good: Table, quarantine: Table) -> list[str]:
    """The two tables side by side, and whether they add up (pure)."""
    def commits(n: int) -> str:
        return f"{n} commit{'' if n == 1 else 's'}"

    return [f"orders table:     {good.rows} rows, {commits(good.commits)}",
            f"quarantine table: {quarantine.rows} rows, {commits(quarantine.commits)}",
            f"produced = good + quarantined: {produced == good.rows + quarantine.rows} "
            f"({produced} produced)"]


@dataclass
class TwoCommits:
    """The lesson's quarantine pipeline on a topic of its own, run and restarted from one checkpoint."""
    spark: object
    lesson: object
    pills: Pills
    produced: int

    @classmethod
    def start(cls, spark, lesson, name: str) -> TwoCommits:
        """Produce the poison-pill file to a fresh topic; no query runs yet."""
        records = poison_lines()
        return cls(spark, lesson, prepare(lesson, name, records), len(records))

    def run(self, crash_between: bool = False) -> str:
        """Run the query to the end of the topic, stopping it between the two saves if asked."""
        write = writer(self.pills, between=crash_between_writes if crash_between else None)
        return run_foreach_batch(records_of(self.spark, self.lesson, self.pills), self.pills.checkpoint, write)

    def lines(self) -> list[str]:
        return lines(self.produced, look(self.pills.good_table), look(self.pills.quarantine_table))
