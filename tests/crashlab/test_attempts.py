"""Which batches ran and which runs were replays, from events alone (no broker, no Spark)."""
from deliverylab.crashlab.attempts import batch_attempts


def ckpt(run):
    return "ckpt"


def rows_of(batch, run):
    return {2: 200, 3: 150}.get(batch, 0)


def test_a_clean_run_lists_batches_with_rows_once():
    progress = {1: [{"batch": 0, "rows": 0}, {"batch": 1, "rows": 200}, {"batch": 1, "rows": 200},
                    {"batch": 2, "rows": 100}]}
    assert batch_attempts(1, progress, [], ckpt, rows_of) == [
        {"run": 1, "batch_id": 1, "rows": 200, "replay": False, "crashed": False},
        {"run": 1, "batch_id": 2, "rows": 100, "replay": False, "crashed": False},
    ]


def test_after_sink_write_lists_the_crashed_attempt_and_marks_the_rerun_a_replay():
    progress = {1: [{"batch": 1, "rows": 200}], 2: [{"batch": 2, "rows": 200}, {"batch": 3, "rows": 50}]}
    got = batch_attempts(2, progress, [(1, 2, "after_sink_write")], ckpt, rows_of)
    assert [(a["run"], a["batch_id"], a["replay"], a["crashed"]) for a in got] == [
        (1, 1, False, False), (1, 2, False, True), (2, 2, True, False), (2, 3, False, False)]
    assert got[1]["rows"] == 200  # from the batch's offset range


def test_before_sink_write_wrote_nothing_but_the_rerun_is_still_a_replay():
    progress = {2: [{"batch": 2, "rows": 200}]}
    got = batch_attempts(2, progress, [(1, 2, "before_sink_write")], ckpt, rows_of)
    assert got == [{"run": 2, "batch_id": 2, "rows": 200, "replay": True, "crashed": False}]


def test_a_fresh_checkpoint_per_start_never_replays():
    progress = {2: [{"batch": 2, "rows": 200}]}
    got = batch_attempts(2, progress, [(1, 2, "after_sink_write")], lambda run: f"start-{run}", rows_of,
                         fresh_checkpoints=True)
    assert [a["replay"] for a in got] == [False, False]


def test_a_crashed_batch_with_unknown_range_is_not_listed():
    got = batch_attempts(1, {}, [(1, 9, "after_commit")], ckpt, rows_of)
    assert got == []
