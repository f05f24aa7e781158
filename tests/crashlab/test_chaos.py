"""Every pipeline, crashed at every named point, on the real broker with real Spark.

One pipeline per variant runs the four crash points one after the other (chaos.run_chaos:
start once, crash, restart, crash, ... drain once), then the ledger is checked overall and
crash by crash, using the order ids of each crashed batch (read back from Kafka through
the batch's offset range in the checkpoint).
"""
from __future__ import annotations

import json
import os

import pytest

from deliverylab import CourseError
from deliverylab.crashlab import chaos, crashpoints
from deliverylab.crashlab import variants

POINTS = list(crashpoints.CRASH_POINTS)


#: Chaos runs go two at a time (DELIVERYLAB_TEST_CHAOS_WORKERS): most of a crash cycle is a
#: JVM booting or a process waiting, so two pipelines share two cores well.
WORKERS = int(os.environ.get("DELIVERYLAB_TEST_CHAOS_WORKERS", "2"))
#: Slowest first, so the two workers finish together. Each crash costs a driver boot (about 10 CPU-seconds),
#: so pipelines whose crash points the lessons' checked cells already show are not crashed again here:
#: Delta's plain streaming sink (lesson 05 crashes it at all four points, lessons 08 and its lab at all four
#: and "now"); at_least_once (lessons 01, 02 and 04 after the sink write, lesson 04 mid-write: one task's share
#: twice, lesson 02 before the sink write: nothing written, the batch run again from its offsets, the matrix); delta_txn
#: (lesson 05 after the sink write and after a new checkpoint, the matrix). delta_merge, the database upsert, the
#: file sink, Kafka's sink and at_most_once (whose per-point losses no checked cell shows) are crashed at every
#: point here.
ORDER = ["delta_merge", "sqlite_upsert", "file_sink", "at_most_once", "kafka_sink"]
SEEDS = {name: 11 + i for i, name in enumerate(ORDER)}
#: Orders per variant: 50 a crash (every crashed batch holds orders in both Kafka partitions).
ORDERS = 250
#: The crash-point suite runs the course's core pipelines (the ones chaos runs and the capstone
#: compare); variants with crash points of their own are crashed there by their lessons.
EXACTLY_ONCE = [name for name in ORDER if variants.VARIANTS[name].guarantee == "exactly-once"]


@pytest.fixture(scope="module")
def lesson():
    from deliverylab import setup

    return setup("test-chaos-suite", quiet=True)


def _selected_variants(session) -> list[str]:
    wanted = set()
    for item in session.items:
        if item.module.__name__ == __name__ and "results" in getattr(item, "fixturenames", ()):
            wanted.add(item.callspec.params["variant"])  # every test using results names its variant
    return [v for v in ORDER if v in wanted]


@pytest.fixture(scope="module")
def results(lesson, request):
    """run_chaos for every variant the selected tests need, all four points each; exceptions kept."""
    from concurrent.futures import ThreadPoolExecutor

    from deliverylab.stack.session import get_spark

    get_spark()  # the one SparkSession that reads Parquet and Delta sinks, built before the threads

    def one(variant):
        try:
            return chaos.run_chaos(lesson, variant, points="all", orders=ORDERS, seed=SEEDS[variant], keep_pipe=True)
        except Exception as err:  # noqa: BLE001 - reported by that variant's test
            return err

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {v: pool.submit(one, v) for v in _selected_variants(request.session)}
    return {v: f.result() for v, f in futures.items()}


def _result(results, variant):
    result = results[variant]
    if isinstance(result, BaseException):
        raise result
    return result


# --------------------------------------------------------------------------- no Spark


def test_plan_each_point_once_in_order():
    assert chaos.crash_plan("all") == POINTS
    assert chaos.crash_plan(None) == POINTS
    assert chaos.crash_plan("after_commit,before_sink_write") == ["after_commit", "before_sink_write"]
    assert chaos.crash_plan(["now"]) == ["now"]


def test_random_plan_is_seeded_and_includes_now():
    a = chaos.crash_plan("all", crashes=40, seed=3)
    assert a == chaos.crash_plan("all", crashes=40, seed=3)
    assert a != chaos.crash_plan("all", crashes=40, seed=4)
    assert set(a) <= set(POINTS) | {"now"}
    assert "now" in a and len(a) == 40
    assert set(chaos.crash_plan("after_commit", crashes=10, seed=1)) <= {"after_commit", "now"}


def test_bad_points_are_refused_with_the_valid_ones():
    with pytest.raises(CourseError, match="Valid crash points: before_sink_write"):
        chaos.crash_plan("after_sink_write,explode")
    with pytest.raises(CourseError):
        chaos.crash_plan("")
    with pytest.raises(CourseError):
        chaos.crash_plan("all", crashes=-1)


def test_cli_refuses_a_bad_point_before_starting_anything(capsys):
    with pytest.raises(CourseError, match="explode"):
        chaos.main(["--pipeline", "delta_txn", "--points", "explode", "--json"])
    assert capsys.readouterr().out == ""


def test_json_mode_keeps_stdout_for_the_json(capfd):
    with chaos._stdout_to_stderr() as real_stdout:
        print("progress from Python")
        import os as _os

        _os.write(1, b"progress from a child process or the JVM\n")
        print('{"json": 1}', file=real_stdout, flush=True)
    out, err = capfd.readouterr()
    assert out == '{"json": 1}\n'
    assert "progress from Python" in err and "from a child process" in err


def test_cli_knows_the_pipelines():
    with pytest.raises(SystemExit):
        chaos.main(["--pipeline", "no_such_pipeline"])


# --------------------------------------------------------------------------- real crashes


def _check_crashes_fired_as_armed(result):
    assert [c["point"] for c in result["crashes"]] == POINTS
    for c in result["crashes"]:
        assert c["by_sigkill"] and c["returncode"] == -9, c
        assert c["batch"] == c["armed_batch"], c
        assert c["ledger"]["orders"] > 0, c  # the crashed batch had orders in it


def _by_point(result):
    return {c["point"]: c["ledger"] for c in result["crashes"]}


def _no_duplicates_outside_crashed_batches(result):
    """Every duplicated order belongs to a crashed batch (ids in the batch's offset range)."""
    in_batches = sum(c["ledger"]["duplicated"] for c in result["crashes"])
    assert result["ledger"]["duplicated"] == in_batches


@pytest.mark.stack
@pytest.mark.parametrize("variant", EXACTLY_ONCE)
def test_exactly_once_variants_survive_every_crash_point(results, variant):
    result = _result(results, variant)
    _check_crashes_fired_as_armed(result)
    assert result["verdict"] == "exactly-once", result["verdict_line"]
    assert result["ledger"]["lost"] == 0 and result["ledger"]["duplicated"] == 0
    assert result["ledger"]["produced"] == result["orders"]
    for point, led in _by_point(result).items():
        assert led["lost"] == 0 and led["duplicated"] == 0, (point, led)
    json.dumps(chaos.public(result))  # what --json prints is plain JSON
    if variant == "file_sink":
        # mid_sink_write left partition 0's file on disk, in no commit
        assert result["sink_files"]["leftovers"], result["sink_files"]


@pytest.mark.stack
@pytest.mark.parametrize("variant", ["file_sink"])
def test_file_sink_leftovers_are_duplicates_to_a_plain_folder_reader(results, variant):
    from deliverylab import ledger
    from deliverylab.stack.session import get_spark

    result = _result(results, variant)
    mid = next(c for c in result["crashes"] if c["point"] == "mid_sink_write")
    raw = ledger.reconcile(result["pipe"].produced,
                           ledger.read_parquet(get_spark(), result["pipe"].sink, honour_sink_log=False))
    assert raw.lost == 0
    assert 0 < raw.duplicated < mid["ledger"]["orders"]
    assert set(raw.duplicated_ids) <= set(mid["_ids"]["batch"])


#: Where partition 0's output sits when mid_sink_write kills the driver, per at-least-once sink
#: (at_least_once's Parquet folder: lesson 04 shows partition 0's part in it twice).
MID_WRITE_LEFT = {
    # partition 0's records were already in the output topic (no transactions): sent again
    "kafka_sink": "the output topic",
}


@pytest.mark.stack
@pytest.mark.parametrize("variant", list(MID_WRITE_LEFT))
def test_at_least_once_sinks_duplicate_only_what_was_written_before_commit(results, variant):
    result = _result(results, variant)
    _check_crashes_fired_as_armed(result)
    assert result["verdict"] == "at-least-once", result["verdict_line"]
    assert result["ledger"]["lost"] == 0
    by_point = _by_point(result)
    # the whole batch was in the sink when the driver died, and the restart wrote it again
    assert by_point["after_sink_write"]["duplicated"] == by_point["after_sink_write"]["orders"]
    # nothing of the batch was written yet / the batch was committed: no second copy
    assert by_point["before_sink_write"]["duplicated"] == 0
    assert by_point["after_commit"]["duplicated"] == 0
    # partition 0's part was already in the sink (see MID_WRITE_LEFT) and was written again
    mid = by_point["mid_sink_write"]
    assert 0 < mid["duplicated"] < mid["orders"], (MID_WRITE_LEFT[variant], mid)
    _no_duplicates_outside_crashed_batches(result)


@pytest.mark.stack
@pytest.mark.parametrize("variant", ["at_most_once"])
def test_at_most_once_loses_and_never_duplicates(results, variant):
    result = _result(results, variant)
    _check_crashes_fired_as_armed(result)
    assert result["verdict"] == "at-most-once", result["verdict_line"]
    assert result["ledger"]["duplicated"] == 0
    by_point = _by_point(result)
    for point, led in by_point.items():
        # a new checkpoint starting at the latest offsets never sees what came in while it was down
        assert led["downtime_orders"] > 0 and led["downtime_lost"] == led["downtime_orders"], (point, led)
    # planned but not written: the batch is never run again
    assert by_point["before_sink_write"]["lost"] == by_point["before_sink_write"]["orders"]
    # written before the crash: kept
    assert by_point["after_sink_write"]["lost"] == 0
    assert by_point["after_commit"]["lost"] == 0
    # partition 1 never written; partition 0's committed task output is published by the
    # next run's first job commit into the same folder
    mid = by_point["mid_sink_write"]
    assert 0 < mid["lost"] < mid["orders"], mid

