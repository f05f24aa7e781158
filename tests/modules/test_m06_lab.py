"""Lab 06's checks, each run on right answers and on planted wrong answers (which must FAIL), on the topic
shown and on hidden topics, over several seeds (no broker: topics are plans, readers read the plans).

The hidden topics' plans are tested here over many seeds: every one holds the probes that part a reader of
committed data from one that drops repeats, and a de-duplication from one that is right only when every order
has two copies. The readers and Spark reads are run for real in tests/labs/test_lab06_planted.py.
"""
from __future__ import annotations

import random
from collections import Counter

import pytest

from deliverylab import ledger
from deliverylab.checks import FAIL, PASS, SKIP, Checks, hidden, todo
from deliverylab.modules.m06 import lab, probes
from deliverylab.modules.m06.harness import RelayReport, RelayRun
from deliverylab.orders import generate_orders
from seeds import seed_fixture

ORDERS = generate_orders(60)
TO_COMMIT, TO_ABORT = ORDERS[:40], ORDERS[40:]
REFUNDS, RELAY = "refunds", "relay"


def pairs(orders):
    return [(o["order_id"], o["amount"]) for o in orders]


def statuses(checks: Checks) -> dict[str, str]:
    return {r.description: r.status for r in checks.results}


def fresh() -> Checks:
    return Checks("06-kafka-end-to-end-lab", record=False)


seed = seed_fixture()


@pytest.fixture(autouse=True)
def topics(monkeypatch):
    """Every topic as a plan: the hidden ones written nowhere, read here at either isolation level."""
    known = {REFUNDS: probes.TopicTruth(REFUNDS, pairs(TO_COMMIT), pairs(ORDERS)),
             RELAY: probes.TopicTruth(RELAY, pairs(ORDERS), pairs(ORDERS[:20]) + pairs(ORDERS[20:40]) + pairs(ORDERS[20:]))}

    def aborts(lesson, rng):
        truth = probes.plan_aborts(rng).truth(f"hidden-{rng.random()}")
        known[truth.topic] = truth
        return truth

    monkeypatch.setattr(probes, "topic_with_aborts", aborts)
    return known


def reader(topics, level):
    """A reader at ``level``: read_committed sees the committed orders, read_uncommitted every record written."""
    return lambda topic: list(topics[topic].committed if level == "read_committed" else topics[topic].sent)


# --------------------------------------------------------------------------- the hidden topics' plans


def test_every_topic_with_aborts_holds_both_probes_and_more_than_one_poll():
    for seed in range(80):
        plan = probes.plan_aborts(random.Random(seed))
        truth = plan.truth("t")
        assert truth.aborted_only, seed                   # an abort nobody sent again: dropping repeats keeps it
        assert truth.repeated, seed                       # an abort sent again: repeats in the uncommitted view
        assert len(truth.committed) > probes.ONE_POLL     # one poll() cannot return it all
        assert len({i for i, _ in truth.committed}) == len(truth.committed)  # every committed order once
        assert 1 <= plan.partitions <= 3
        assert not {i for i, _ in truth.sent} & {o["order_id"] for o in ORDERS}


def test_the_first_transaction_is_sometimes_aborted_and_the_plan_is_the_same_for_a_seed():
    firsts = {probes.plan_aborts(random.Random(seed)).transactions[0][1] for seed in range(25)}
    assert firsts == {True, False}
    assert probes.plan_aborts(random.Random(5)).truth("t").sent == probes.plan_aborts(random.Random(5)).truth("t").sent


def test_every_replayed_topic_has_orders_once_twice_and_three_times_and_another_size():
    for seed in range(150):
        truth = probes.plan_replays(random.Random(seed)).truth("t")
        copies = Counter(i for i, _ in truth.sent)
        assert {1, 2, 3} <= set(copies.values()), seed
        assert len(truth.committed) != 200                     # not the number of orders of the run shown
        assert len(truth.sent) // 2 != len(truth.committed)    # half the records is not the orders


# --------------------------------------------------------------------------- exercise 1


def views(committed_view, default_view) -> dict[str, str]:
    checks = fresh()
    lab.check_transaction_views(checks, lambda: committed_view, lambda: default_view, TO_COMMIT, TO_ABORT, REFUNDS,
                                None)
    return statuses(checks), checks


def test_transaction_views_pass_for_right_readers_written_two_ways(seed, topics):
    for committed in (reader(topics, "read_committed"), lambda t: sorted(reader(topics, "read_committed")(t))):
        got, _ = views(committed, reader(topics, "read_uncommitted"))
        assert set(got.values()) == {PASS}, got


def test_transaction_views_reject_values_instead_of_functions(topics):
    got, _ = views(pairs(TO_COMMIT), pairs(ORDERS))
    assert got["committed_view and default_view are functions of a topic"] == FAIL
    assert set(got.values()) - {FAIL} == {SKIP}


def test_transaction_views_reject_the_course_default_kept_for_both(seed, topics):
    got, checks = views(reader(topics, "read_committed"), reader(topics, "read_committed"))
    assert got["default_view shows the aborted orders too"] == FAIL
    assert "the same as committed_view" in "\n".join(checks.results[-1].lines)


def test_transaction_views_reject_views_swapped(seed, topics):
    got, _ = views(reader(topics, "read_uncommitted"), reader(topics, "read_committed"))
    assert got["committed_view has none of the aborted orders"] == FAIL
    assert got["default_view shows the aborted orders too"] == FAIL


def test_a_committed_view_copied_as_the_first_forty_rows_fails_on_the_hidden_topic(seed, topics):
    uncommitted = reader(topics, "read_uncommitted")
    got, checks = views(lambda t: uncommitted(t)[:40], uncommitted)  # kind 1: right on refunds only
    failed = [r for r in checks.results if r.status == FAIL]
    assert failed and all(f"seed {seed}" in "\n".join(r.lines) for r in failed), got
    assert any("right on the run above, wrong on this one" in "\n".join(r.lines) for r in failed)


def test_a_default_view_that_drops_repeats_fails_where_an_abort_was_sent_again(seed, topics):
    uncommitted = reader(topics, "read_uncommitted")
    got, _ = views(reader(topics, "read_committed"), lambda t: list(dict(uncommitted(t)).items()))  # kind 3
    assert got["default_view shows the aborted orders too"] == FAIL
    assert got["committed_view has every committed order, once"] == PASS


def test_transaction_views_skip_while_the_todo_is_open(topics):
    def unfinished(topic):
        return todo("return the rows")

    got, _ = views(unfinished, unfinished)
    assert got["committed_view and default_view are functions of a topic"] == PASS
    assert set(got.values()) - {PASS} == {SKIP}


# --------------------------------------------------------------------------- exercise 2


def relay_run(events: list[dict], returncode: int) -> RelayRun:
    return RelayRun(returncode, events, "relay-001.jsonl")


def killed_at(moment: str, transaction: int = 2) -> RelayRun:
    events = [{"event": "start"}]
    for n in range(1, transaction + 1):
        events.append({"event": "transaction", "transaction": n, "records": 20,
                       "order_ids": [o["order_id"] for o in ORDERS[(n - 1) * 20:n * 20]]})
        if n < transaction or moment == "after_commit":
            events.append({"event": "committed", "transaction": n})
    events.append({"event": "crash", "moment": moment, "transaction": transaction})
    return relay_run(events, -9)


DRAINED = relay_run([{"event": "start"}, {"event": "end", "reason": "drained", "transactions": 3}], 0)


def report(crash_run: RelayRun, aborted_copies: int) -> RelayReport:
    """A relay report whose read_uncommitted view holds ``aborted_copies`` orders of an aborted attempt."""
    produced = pairs(ORDERS)
    return RelayReport(crash_run=crash_run, restart_run=DRAINED, produced=produced,
                       committed=ledger.reconcile(produced, produced),
                       uncommitted=ledger.reconcile(produced, produced + produced[20:20 + aborted_copies]))


def relay_result(rep) -> dict[str, str]:
    checks = fresh()
    lab.check_relay_crash(checks, lambda: rep)
    return statuses(checks)


@pytest.mark.parametrize("moment", lab.MID_TRANSACTION)
def test_relay_crash_passes_inside_a_transaction(moment):
    assert set(relay_result(report(killed_at(moment), 20)).values()) == {PASS}


def test_relay_crash_rejects_a_crash_after_the_commit():
    found = relay_result(report(killed_at("after_commit"), 0))
    assert found["the relay was killed by SIGKILL in the middle of a transaction"] == FAIL
    assert found["the open transaction left records in the output topic"] == SKIP


def test_relay_crash_rejects_a_run_that_was_never_crashed():
    found = relay_result(report(DRAINED, 0))
    assert found["the relay was killed by SIGKILL in the middle of a transaction"] == FAIL


def test_relay_crash_rejects_an_open_transaction_that_left_nothing():
    found = relay_result(report(killed_at("after_send"), 0))
    assert found["the open transaction left records in the output topic"] == FAIL


def accounting(read) -> tuple[dict, Checks]:
    rep = report(killed_at("before_commit"), 20)
    checks = fresh()
    lab.check_relay_crash(checks, lambda: rep)
    lab.check_accounting_reader(checks, lambda: read, lambda: rep, RELAY, None)
    return statuses(checks), checks


def test_accounting_readers_written_two_ways_pass(seed, topics):
    committed = reader(topics, "read_committed")
    for read in (committed, lambda t: list(reversed(committed(t)))):
        got, _ = accounting(read)
        assert set(got.values()) == {PASS}, got


def test_accounting_reader_rejects_a_reader_left_at_read_uncommitted(seed, topics):
    got, _ = accounting(reader(topics, "read_uncommitted"))
    assert got["read_for_accounting sees every order exactly once"] == FAIL


@pytest.mark.parametrize("wrong, failed", [
    # kind 3: removes repeats, right on the relay's output, where every aborted order was sent again
    ("drops repeats", "read_for_accounting skips an aborted transaction nobody sent again"),
    # kind 4: one poll() returns at most 500 records; on a small topic it may happen to return them all
    ("one poll", "read_for_accounting sees every order exactly once"),
    # kind 1: the relay's orders, copied from the report, whatever the topic
    ("copied", "read_for_accounting sees every order exactly once"),
])
def test_accounting_readers_right_only_on_the_relay_fail_on_the_hidden_topic(seed, topics, wrong, failed):
    uncommitted, committed = reader(topics, "read_uncommitted"), reader(topics, "read_committed")
    read = {"drops repeats": lambda t: list(dict(uncommitted(t)).items()),
            "one poll": lambda t: committed(t)[:probes.ONE_POLL],
            "copied": lambda t: pairs(ORDERS)}[wrong]
    got, checks = accounting(read)
    assert got[failed] == FAIL, got
    lines = "\n".join(line for r in checks.results if r.description == failed for line in r.lines)
    assert f"seed {seed}" in lines and "hint:" in lines


def test_accounting_reader_that_raises_names_its_error(topics):
    def broken(topic):
        raise KeyError("isolation")

    got, checks = accounting(broken)
    assert got["read_for_accounting sees every order exactly once"] == FAIL
    assert "it raised KeyError" in "\n".join(checks.results[2].lines)


def test_accounting_reader_skips_while_its_todo_is_open(topics):
    got, _ = accounting(lambda topic: todo("return the rows"))
    assert got["read_for_accounting sees every order exactly once"] == SKIP


# --------------------------------------------------------------------------- exercises 3 and 4 without Spark


def test_spark_read_rejects_collected_rows(topics):
    checks = fresh()
    lab.check_spark_committed_read(checks, lambda: reader(topics, "read_committed"),
                                   lambda: report(killed_at("after_send"), 20), RELAY, None)
    found = statuses(checks)
    assert found["read_committed_df returns a Spark DataFrame"] == FAIL
    assert found["read_committed_df has every order exactly once"] == SKIP


def test_dedup_needs_the_duplicates_first():
    produced = generate_orders(10)
    clean = ledger.reconcile(produced, pairs(produced))
    checks = fresh()
    lab.check_downstream_dedup(checks, lambda: (lambda raw: raw), lambda: pairs(produced), lambda: produced,
                               lambda: clean, None, None)
    found = statuses(checks)
    assert found["the crash left duplicates in the output topic"] == FAIL
    assert found["dedup(raw) has every order exactly once"] == SKIP


def test_dedup_judges_the_hidden_topic_by_its_orders(seed, monkeypatch):
    """The DataFrame type check aside (a Spark DataFrame needs Spark), dedup is judged on both topics."""
    shown = pairs(ORDERS) + pairs(ORDERS)  # the run shown: every order twice

    def replays(lesson, spark, rng):
        truth = probes.plan_replays(rng).truth("hidden")
        return type("Run", (), {"raw": truth.sent, "orders": truth.committed})

    monkeypatch.setattr(lab, "hidden_replays", replays)
    right = lambda raw: list(dict(raw).items())  # noqa: E731 - one row per order id
    half = lambda raw: raw[: len(raw) // 2]      # noqa: E731 - kind 2: every order twice only in the demo
    copied = lambda raw: raw[:60]                # noqa: E731 - kind 1: the number of orders of the run shown
    for dedup, status in ((right, PASS), (half, FAIL), (copied, FAIL)):
        checks = fresh()
        checks.is_type = lambda *args, **kwargs: checks.that(args[0], True)  # noqa: E731 - no Spark here
        lab.check_downstream_dedup(checks, lambda: dedup, lambda: shown, lambda: ORDERS,
                                   lambda: ledger.reconcile(ORDERS, shown), None, None)
        assert statuses(checks)["dedup(raw) has every order exactly once"] == status
