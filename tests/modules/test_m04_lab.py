"""Lab 04's checks accept right answers written differently and reject planted wrong ones, on the run shown and
on hidden runs, over several seeds (no broker: the runs are made up, the hidden builders that need no broker are
run over many seeds). tests/labs/test_lab04_planted.py plants answers for real."""
from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks
from deliverylab.modules.m04 import hidden_runs, lab, trial
from deliverylab.modules.m04.duplicates import classify
from deliverylab.modules.m04.watermarks import parse_time, state_history
from seeds import seed_fixture

SEEDS = [1001, 2718, 31415, 77777]


def statuses(checks):
    return {r.description: r.status for r in checks.results}


def lines(checks, description):
    return "\n".join(next(r for r in checks.results if r.description == description).lines)


@pytest.fixture
def checks():
    return Checks("04-at-least-once-lab", record=False)


seed = seed_fixture(SEEDS)


# --------------------------------------------------------------------------- exercise 1

def replay(batch, extra=0, lost=0):
    """What a crash after the sink's write leaves: each record of the batch twice (plus ``extra`` rows)."""
    records = {i: [(0, n)] for n, i in enumerate(["o-1", "o-2", "o-3", "o-4"])}
    records["o-9"] = [(1, 0), (1, 1)]  # retried: two records
    rows = [i for i, where in records.items() for _ in where] + list(batch) + ["o-2"] * extra
    produced = [(i, "10.00") for i in records]
    delivered = [(i, "10.00") for i in rows if not (lost and i == "o-4")]
    return SimpleNamespace(crash=SimpleNamespace(batch=3), batch=list(batch), offsets=records,
                           ledger=ledger.reconcile(produced, delivered))


def crash_values(variant="at_least_once", point="after_sink_write", retried=("o-000025",), running=True):
    pipe = SimpleNamespace(variant=SimpleNamespace(name=variant), running=running, status_line=lambda: "running",
                           drain=lambda: None)
    report = SimpleNamespace(retried=list(retried), line=lambda: f"{len(retried)} retried")
    return pipe, SimpleNamespace(point=point), report


def run_crash_checks(checks, monkeypatch, shown, seed=None, **values):
    monkeypatch.setattr(lab, "_caught_up", lambda pipe: pipe.running)
    calls = []
    monkeypatch.setattr(lab.hidden_runs, "outcome", lambda pipe, crash: calls.append(crash.point) or shown)
    pipe, crash, report = crash_values(**values)
    pipe.seed_drawn = seed
    lab.check_crash(checks, lambda: pipe, lambda: crash, lambda: report)
    return statuses(checks), calls


def test_exercise_1_right_answer_judged_on_its_own_crash(checks, monkeypatch, seed):
    got, calls = run_crash_checks(checks, monkeypatch, replay(["o-9", "o-9", "o-1"]), seed)  # a retried pair in it
    assert set(got.values()) == {"PASS"} and calls == ["after_sink_write"]


def test_exercise_1_rejects_the_wrong_point_a_dedup_pipeline_and_no_retry(checks, monkeypatch, seed):
    got, calls = run_crash_checks(checks, monkeypatch, replay([]), seed, variant="dedup_within_watermark",
                                  point="after_commit", retried=())
    assert got["the pipeline is the plain append (at_least_once)"] == "FAIL"
    assert got["the driver died after the sink write"] == "FAIL"
    assert got["at least one reply was lost, so the producer sent an order twice"] == "FAIL"
    assert got["the restarted pipeline has caught up with its topic"] == "SKIP"  # depends on the crash point
    assert got["a crash there writes the batch twice and loses nothing"] == "SKIP" and calls == []


def test_exercise_1_rejects_a_pipeline_left_down(checks, monkeypatch, seed):
    got, calls = run_crash_checks(checks, monkeypatch, replay(["o-3"]), seed, running=False)
    assert got["the restarted pipeline has caught up with its topic"] == "FAIL"
    assert got["a crash there writes the batch twice and loses nothing"] == "SKIP" and calls == []


def test_exercise_1_a_crash_that_lost_orders_fails_with_its_seed(checks, monkeypatch, seed):
    got, _ = run_crash_checks(checks, monkeypatch, replay(["o-1"], lost=1), seed)
    assert got["a crash there writes the batch twice and loses nothing"] == "FAIL"
    text = lines(checks, "a crash there writes the batch twice and loses nothing")
    assert f"seed {seed}" in text and "hint:" in text


class FakePipe:
    """What hidden_runs.Pipeline.crash uses of a pipeline, the broker and the driver left out."""

    def __init__(self, seed):
        self.seed_drawn, self.seed, self.crashes, self.produced = seed, 7, [], []
        self.lesson, self.topic, self.armed, self.sent = SimpleNamespace(bootstrap="b"), "t", [], []

    def arm(self, point, batch=None):
        self.armed.append((point, batch))

    def wait_for_crash(self, point):
        return SimpleNamespace(point=point, batch=5)

    def _changed(self):
        pass


@pytest.mark.parametrize("n_seed", range(20))
def test_the_labs_pipeline_crashes_on_a_batch_that_begins_with_an_order_and_its_retried_copy(monkeypatch, n_seed):
    import deliverylab.orders as orders
    from deliverylab.stack import kafka

    fake = FakePipe(1000 + n_seed)
    monkeypatch.setattr(kafka, "end_offsets", lambda bootstrap, topic: {0: 40, 1: 37})
    monkeypatch.setattr(orders, "produce", lambda bootstrap, topic, records, progress: fake.sent.append(list(records)))
    for size in (1, 3, 60, 100):
        fake.sent.clear()
        crash = hidden_runs.Pipeline.crash(fake, "after_sink_write", batch=None, orders=size)
        assert crash.point == "after_sink_write" and fake.armed[-1] == ("after_sink_write", None)
        [records] = fake.sent  # one request, as crashlab's crash sends its orders
        ids = [r["order_id"] for r in records]
        distinct = sorted(set(ids), key=ids.index)
        assert [o["order_id"] for o in fake.produced[-len(distinct):]] == distinct  # the truth: once each
        for p in (0, 1):  # in each partition, the first order is followed by its retried copy
            mine = [r for r in records if hidden_runs.partition_of(r["order_id"], 2) == p]
            assert not mine or (mine[0] == mine[1] and mine[0] is not mine[1])
        assert 1 <= len(ids) - len(distinct) <= 4
        if size >= 60:
            assert len(ids) == size  # as many records as asked for: the crashed batch is no larger


def test_exercise_1_judges_each_record_of_the_batch_written_twice():
    assert lab._judge_replay("after_sink_write", replay(["o-9", "o-9", "o-1"])) is None  # 4 rows for 2 records
    assert lab._judge_replay("after_sink_write", replay(["o-9", "o-1"])) is None  # 3 rows: one record in the batch
    assert lab._judge_replay("after_sink_write", replay([])) is not None  # nothing written twice
    assert lab._judge_replay("after_sink_write", replay(["o-2"], extra=1)) is not None  # 3 rows for 1 record


# --------------------------------------------------------------------------- exercise 2

# o-1: retried by the producer (two offsets, two rows); o-2, o-3: in the crashed batch (one offset, two rows)
OFFSETS = {"o-1": [(0, 1), (0, 2)], "o-2": [(1, 4)], "o-3": [(0, 3)], "o-4": [(1, 5)]}
COPIES = Counter({"o-1": 2, "o-2": 2, "o-3": 2, "o-4": 1})


def kinds_statuses(checks, kinds):
    lab.check_duplicate_kinds(checks, lambda: kinds, lambda: (OFFSETS, COPIES))
    got = statuses(checks)
    return (got["source_ids: the orders at more than one offset of the topic"],
            got["replay_ids: the orders with more rows in the sink than records in the topic"])


def solution(offsets, copies):
    source_ids = {i for i, where in offsets.items() if len(where) > 1}
    return source_ids, {i for i, n in copies.items() if n > len(offsets.get(i, []))}


def counted(offsets, copies):  # the same, written another way: counts first, lists out
    records = Counter({i: len(where) for i, where in offsets.items()})
    return [i for i in records if records[i] >= 2], [i for i in copies if copies[i] - records[i] > 0]


@pytest.mark.parametrize("kinds", [solution, counted, lambda o, c: tuple(map(set, solution(o, c)))])
def test_exercise_2_right_answers_pass_on_every_seed(checks, seed, kinds):
    assert kinds_statuses(checks, kinds) == ("PASS", "PASS")


@pytest.mark.parametrize("kinds, expected", [
    # kind 1: the sets typed in from the run shown
    (lambda o, c: ({"o-1"}, {"o-2", "o-3"}), ("FAIL", "FAIL")),
    # kind 2: a replay is a duplicate the producer did not make; right only where no order is both
    (lambda o, c: (solution(o, c)[0], {i for i, n in c.items() if n > 1} - solution(o, c)[0]), ("PASS", "FAIL")),
    # kind 2: a replay is exactly two rows for one record; a retry exactly two rows for two records
    (lambda o, c: ({i for i in o if len(o[i]) == 2 and c[i] == 2}, {i for i in c if c[i] == 2 and len(o[i]) == 1}),
     ("FAIL", "FAIL")),
    # every duplicate in the sink taken for a replay
    (lambda o, c: (solution(o, c)[0], {i for i, n in c.items() if n > 1}), ("PASS", "FAIL")),
    # the two swapped
    (lambda o, c: solution(o, c)[::-1], ("FAIL", "FAIL")),
])
def test_exercise_2_rejects_planted_wrong_answers(checks, seed, kinds, expected):
    assert kinds_statuses(checks, kinds) == expected


def test_exercise_2_a_rule_right_on_the_run_shown_fails_on_the_hidden_run_with_its_seed(checks, seed):
    kinds_statuses(checks, lambda o, c: (solution(o, c)[0], {i for i, n in c.items() if n > 1} - solution(o, c)[0]))
    text = lines(checks, "replay_ids: the orders with more rows in the sink than records in the topic")
    assert f"seed {seed}" in text and "right on the run above" in text and "3 or 4 rows" in text


def test_exercise_2_wants_a_function_and_two_sets(checks, seed):
    lab.check_duplicate_kinds(checks, lambda: solution(OFFSETS, COPIES), lambda: (OFFSETS, COPIES))
    assert set(statuses(checks).values()) == {"FAIL", "SKIP"}
    single = Checks("04-at-least-once-lab", record=False)
    assert kinds_statuses(single, lambda o, c: ("o-1", solution(o, c)[1]))[0] == "FAIL"  # a string, not a set


@pytest.mark.parametrize("seed", range(400))
def test_every_hidden_sink_holds_an_order_both_retried_and_replayed(seed):
    scene = hidden_runs.replayed_topic(random.Random(seed))
    truth = classify(scene.offsets, scene.copies)
    both = set(truth.at_source) & set(truth.replayed)
    assert {scene.copies[i] for i in both} >= {3, 4}  # one with its two records replayed, one with a single
    assert truth.replayed and not truth.unknown


# --------------------------------------------------------------------------- exercise 3

PRODUCED = [(f"o-{n}", "10.00") for n in range(400)]
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def fake_trial(rows, states, watermarks=True, produced=PRODUCED, late=0):
    progress = [{"batch": b, "rows": 99, "state_rows": s, "state_dropped": late if b == 1 else 0,
                 "watermark": (T0 + timedelta(minutes=b)).isoformat() if watermarks else None}
                for b, s in enumerate(states)]
    return trial.TrialResult(produced=[{"order_id": i, "amount": a} for i, a in produced], records=410, rows=rows,
                             history=state_history(progress), ledger=ledger.reconcile(produced, rows))


SMALL = PRODUCED[:100]
RIGHT = fake_trial(PRODUCED, [97, 193, 219, 213, 136, 121])
RIGHT_HIDDEN = fake_trial(SMALL, [30, 52, 41, 38], produced=SMALL)
NO_DEDUP = fake_trial(PRODUCED + PRODUCED[:10], [], watermarks=False)           # orders as they came
NO_WATERMARK = fake_trial(PRODUCED, [97, 193, 290, 386, 400], watermarks=False)  # dropDuplicates(["order_id"])
ID_ONLY = fake_trial(PRODUCED, [97, 193, 290, 386, 400, 400])                    # watermark, key without time
TOO_EAGER = fake_trial(PRODUCED[5:], [90, 91, 97, 90, 14, 0])                    # rows dropped as too late
SHORT_DELAY_HIDDEN = fake_trial(SMALL[3:], [20, 25, 22, 20], produced=SMALL, late=3)             # 10 s: fine above, late here
SPLIT_RETRY_HIDDEN = fake_trial(SMALL + SMALL[50:51], [20, 25, 22, 20], produced=SMALL)          # a copy in the next batch kept


def dedupe_statuses(checks, shown, again=RIGHT_HIDDEN):
    lab.check_dedupe(checks, lambda: shown, trial_again=lambda dedupe, rng: again)
    got = statuses(checks)
    return tuple(got[d] for d in lab.DEDUPE_CHECKS)


def test_exercise_3_right_answer(checks, seed):
    assert dedupe_statuses(checks, RIGHT) == ("PASS",) * 4


@pytest.mark.parametrize("shown, again, expected", [
    (NO_DEDUP, NO_DEDUP, ("FAIL", "PASS", "FAIL", "FAIL")),
    (NO_WATERMARK, NO_WATERMARK, ("PASS", "PASS", "FAIL", "FAIL")),
    (ID_ONLY, ID_ONLY, ("PASS", "PASS", "PASS", "FAIL")),
    (TOO_EAGER, TOO_EAGER, ("PASS", "FAIL", "PASS", "PASS")),
    (RIGHT, SHORT_DELAY_HIDDEN, ("PASS", "FAIL", "PASS", "PASS")),  # kind 2: the run shown is 4 s out of order
    (RIGHT, SPLIT_RETRY_HIDDEN, ("FAIL", "PASS", "PASS", "PASS")),  # an id forgotten before its copy came
])
def test_exercise_3_rejects_planted_wrong_answers(checks, seed, shown, again, expected):
    assert dedupe_statuses(checks, shown, again) == expected


def test_exercise_3_names_the_hidden_trial_and_its_seed(checks, seed):
    dedupe_statuses(checks, RIGHT, SHORT_DELAY_HIDDEN)
    text = lines(checks, "no order was lost")
    assert f"seed {seed}" in text and "3 rows dropped as too late" in text and "right on the run above" in text


def latest_minus(delay):
    def late_rows(records, size):
        """Which records Spark drops as too late with this delay: a row of batch j at or behind the watermark of
        batch j - 1 (the latest event time of batches 0 .. j - 2, minus the delay; the watermark that evicts state
        in batch j is one batch ahead of it)."""
        dropped, latest = [], []  # latest[j]: the latest event time of batches 0 .. j
        for j, start in enumerate(range(0, len(records), size)):
            mark = latest[j - 2] - delay if j >= 2 else None
            batch = records[start:start + size]
            dropped += [r for r in batch if mark and parse_time(r["event_time"]) <= mark]
            latest.append(max(latest[-1:] + [parse_time(r["event_time"]) for r in batch]))
        return dropped
    return late_rows


@pytest.mark.parametrize("seed", range(300))
def test_every_hidden_trial_plan_separates_a_1_minute_delay_from_a_short_one(seed):
    plan = hidden_runs.trial_plan(random.Random(seed))
    records, size = plan.records, plan.max_per_batch
    assert not latest_minus(timedelta(minutes=1))(records, size)           # a right dedupe loses nothing
    for short in (5, 10, 30, 35):
        assert latest_minus(timedelta(seconds=short))(records, size), short  # a short delay drops a late order
    ids = [r["order_id"] for r in records]
    assert ids[size - 1] == ids[size]                                       # a retry split across two batches
    assert len(ids) - len(set(ids)) >= 1 and len(set(ids)) == len(plan.orders)
    times = [parse_time(r["event_time"]) for r in records]
    assert times[-1] < max(times)
    # dropDuplicatesWithinWatermark keeps an id until the watermark passes its event time + 1 minute: even with
    # the watermark of the last data batch (a whole batch behind), fewer ids than orders are left in the state
    last_mark = max(times[: (len(times) - 1) // size * size]) - timedelta(minutes=1)
    kept = sum(1 for o in plan.orders if parse_time(o["event_time"]) + timedelta(minutes=1) > last_mark)
    assert kept < len(plan.orders)


# --------------------------------------------------------------------------- exercise 4

EVENT_TIMES = ["2026-01-01T00:00:03Z", "2026-01-01T00:06:40Z", "2026-01-01T00:03:00Z"]
SPARKS = fake_trial(PRODUCED, [97, 121])
SPARKS.history[-1]["watermark"] = datetime(2026, 1, 1, 0, 5, 40, tzinfo=timezone.utc)
SPARKS.event_times, SPARKS.delay = EVENT_TIMES, timedelta(minutes=1)


def watermark_status(checks, fn, result=SPARKS):
    lab.check_dedupe(checks, lambda: result, trial_again=lambda dedupe, rng: RIGHT_HIDDEN)
    lab.check_watermark(checks, lambda: fn, lambda: result)
    return statuses(checks)["your watermark is the one Spark used in the last batch"]


def from_text(result):
    return max(datetime.fromisoformat(t.replace("Z", "+00:00")) for t in result.event_times) - result.delay


@pytest.mark.parametrize("fn", [
    from_text,
    lambda r: (parse_time(max(r.event_times)) - r.delay).strftime("%Y-%m-%dT%H:%M:%SZ"),  # ISO text, as text
    lambda r: (max(parse_time(t) for t in r.event_times) - r.delay).replace(tzinfo=None),  # naive: read as UTC
])
def test_exercise_4_right_answers_pass_on_every_seed(checks, seed, fn):
    assert watermark_status(checks, fn) == "PASS"


@pytest.mark.parametrize("fn", [
    lambda r: datetime(2026, 1, 1, 0, 5, 40, tzinfo=timezone.utc),                 # kind 1: the printout's value
    lambda r: max(parse_time(t) for t in r.event_times) - timedelta(minutes=1),     # kind 2: the delay typed in
    lambda r: parse_time(r.event_times[-1]) - r.delay,                              # kind 2: the last record's time
    lambda r: r.watermark,                                                          # kind 3: Spark's own report
    lambda r: max(parse_time(t) for t in r.event_times),                            # no delay subtracted
    lambda r: datetime.now(timezone.utc) - r.delay,                                 # the clock on the wall
])
def test_exercise_4_rejects_planted_wrong_answers(checks, seed, fn):
    result = fake_trial(PRODUCED, [97, 121])
    result.history[-1]["watermark"] = datetime(2026, 1, 1, 0, 5, 40, tzinfo=timezone.utc)
    result.event_times, result.delay = ["2026-01-01T00:00:03Z", "2026-01-01T00:03:00Z", "2026-01-01T00:06:40Z"], \
        timedelta(minutes=1)  # the last record is the latest here, as in a trial read in order
    assert watermark_status(checks, fn, result) == "FAIL"
    assert "hint:" in lines(checks, "your watermark is the one Spark used in the last batch")


def test_exercise_4_skips_without_a_watermark_and_wants_a_function(checks, seed):
    lab.check_dedupe(checks, lambda: NO_WATERMARK, trial_again=lambda dedupe, rng: NO_WATERMARK)
    lab.check_watermark(checks, lambda: from_text, lambda: NO_WATERMARK)
    assert statuses(checks)["your watermark is the one Spark used in the last batch"] == "SKIP"
    fresh = Checks("04-at-least-once-lab", record=False)
    assert watermark_status(fresh, from_text(SPARKS)) == "SKIP"
    assert statuses(fresh)[lab.WATERMARK_FN] == "FAIL"


@pytest.mark.parametrize("seed", range(300))
def test_every_hidden_trial_of_exercise_4_has_another_delay_and_its_latest_in_the_middle(seed):
    result = hidden_runs.trial_times(random.Random(seed))
    times = [parse_time(t) for t in result.event_times]
    assert result.delay != timedelta(minutes=1) and result.history == [] and result.watermark is None
    assert times.index(max(times)) not in (0, len(times) - 1) and times.count(max(times)) == 1
