"""Lab 10's checks accept right answers and reject wrong ones, on the run shown and on hidden runs, over several seeds
(no broker, no Spark: the runs are made up; the crash's trap is driven by a fake py4j client writing metadata
files). tests/labs/test_lab10_planted.py plants answers for real on the Iceberg kernel."""
import random
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks, LabTodo, todo
from deliverylab.modules.m10 import hidden_runs, lab, scenarios
from deliverylab.modules.m10.tables import Snapshot
from seeds import seed_fixture

PRODUCED = [(f"o-{n}", "10.00") for n in range(8)]
seed = seed_fixture([1001, 2718, 31415])


def found(delivered, produced=PRODUCED):
    return ledger.reconcile(produced, delivered)


def shown(delivered=PRODUCED, failure=None, point="after_write"):
    return SimpleNamespace(failure=failure, point=point, ledger=None if failure else found(delivered))


def hidden_writer(first=PRODUCED, second=PRODUCED, failure=None, diagnosis=""):
    return SimpleNamespace(case=object(), failure=failure, first=first and found(first),
                           second=second and found(second), diagnosis=diagnosis, second_diagnosis="rolled back")


def replay_with(result, calls=None):
    def replay(shown_run, rng):
        if calls is not None:
            calls.append(rng.random())
        return result
    return replay


@pytest.fixture
def checks():
    return Checks("10-iceberg-lab", record=False)


def statuses(checks):
    return [r.status for r in checks.results]


def text(checks):
    return "\n".join(line for r in checks.results for line in r.lines)


# --------------------------------------------------------------------------- exercise 1


def test_a_right_writer_passes_and_its_hidden_run_is_built_once(checks, seed):
    calls, run = [], shown()
    for _ in range(2):  # the check cell run twice
        lab.check_exactly_once_writer(checks, lambda: run, replay_with(hidden_writer(), calls))
    assert set(statuses(checks)) == {"PASS"} and len(calls) == 1


def test_a_replay_written_twice_fails_on_the_run_shown_and_no_hidden_run_is_built(checks, seed):
    calls = []
    lab.check_exactly_once_writer(checks, lambda: shown(PRODUCED + PRODUCED[4:]), replay_with(hidden_writer(), calls))
    assert statuses(checks) == ["PASS", "PASS", "PASS", "FAIL", "SKIP", "SKIP"] and calls == []
    assert "snapshot-property" in text(checks)


def test_a_writer_right_above_fails_the_hidden_crash_with_its_seed_and_what_the_snapshots_say(checks, seed):
    bad = hidden_writer(first=PRODUCED + PRODUCED[:3], second=None, diagnosis="the mark changed between runs")
    lab.check_exactly_once_writer(checks, lambda: shown(), replay_with(bad))
    assert statuses(checks) == ["PASS", "PASS", "PASS", "PASS", "FAIL", "SKIP"]
    last = "\n".join(checks.results[-2].lines)
    assert f"seed {seed}" in last and "0 lost, 3 duplicated; the mark changed between runs" in last
    assert "right on the run above" in last and "hint:" in last


def test_a_check_of_every_listed_snapshot_fails_the_rollback(checks, seed):
    lab.check_exactly_once_writer(checks, lambda: shown(), replay_with(hidden_writer(second=PRODUCED[:5])))
    assert statuses(checks)[-1] == "FAIL" and "3 lost, 0 duplicated; rolled back" in text(checks)
    assert "is_current_ancestor" in text(checks)


def test_a_writer_that_failed_gets_one_fail_line(checks, seed):
    calls = []
    lab.check_exactly_once_writer(checks, lambda: shown(failure="AnalysisException: no such table"),
                                  replay_with(hidden_writer(), calls))
    assert statuses(checks) == ["FAIL", "SKIP", "SKIP", "SKIP", "SKIP", "SKIP"] and calls == []
    assert "AnalysisException" in text(checks)


def test_a_hidden_run_the_writer_stopped_in_says_so(checks, seed):
    lab.check_exactly_once_writer(checks, lambda: shown(),
                                  replay_with(hidden_writer(first=None, second=None, failure="ValueError: boom")))
    assert statuses(checks)[-2:] == ["FAIL", "SKIP"] and "your query stopped: ValueError: boom" in text(checks)


# --------------------------------------------------------------------------- exercise 2


def plan_run(delivered=PRODUCED, failure=None, kept=True, older_left=0):
    return scenarios.PlanRun(failure=failure, kept=kept, older_before=4, older_left=older_left,
                             ledger=None if failure else found(delivered))


@pytest.mark.parametrize("hidden_run, expected, words", [
    (plan_run(), ["PASS", "PASS", "PASS"], ""),
    (plan_run(PRODUCED + PRODUCED[6:], kept=False), ["PASS", "FAIL", "PASS"], "expired the query's last commit"),
    (plan_run(older_left=3), ["PASS", "PASS", "FAIL"], "3 of the 4"),
    (plan_run(failure="IllegalArgumentException: Cannot expire"), ["FAIL", "SKIP", "SKIP"], "Cannot expire"),
])
def test_a_plan_is_judged_on_the_run_shown_and_a_hidden_one(checks, seed, hidden_run, expected, words):
    lab.check_maintenance_plan(checks, lambda: plan_run(), replay_with(hidden_run))
    assert statuses(checks) == expected and words in text(checks)
    if "FAIL" in expected:
        assert f"seed {seed}" in text(checks) and "hint:" in text(checks)


def test_lines_of_the_shown_runs():
    assert plan_run().line().splitlines() == [
        "the query's last commit is still an ancestor of the current snapshot: True",
        "every snapshot older than it expired: True", "verdict: exactly-once (produced=8 lost=0 duplicated=0)"]
    run = scenarios.WriterRun(None, None, None, None, PRODUCED, 1, "after_write", None, found(PRODUCED))
    assert run.line().splitlines()[0] == "crash: after your function returned for batch 1, before Spark wrote commits/1"


# --------------------------------------------------------------------------- hidden cases (pure)


def test_every_hidden_writer_case_crashes_a_batch_with_orders_and_lets_others_commit():
    for s in range(500):
        case = hidden_runs.writer_case(random.Random(s))
        assert case.orders >= 3 * case.per_batch and 0 <= case.batch <= case.orders // case.per_batch - 1
        assert 1 <= case.foreign <= 3 and 3 <= case.later <= case.per_batch


def test_every_hidden_plan_case_has_another_query_and_other_writers_after_the_sink():
    for s in range(500):
        case = hidden_runs.plan_case(random.Random(s))
        assert case.steps.count("query") == 1 and 2 <= case.steps.count("insert") <= 3
        assert case.orders >= 3 * case.per_batch


def snap(n, **summary):
    return Snapshot(id=n, parent=n - 1, sequence=n, timestamp_ms=n, manifest_list="",
                    summary={"operation": "append", "added-records": "5", "spark.app.id": "local-1", "app-name": "x",
                             "app-id": "local-1", "manifests-kept": "0", **summary})


@pytest.mark.parametrize("crashed, replayed, delivered, words", [
    ([snap(1)], [snap(3)], PRODUCED + PRODUCED[:2], "carried no mark"),
    ([snap(1, **{"course.batch": "a:2"})], [snap(3, **{"course.batch": "b:2"})], PRODUCED + PRODUCED[:2],
     "course.batch=a:2, its replay's course.batch=b:2"),
    ([snap(1, **{"course.batch": "a:2"})], [snap(3, **{"course.batch": "a:2"})], PRODUCED + PRODUCED[:2],
     "did not find it"),
    ([], [snap(3)], PRODUCED + PRODUCED[:2], "no commit on the table"),
    ([snap(1)], [], PRODUCED[:5], "skipped orders it had never written"),
    ([], [], PRODUCED[:5], "held none of its rows (a mark written before the data?)"),
    ([snap(1)], [], PRODUCED, ""),
])
def test_the_diagnosis_names_what_the_snapshots_say(crashed, replayed, delivered, words):
    said = hidden_runs.diagnose(found(delivered), 2, crashed, replayed, "after_first_commit")
    assert (words in said) if words else said == ""


def test_a_batch_skipped_without_any_commit_is_blamed_on_an_earlier_checkpoints_mark():
    said = hidden_runs.diagnose(found(PRODUCED[:5]), 2, [], [], "after_write")
    assert "an earlier checkpoint" in said


def test_marks_are_a_writers_own_summary_entries():
    assert scenarios.marks(snap(1, **{"course.batch": "q:1", "total-records": "9", "engine-name": "spark"})) == \
        {"course.batch": "q:1"}


# --------------------------------------------------------------------------- the crash (no Spark)


def table_folder(tmp_path):
    folder = tmp_path / "tables" / "t"
    (folder / "metadata").mkdir(parents=True)
    (folder / "metadata" / "v1.metadata.json").write_text('{"snapshots": []}')
    return folder


def test_a_crash_after_the_write_fires_in_its_batch_only(tmp_path):
    trap = scenarios.Trap(1, "after_write", table_folder(tmp_path).parent)
    seen = []
    function = trap.wrap(lambda df, n: seen.append(n))
    function(None, 0)
    with pytest.raises(RuntimeError, match=scenarios.CRASH_MARK):
        function(None, 1)
    function(None, 1)  # the replay, after the restart
    assert seen == [0, 1, 1] and trap.fired == "after_write"


def test_the_learners_own_error_is_not_a_crash(tmp_path):
    trap = scenarios.Trap(0, "after_first_commit", table_folder(tmp_path).parent)

    def broken(df, n):
        raise ValueError("my bug")
    with pytest.raises(ValueError, match="my bug"):
        trap.wrap(broken)(None, 0)
    assert trap.fired is None


def test_a_crash_right_after_the_first_commit_stops_the_function_there(tmp_path):
    folder = table_folder(tmp_path)
    client = SimpleNamespace(sent=[])

    def send_command(command, *args):  # each command after the first "commits": a new metadata version
        client.sent.append(command)
        (folder / "metadata" / f"v{len(client.sent) + 1}.metadata.json").write_text('{"snapshots": []}')
        return "ok"
    client.send_command = send_command
    spark = SimpleNamespace(sparkContext=SimpleNamespace(_gateway=SimpleNamespace(_gateway_client=client)))
    trap = scenarios.Trap(2, "after_first_commit", folder.parent)
    with scenarios._trapped(spark, trap):
        function = trap.wrap(lambda df, n: [client.send_command("c\nwrite"), client.send_command("c\nstamp")])
        with pytest.raises(RuntimeError, match="right after the first Iceberg commit"):
            function(None, 2)
    assert client.sent == ["c\nwrite"] and trap.fired == "after_first_commit"


def test_an_unfinished_function_raises_its_todo_before_any_run():
    def stub(orders, out):
        todo("write it")

    def real(orders, out):
        raise AssertionError("never called here")
    with pytest.raises(LabTodo):
        scenarios.unfinished(stub, None, None)
    scenarios.unfinished(real, None, None)


SEEN = set()


def keeps_a_notebook_variable(orders, out):
    SEEN.add(1)
    return len(SEEN)


def self_contained(orders, out):
    import math

    return math.floor(2.5)


def test_each_start_makes_the_writer_again_from_its_source_so_python_state_does_not_survive():
    with pytest.raises(NameError, match="SEEN"):
        scenarios.fresh(keeps_a_notebook_variable)(None, None)
    assert scenarios.fresh(self_contained) is not self_contained and scenarios.fresh(self_contained)(None, None) == 2
    assert scenarios.fresh(scenarios.sink_query) is scenarios.sink_query  # the lab's own query as it is
