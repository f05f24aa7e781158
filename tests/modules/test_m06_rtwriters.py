"""Module 06's two ForeachWriters for real-time mode, without a broker or Spark.

The writers are driven here the way Spark drives them (``open``, ``process`` per row, ``close``), through a
first attempt of batch 1 and a replay of it that covers more records, as real-time mode's replay does. The
run on the real broker, in a crash-lab driver killed by SIGKILL, is lesson 06's checked cell (nbval), so it
is not run a second time here.
"""
from __future__ import annotations

from collections import namedtuple

import pytest

from deliverylab import CourseError, ledger
from deliverylab.crashlab import variants
from deliverylab.modules.m06 import rtwriters

Row = namedtuple("Row", "topic partition offset order_id amount")


def records(first: int, last: int) -> list[Row]:
    return [Row("orders", 0, n, f"o{n}", f"{n}.50") for n in range(first, last)]


def run_batch(writer, epoch: int, rows: list[Row], partition: int = 0, error: Exception | None = None) -> bool:
    """One task of one batch, as Spark's foreach runs it: process() only if open() said yes, close() always."""
    taken = writer.open(partition, epoch)
    if taken:
        for row in rows:
            writer.process(row)
    writer.close(error)
    return taken


@pytest.fixture
def dbs(tmp_path):
    return rtwriters.prepare(tmp_path)


def both(dbs):
    return rtwriters.Both(rtwriters.ByCoordinates(dbs["by_coordinates"]), rtwriters.ByEpoch(dbs["by_epoch"]))


def produced(last: int) -> list[tuple[str, str]]:
    return [(r.order_id, r.amount) for r in records(0, last)]


def test_a_real_time_replay_that_reads_further_loses_orders_only_when_keyed_by_epoch(dbs):
    run_batch(both(dbs), 0, [])
    run_batch(both(dbs), 1, records(0, 20))          # first attempt of batch 1; then the crash, before commits/1
    run_batch(both(dbs), 1, records(0, 40))          # the replay: same batch id, from batch 0's end, further
    run_batch(both(dbs), 2, [])
    by_coordinates = ledger.reconcile(produced(40), rtwriters.rows(dbs["by_coordinates"]))
    by_epoch = ledger.reconcile(produced(40), rtwriters.rows(dbs["by_epoch"]))
    assert (by_coordinates.verdict, by_coordinates.delivered_rows) == ("exactly-once", 40)
    assert by_epoch.verdict == "at-most-once"
    assert by_epoch.lost_ids == tuple(f"o{n}" for n in range(20, 40)) and by_epoch.duplicated == 0
    assert rtwriters.refused(dbs["by_epoch"]) == [(0, 1)]
    assert rtwriters.written_again(dbs["by_coordinates"]) == 20


def test_a_replay_that_reads_less_duplicates_when_keyed_by_epoch(dbs):
    run_batch(both(dbs), 1, records(0, 20))          # first attempt of batch 1; then the crash
    run_batch(both(dbs), 1, records(0, 1))           # the replay started slowly and read one record
    run_batch(both(dbs), 2, records(1, 40))          # batch 2 reads on from there
    by_epoch = ledger.reconcile(produced(40), rtwriters.rows(dbs["by_epoch"]))
    assert (by_epoch.lost, by_epoch.duplicated) == (0, 19)
    assert ledger.reconcile(produced(40), rtwriters.rows(dbs["by_coordinates"])).verdict == "exactly-once"
    assert rtwriters.written_again(dbs["by_coordinates"]) == 20


def test_in_micro_batch_mode_a_replay_reads_the_same_records_and_both_are_exactly_once(dbs):
    run_batch(both(dbs), 1, records(0, 20))
    run_batch(both(dbs), 1, records(0, 20))          # offsets/1 was written first: the same range again
    run_batch(both(dbs), 2, records(20, 40))
    for name in ("by_coordinates", "by_epoch"):
        assert ledger.reconcile(produced(40), rtwriters.rows(dbs[name])).verdict == "exactly-once"


def test_a_replayed_record_lands_on_its_own_row_even_with_other_values(dbs):
    writer = rtwriters.ByCoordinates(dbs["by_coordinates"])
    run_batch(writer, 1, records(0, 3))
    run_batch(writer, 1, [Row("orders", 0, 1, "o1", "9.99")])
    assert sorted(rtwriters.rows(dbs["by_coordinates"])) == [("o0", "0.50"), ("o1", "9.99"), ("o2", "2.50")]
    assert rtwriters.written_again(dbs["by_coordinates"]) == 1


def test_partitions_and_epochs_are_separate_pairs(dbs):
    writer = rtwriters.ByEpoch(dbs["by_epoch"])
    assert run_batch(writer, 1, records(0, 2), partition=0)
    assert run_batch(writer, 1, records(2, 4), partition=1)
    assert run_batch(writer, 2, records(4, 6), partition=0)
    assert not run_batch(writer, 1, records(0, 2), partition=1)
    assert len(rtwriters.rows(dbs["by_epoch"])) == 6 and rtwriters.refused(dbs["by_epoch"]) == [(1, 1)]


def test_a_failed_task_leaves_nothing_and_its_pair_open(dbs):
    writer = rtwriters.ByEpoch(dbs["by_epoch"])
    run_batch(writer, 1, records(0, 5), error=RuntimeError("task failed"))
    assert rtwriters.rows(dbs["by_epoch"]) == []
    assert run_batch(writer, 1, records(0, 5))       # the retry writes the batch
    assert len(rtwriters.rows(dbs["by_epoch"])) == 5


def test_both_closes_a_writer_whose_open_said_no(dbs):
    run_batch(both(dbs), 1, records(0, 2))
    writer = both(dbs)
    assert writer.open(0, 1) is True                 # Both itself always takes the rows
    assert [type(w).__name__ for w in writer.taking] == ["ByCoordinates"]
    writer.close(None)
    assert all(getattr(w, "conn", None) is not None for w in writer.writers)
    assert rtwriters.refused(dbs["by_epoch"]) == [(0, 1)]


def test_prepare_starts_from_empty_files(dbs, tmp_path):
    run_batch(both(dbs), 1, records(0, 3))
    again = rtwriters.prepare(tmp_path)
    assert again == dbs and all(rtwriters.rows(db) == [] for db in again.values())


def test_rows_of_a_missing_file_is_a_course_error(tmp_path):
    with pytest.raises(CourseError, match="prepare"):
        rtwriters.rows(str(tmp_path / "nothing.db"))


def report(**changes) -> rtwriters.RealTimeReplay:
    fields = dict(by_sigkill=True, between_offsets_and_commits=True, first_start=0, first_end=20, replay_end=40,
                  crashed_batch=1, refused=[(0, 1)], written_again=20,
                  coordinates=ledger.reconcile(produced(40), produced(40)),
                  epoch=ledger.reconcile(produced(40), produced(20)))
    return rtwriters.RealTimeReplay(**{**fields, **changes})


def test_the_report_prints_only_what_holds_on_every_run():
    assert report().lines() == [
        "driver killed by SIGKILL between offsets/N and commits/N: True",
        "the restart ran batch N again, with the same epoch_id: True",
        "keyed by (topic, partition, offset): exactly-once | lost 0 | duplicated 0",
        "  rows it wrote a second time, each on its own row: True",
        "keyed by (partition, epoch): exactly-once: False"]
    # a replay that read less than the first attempt (a slow start): the next batch reads the rest again
    slow = report(replay_end=1, written_again=19, epoch=ledger.reconcile(produced(40), produced(40) + produced(20)[1:]))
    assert slow.line() == report().line()
    assert report().counts() == ("batch N read 20 orders before the crash, 40 when it ran again | "
                                 "keyed by (partition, epoch): lost 20, duplicated 0")
    assert slow.counts().endswith("1 when it ran again | keyed by (partition, epoch): lost 0, duplicated 19")


@pytest.mark.parametrize("changes, line", [
    (dict(by_sigkill=False), 0),
    (dict(between_offsets_and_commits=False), 0),
    (dict(refused=[]), 1),
    (dict(refused=[(0, 2)]), 1),
    (dict(written_again=0), 3),
])
def test_the_report_says_false_when_a_step_did_not_happen(changes, line):
    assert report(**changes).lines()[line].endswith("False")


def test_by_epoch_is_exactly_once_only_when_the_replay_read_the_same_range():
    assert report(epoch=ledger.reconcile(produced(40), produced(40))).lines()[4].endswith("True")


def test_the_pipeline_runs_in_a_crash_lab_driver():
    variant = variants.custom(rtwriters.realtime_writers, sink_kind="sqlite")
    code = variants.custom_source(rtwriters.realtime_writers)
    assert variant.name == "realtime_writers" and code.startswith(variants.CUSTOM_HEADER)
    # real-time mode refuses the crash lab's own source options: the pipeline reads the topic itself
    assert '"minPartitions"' not in code and '"maxOffsetsPerTrigger"' not in code
    assert '.trigger(realTime=rtwriters.BATCH)' in code and '.outputMode("update")' in code
