"""Lab 08's checks accept right answers written several ways and reject planted wrong ones, on the run shown and on
hidden runs (no broker needed: chaos results, histories and matrix rows are made here)."""
import random
from datetime import datetime, timedelta, timezone

import pytest

from deliverylab.checks import Checks, hidden
from deliverylab.crashlab import crashpoints
from deliverylab.crashlab.variants import VARIANTS
from deliverylab.ledger import reconcile
from deliverylab.modules.m08 import audit, hidden_runs, lab, matrix
from seeds import seed_fixture

PLAN = ["before_sink_write", "mid_sink_write", "after_sink_write", "after_commit", "now"]


seed = seed_fixture()


def fresh():
    return Checks("08-capstone-lab", record=False)


def statuses(checks):
    return {r.description: r.status for r in checks.results}


def failed_text(checks):
    return "\n".join(line for r in checks.results if r.status == "FAIL" for line in r.lines)


# --------------------------------------------------------------------------- exercise 2: the plan

RIGHT_PLANS = {
    "every point, then a kill": lambda points: [*points, "now"],
    "a kill first, sorted points, two kills": lambda points: ["now", *sorted(points), "now"],
    "a loop over the dict's items": lambda points: [name for name, _ in points.items()] + ["now"],
}
WRONG_PLANS = {  # name: (plan function, where it goes wrong)
    "the four names typed in (kind 1)": (lambda points: [*PLAN], "a hidden run"),
    "the course's named points, whatever it is given (kind 2)": (
        lambda points: [*crashpoints.CRASH_POINTS, "now"], "a hidden run"),
    "no random kill": (lambda points: list(points), "the run above"),
    "what each point leaves behind, not its name": (lambda points: [*points.values(), "now"], "the run above"),
    "a point left out": (lambda points: [*list(points)[1:], "now"], "the run above"),
}


@pytest.mark.parametrize("name", RIGHT_PLANS)
def test_plan_functions_written_differently_pass(name, seed):
    checks = fresh()
    lab.check_plan(checks, lambda: RIGHT_PLANS[name])
    assert set(statuses(checks).values()) == {"PASS"}, checks.results


@pytest.mark.parametrize("name", WRONG_PLANS)
def test_wrong_plans_fail_where_they_go_wrong(name, seed):
    plan, where = WRONG_PLANS[name]
    checks = fresh()
    lab.check_plan(checks, lambda: plan)
    text = failed_text(checks)
    assert f"on:       {where}" in text and "hint:" in text, checks.results
    if where == "a hidden run":
        assert f"seed {seed}" in text and hidden.COPIED in text


def test_a_plan_that_is_a_list_is_not_a_function():
    checks = fresh()
    lab.check_plan(checks, lambda: PLAN)
    got = statuses(checks)
    assert got["chaos_plan is a function of a pipeline's crash points"] == "FAIL"
    assert got["your plan has a random kill too"] == "SKIP"


def test_a_hidden_pipeline_always_has_a_point_of_its_own_and_every_named_one():
    for n in range(300):
        points = hidden_runs.points_of_a_pipeline(random.Random(n))
        assert set(crashpoints.CRASH_POINTS) < set(points), n
        own = set(points) - set(crashpoints.CRASH_POINTS)
        assert own <= {p for v in VARIANTS.values() for p in v.crash_points}


# --------------------------------------------------------------------------- exercise 1: the chaos run


def chaos_result(plan=PLAN, lost=0, duplicated=0, fired=None, failure=None):
    crashes = [{"point": p, "by_sigkill": True} for p in (fired if fired is not None else plan)]
    if failure:
        return {"plan": list(plan), "crashes": crashes[:1], "failure": failure}
    return {"plan": list(plan), "crashes": crashes, "ledger": {"lost": lost, "duplicated": duplicated}}


PRODUCED = [(f"o-{n}", "10.00") for n in range(8)]


def crash_again(lost=0, duplicated=0, calls=None):
    delivered = PRODUCED[lost:] + PRODUCED[lost:lost + duplicated]

    def again(rng):
        if calls is not None:
            calls.append(rng)
        return reconcile(PRODUCED, delivered)
    return again


def test_chaos_passes_an_exactly_once_run_on_the_hidden_crash_too(seed):
    checks = fresh()
    lab.check_chaos(checks, lambda: chaos_result(), crash_again())
    assert set(statuses(checks).values()) == {"PASS"}


@pytest.mark.parametrize("shown, again, failing, where", [
    (dict(duplicated=37), {}, "no order written twice", "the run above"),          # a plain foreachBatch append
    (dict(lost=12), {}, "no order lost", "the run above"),                          # restarts at the end of the topic
    ({}, dict(duplicated=2), "no order written twice", "a hidden run"),  # a marker after the data: the kill between
    ({}, dict(lost=2), "no order lost", "a hidden run"),  # a dedup on customer and event time (the demo never shares)
])
def test_chaos_rejects_what_went_wrong_and_names_the_run(seed, shown, again, failing, where):
    checks = fresh()
    lab.check_chaos(checks, lambda: chaos_result(**shown), crash_again(**again))
    got = statuses(checks)
    assert got[failing] == "FAIL" and got["your pipeline ran through your plan"] == "PASS"
    text = "\n".join(r for res in checks.results if res.description == failing for r in res.lines)
    assert f"on:       {where}" in text and "hint:" in text
    if where == "a hidden run":
        assert f"seed {seed}" in text


def test_chaos_rejects_a_run_whose_crashes_did_not_all_fire():
    checks = fresh()
    lab.check_chaos(checks, lambda: chaos_result(fired=PLAN[:2]), crash_again())
    assert statuses(checks)["every crash of your plan killed the driver"] == "FAIL"


def test_chaos_a_failed_pipeline_is_one_fail_line_and_the_rest_skip_without_a_hidden_crash():
    calls = []
    checks = fresh()
    lab.check_chaos(checks, lambda: chaos_result(failure="[STREAM_FAILED] ... no checkpointLocation"),
                    crash_again(calls=calls))
    assert list(statuses(checks).values()) == ["FAIL", "SKIP", "SKIP", "SKIP"] and calls == []


def test_chaos_crashes_the_pipeline_once_for_its_checks_and_once_per_seed(monkeypatch):
    monkeypatch.setenv(hidden.SEED_ENV, "4711")
    calls, result = [], chaos_result()
    for _ in range(2):  # the check cell run twice
        lab.check_chaos(fresh(), lambda: result, crash_again(calls=calls))
    assert len(calls) == 1 and calls[0].random() == random.Random(4711).random()


def test_a_hidden_batch_always_has_orders_that_share_a_customer_and_an_event_time():
    class Pipe:
        produced = [{"order_id": f"o-{n:06d}"} for n in range(125)]

    for n in range(300):
        batch = hidden_runs.hidden_batch(Pipe, random.Random(n))
        pairs = [(o["customer_id"], o["event_time"]) for o in batch]
        assert len(set(pairs)) < len(pairs) <= 20, n
        assert min(int(o["order_id"][2:]) for o in batch) == 125
        assert len({o["order_id"] for o in batch}) == len(batch)


# --------------------------------------------------------------------------- exercise 3: the audit

V = audit.Version
# three batches of the first query, then two of the query redeployed on a new checkpoint
HISTORY = [V(0, "STREAMING UPDATE", 0, "q1"), V(1, "STREAMING UPDATE", 1, "q1"), V(2, "STREAMING UPDATE", 2, "q1"),
           V(3, "STREAMING UPDATE", 0, "q2"), V(4, "STREAMING UPDATE", 1, "q2")]


def rows_of(versions):
    """Versions as history rows, newest first (what the fake frames hold)."""
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return [{"version": v.version, "timestamp": t0 + timedelta(seconds=v.version), "operation": v.operation,
             "operationParameters": None if v.batch is None else {"queryId": v.query, "epochId": str(v.batch)}}
            for v in reversed(versions)]


class Reader:
    """A TableReader whose frames are lists of row dicts."""

    def __init__(self, versions=HISTORY, with_data=frozenset({0, 1})):
        self._versions, self._with_data = list(versions), set(with_data)

    def versions(self):
        return self._versions

    def with_data(self):
        return self._with_data

    def history(self):
        return rows_of(self._versions)

    def frame(self, rows):
        return rows


def epoch(row):
    return int(row["operationParameters"]["epochId"])


def per_query_counter(rows):  # each query's batches numbered from 0 in its order: right while none was cleaned up
    seen, out = {}, []
    for r in sorted(rows, key=lambda r: r["version"]):
        q = r["operationParameters"]["queryId"]
        out.append(seen.get(q, 0))
        seen[q] = seen.get(q, 0) + 1
    return out


def grouped_by_query(rows):  # each query's batches together, queries in the order they first wrote
    oldest = sorted(rows, key=lambda r: r["version"])
    queries = list(dict.fromkeys(r["operationParameters"]["queryId"] for r in oldest))
    return [epoch(r) for q in queries for r in oldest if r["operationParameters"]["queryId"] == q]


RIGHT_AUDITS = {
    "sorted by version": lambda rows: [epoch(r) for r in sorted(rows, key=lambda r: r["version"])],
    "the newest-first list reversed": lambda rows: [epoch(r) for r in reversed(list(rows))],
    "sorted by commit time": lambda rows: [epoch(r) for r in sorted(rows, key=lambda r: r["timestamp"])],
}
WRONG_AUDITS = {  # name: (function, where it goes wrong, a note the FAIL adds)
    "the list from the printout (kind 1)": (lambda rows: [0, 1, 2, 0, 1], "a hidden run", ""),
    "each query's batches counted from 0 (kind 2)": (per_query_counter, "a hidden run", ""),
    "the queries one after the other (kind 2)": (grouped_by_query, "a hidden run", "in another order"),
    "newest first": (lambda rows: [epoch(r) for r in rows], "the run above", "newest first"),
    "as text": (lambda rows: [str(epoch(r)) for r in reversed(rows)], "the run above", "as text"),
    "the version numbers": (lambda rows: sorted(r["version"] for r in rows), "the run above", "version numbers"),
    "sorted by batch id": (lambda rows: sorted(epoch(r) for r in rows), "the run above", "in another order"),
}


@pytest.mark.parametrize("name", RIGHT_AUDITS)
def test_audit_functions_written_differently_pass(name, seed):
    checks = fresh()
    lab.check_audit(checks, lambda: RIGHT_AUDITS[name], reader=Reader())
    assert set(statuses(checks).values()) == {"PASS"}, checks.results


@pytest.mark.parametrize("name", WRONG_AUDITS)
def test_wrong_audits_fail_where_they_go_wrong(name, seed):
    fn, where, note = WRONG_AUDITS[name]
    checks = fresh()
    lab.check_audit(checks, lambda: fn, reader=Reader())
    assert statuses(checks)["the batch id of every version, oldest first"] == "FAIL"
    text = failed_text(checks)
    assert f"on:       {where}" in text and note in text and "hint:" in text
    if where == "a hidden run":
        assert f"seed {seed}" in text


def test_audit_wants_a_function():
    checks = fresh()
    lab.check_audit(checks, lambda: [0, 1, 2, 0, 1], reader=Reader())
    got = statuses(checks)
    assert got["batch_ids is a function of a table's history"] == "FAIL"
    assert got["the batch id of every version, oldest first"] == "SKIP"


def test_audit_rejects_a_batch_of_one_query_committed_twice():
    twice = HISTORY + [V(5, "STREAMING UPDATE", 1, "q2")]
    checks = fresh()
    lab.check_audit(checks, lambda: RIGHT_AUDITS["sorted by version"], reader=Reader(twice))
    assert statuses(checks)["no query's batch twice in the history"] == "FAIL"


def test_audit_rejects_a_foreachbatch_table_and_a_replay_committed_twice():
    written = [V(0, "WRITE", None, None), V(1, "WRITE", None, None)]
    checks = fresh()
    lab.check_audit(checks, lambda: RIGHT_AUDITS["sorted by version"], reader=Reader(written, {1}))
    got = statuses(checks)
    assert got["every version of your table is a streaming write"] == "FAIL"
    assert got["no query's batch twice in the history"] == "FAIL"
    assert got["the batch id of every version, oldest first"] == "SKIP"


def test_hidden_histories_hold_every_hazard_for_every_seed():
    for n in range(500):
        rows = hidden_runs.history_rows(random.Random(n))
        oldest = sorted(rows, key=lambda r: r["version"])
        right = [epoch(r) for r in oldest]
        assert rows == sorted(rows, key=lambda r: -r["version"]), n                 # newest first, like history()
        assert [r["version"] for r in oldest] == list(range(oldest[0]["version"], oldest[0]["version"] + len(rows)))
        assert oldest[0]["version"] > 0 and right[0] >= 8 and max(right) >= 10, n  # a cleaned log, ids past 9
        assert per_query_counter(rows) != right and grouped_by_query(rows) != right, n
        assert [r["timestamp"] for r in oldest] == sorted({r["timestamp"] for r in oldest}), n
        assert len({r["operationParameters"]["queryId"] for r in rows}) == 3
        assert [v.batch for v in hidden_runs.versions_of(rows)] == right


# --------------------------------------------------------------------------- exercise 4: predictions


def right_picks():
    return {name: matrix.VARIANTS[name].guarantee for name in matrix.runnable()}


def rows_for(names, observed=None):
    return [matrix.MatrixRow(n, VARIANTS[n].guarantee, (observed or {}).get(n, VARIANTS[n].guarantee), 40, 0, 0)
            for n in names]


def test_the_groups_hold_every_runnable_variant_once_and_no_iceberg_row():
    """The lab runs no Iceberg row (its drivers boot a second Spark: the check would cost more); the learner
    predicts them all the same, where they are runnable."""
    grouped = [name for group in hidden_runs.GROUPS for name in group]
    main = [name for name in matrix.runnable() if not matrix.on_iceberg(name)]
    assert sorted(grouped) == sorted(main) and len(grouped) == len(set(grouped))


def test_the_drawn_variants_are_one_of_each_group_never_the_three_the_lab_used_to_name():
    old = {"control_table_after", "control_table_atomic", "kafka_sink_idempotent"}
    for n in range(300):
        drawn = hidden_runs.drawn_variants(random.Random(n))
        assert [sum(name in group for name in drawn) for group in hidden_runs.GROUPS] == [1, 1, 1]
        assert set(drawn) - old and drawn == [v for v in VARIANTS if v in drawn]


def test_right_predictions_pass_on_the_variants_drawn(seed):
    checks = fresh()
    lab.check_predictions(checks, right_picks, lambda: rows_for(lab.variants_to_run()))
    assert set(statuses(checks).values()) == {"PASS"}


OLD_THREE = {"control_table_after": "at-least-once", "control_table_atomic": "exactly-once",
             "kafka_sink_idempotent": "at-least-once"}


@pytest.mark.parametrize("guess", ["at-least-once", "exactly-once"])
def test_predictions_right_only_on_the_three_variants_the_lab_used_to_run_fail_for_every_seed(monkeypatch, guess):
    for n in range(40):
        monkeypatch.setenv(hidden.SEED_ENV, str(1000 + n))
        picks = {**{name: guess for name in matrix.runnable()}, **OLD_THREE}
        checks = fresh()
        lab.check_predictions(checks, lambda: picks, lambda: rows_for(lab.variants_to_run()))
        assert statuses(checks)["your predictions match the variants the lab ran"] == "FAIL", n
        assert f"seed {1000 + n}" in failed_text(checks)


def test_predictions_reject_a_table_missing_a_variant_a_misspelt_verdict_and_a_wrong_pick(seed):
    drawn = lab.variants_to_run()
    picks = right_picks()
    del picks["two_phase_commit"]
    checks = fresh()
    lab.check_predictions(checks, lambda: picks, lambda: rows_for(drawn))
    assert statuses(checks)["a prediction for every variant"] == "FAIL"
    checks = fresh()
    lab.check_predictions(checks, lambda: {**right_picks(), "delta_sink": "exactly once"}, lambda: rows_for(drawn))
    assert statuses(checks)["every prediction is a verdict"] == "FAIL"
    wrong = {**right_picks(), drawn[0]: "at-most-once" if VARIANTS[drawn[0]].guarantee != "at-most-once" else "exactly-once"}
    checks = fresh()
    lab.check_predictions(checks, lambda: wrong, lambda: rows_for(drawn))
    assert statuses(checks)["your predictions match the variants the lab ran"] == "FAIL"
    assert f"{drawn[0]}" in failed_text(checks)


def test_predictions_need_the_variants_drawn_not_a_choice_of_ones_own(seed):
    checks = fresh()
    lab.check_predictions(checks, right_picks, lambda: rows_for(["delta_sink"]))
    assert statuses(checks)["your predictions match the variants the lab ran"] == "FAIL"
    assert "lab.variants_to_run()" in failed_text(checks)


class Waiting:
    """A pipeline stand-in for hidden_runs._wait_for_a_commit: a sink folder, a checkpoint folder, a driver."""

    def __init__(self, tmp_path, running=True):
        self.sink, self.checkpoint = str(tmp_path / "sink"), str(tmp_path / "checkpoint")
        (tmp_path / "sink" / "_delta_log").mkdir(parents=True)
        (tmp_path / "checkpoint" / "commits").mkdir(parents=True)
        self.running, self.returncode = running, None if running else -9

    def _raise_if_failed(self):
        pass


def test_the_hidden_kill_waits_for_the_sinks_commit_before_the_querys(tmp_path):
    import threading

    pipe = Waiting(tmp_path)
    log = tmp_path / "sink" / "_delta_log"
    (log / "00000000000000000000.json").write_text("{}")
    seen = hidden_runs._versions(log)
    timer = threading.Timer(0.2, lambda: (log / "00000000000000000001.json").write_text("{}"))
    timer.start()
    assert hidden_runs._wait_for_a_commit(pipe, 4, seen, timeout_s=30) == "sink"
    (tmp_path / "checkpoint" / "commits" / "5").write_text("v1")  # a sink with no Delta log of its own
    assert hidden_runs._wait_for_a_commit(pipe, 5, hidden_runs._versions(log), timeout_s=30) == "query"
    with pytest.raises(Exception, match="ended by itself"):
        hidden_runs._wait_for_a_commit(Waiting(tmp_path / "dead", running=False), 6, set(), timeout_s=30)


def test_the_matrix_runs_only_once_every_variant_has_a_prediction(seed):
    from deliverylab.config import CourseError

    def not_made_yet():
        return my_picks  # noqa: F821 - the name an unfinished exercise 4 never set

    with pytest.raises(CourseError, match="run exercise 4's cell above"):
        lab.variants_to_run(not_made_yet)
    partial = right_picks()
    del partial["two_phase_commit"]
    with pytest.raises(CourseError, match="has none for two_phase_commit"):
        lab.variants_to_run(lambda: partial)
    assert lab.variants_to_run(lambda: right_picks()) == lab.variants_to_run()


def test_the_predictions_leave_module_10s_iceberg_rows_out_even_where_they_run(seed, monkeypatch):
    from deliverylab.crashlab import drivers

    monkeypatch.setattr(drivers, "iceberg_available", lambda: True)
    assert any(matrix.on_iceberg(v) for v in matrix.runnable())
    without = {n: p for n, p in right_picks().items() if not matrix.on_iceberg(n)}
    checks = fresh()
    lab.check_predictions(checks, lambda: without, lambda: rows_for(lab.variants_to_run(lambda: without)))
    assert statuses(checks)["a prediction for every variant"] == "PASS"
