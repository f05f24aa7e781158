"""Lab 06's checks, each run on the right answer and on planted wrong answers (which must FAIL).

Most checks take plain values (rows, ledgers, relay runs read from event lines), so they are
tested here without a broker. The Spark checks are also run on real Spark DataFrames read
from a real topic (marked ``stack``): a read with no isolation setting, or with the setting
missing its ``kafka.`` prefix, and a de-duplication on Kafka's own columns, must all FAIL.
"""
from __future__ import annotations

import pytest

from deliverylab import ledger
from deliverylab.checks import FAIL, PASS, SKIP, Checks, todo
from deliverylab.modules.m06 import lab
from deliverylab.modules.m06.harness import RelayReport, RelayRun
from deliverylab.orders import generate_orders

ORDERS = generate_orders(60)
TO_COMMIT, TO_ABORT = ORDERS[:40], ORDERS[40:]


def pairs(orders):
    return [(o["order_id"], o["amount"]) for o in orders]


def statuses(checks: Checks) -> dict[str, str]:
    return {r.description: r.status for r in checks.results}


def fresh() -> Checks:
    return Checks("06-kafka-end-to-end-lab", record=False)


# --------------------------------------------------------------------------- exercise 1


def views_result(committed_view, default_view) -> dict[str, str]:
    checks = fresh()
    lab.check_transaction_views(checks, lambda: committed_view, lambda: default_view, TO_COMMIT, TO_ABORT)
    return statuses(checks)


def test_transaction_views_pass_for_the_right_answer():
    assert set(views_result(pairs(TO_COMMIT), pairs(ORDERS)).values()) == {PASS}


def test_transaction_views_reject_a_committed_view_left_at_read_uncommitted():
    # both readers at the default; a second transaction committed instead of aborted looks the same
    found = views_result(pairs(ORDERS), pairs(ORDERS))
    assert found["committed_view has none of the aborted orders"] == FAIL
    assert found["default_view shows the aborted orders too"] == PASS


def test_transaction_views_reject_views_swapped():
    found = views_result(pairs(ORDERS), pairs(TO_COMMIT))
    assert found["committed_view has none of the aborted orders"] == FAIL
    assert found["default_view shows the aborted orders too"] == FAIL


def test_transaction_views_reject_an_abort_that_dropped_unsent_records():
    found = views_result(pairs(TO_COMMIT), pairs(TO_COMMIT))  # abort without flush: nothing reached the topic
    assert found["default_view shows the aborted orders too"] == FAIL
    assert found["committed_view has every committed order, once"] == PASS


def test_transaction_views_reject_a_reader_that_starts_late():
    found = views_result(pairs(TO_COMMIT[10:]), pairs(ORDERS))
    assert found["committed_view has every committed order, once"] == FAIL


def test_transaction_views_skip_while_the_todo_is_open():
    def unfinished():
        return todo("set committed_view and default_view")

    checks = fresh()
    lab.check_transaction_views(checks, unfinished, unfinished, TO_COMMIT, TO_ABORT)
    assert set(statuses(checks).values()) == {SKIP}


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


def reader_result(reader, rep) -> str:
    checks = fresh()
    lab.check_relay_crash(checks, lambda: rep)
    lab.check_accounting_reader(checks, lambda: reader, lambda: rep, "xo.ana.relay-enriched")
    return statuses(checks)["read_for_accounting sees every order exactly once"]


def test_accounting_reader_passes_with_committed_rows():
    rep = report(killed_at("before_commit"), 20)
    assert reader_result(lambda topic: pairs(ORDERS), rep) == PASS


def test_accounting_reader_rejects_a_reader_left_at_read_uncommitted():
    rep = report(killed_at("before_commit"), 20)
    uncommitted_rows = pairs(ORDERS) + pairs(ORDERS[20:40])  # the aborted attempt's copies as well
    assert reader_result(lambda topic: uncommitted_rows, rep) == FAIL


def test_accounting_reader_rejects_a_reader_that_stops_early():
    rep = report(killed_at("before_commit"), 20)
    assert reader_result(lambda topic: pairs(ORDERS[:40]), rep) == FAIL


def test_accounting_reader_that_drops_repeats_fails_on_a_topic_with_an_abort_never_sent_again():
    rep = report(killed_at("before_commit"), 20)
    topics = {"relay": pairs(ORDERS) + pairs(ORDERS[20:40]), "refunds": pairs(ORDERS[:40]) + pairs(ORDERS[40:])}
    drops_repeats = lambda topic: list(dict(topics[topic]).items())  # noqa: E731 - read_uncommitted, ids once
    committed = lambda topic: pairs(ORDERS) if topic == "relay" else pairs(ORDERS[:40])  # noqa: E731
    for reader, status in ((drops_repeats, FAIL), (committed, PASS)):
        checks = fresh()
        lab.check_transaction_views(checks, lambda: pairs(ORDERS[:40]), lambda: topics["refunds"],
                                    ORDERS[:40], ORDERS[40:])
        lab.check_relay_crash(checks, lambda: rep)
        lab.check_accounting_reader(checks, lambda: reader, lambda: rep, "relay", refunds=("refunds", ORDERS[:40]))
        got = statuses(checks)
        assert got["read_for_accounting sees every order exactly once"] == PASS
        assert got["read_for_accounting skips an aborted transaction nobody sent again"] == status


def test_accounting_reader_skips_while_its_todo_is_open():
    rep = report(killed_at("before_commit"), 20)
    assert reader_result(lambda topic: todo("return the rows"), rep) == SKIP


# --------------------------------------------------------------------------- exercises 3 and 4 without Spark


def test_spark_read_rejects_collected_rows():
    checks = fresh()
    lab.check_spark_committed_read(checks, lambda: pairs(ORDERS), lambda: pairs(ORDERS))
    found = statuses(checks)
    assert found["committed_df is a Spark DataFrame"] == FAIL
    assert found["committed_df has every order exactly once"] == SKIP


def test_dedup_needs_the_duplicates_first():
    produced = generate_orders(10)
    clean = ledger.reconcile(produced, pairs(produced))
    checks = fresh()
    lab.check_downstream_dedup(checks, lambda: pairs(produced), lambda: produced, lambda: clean)
    found = statuses(checks)
    assert found["the crash left duplicates in the output topic"] == FAIL
    assert found["deduped has every order exactly once"] == SKIP
