"""The delivery ledger: pure Python, plus a real SQLite file for read_sqlite."""
from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections import namedtuple
from decimal import Decimal

import pytest

from deliverylab import ledger as L
from deliverylab import sinkrows
from deliverylab.config import CourseError
from deliverylab.ledger import reconcile

PRODUCED = [("o-000001", "10.00"), ("o-000002", "20.50"), ("o-000003", "5.25"), ("o-000004", "1.10")]


def test_exactly_once_when_every_id_arrives_once():
    result = reconcile(PRODUCED, list(PRODUCED), label="transactional")
    assert result.verdict == L.EXACTLY_ONCE
    assert (result.produced, result.delivered_once, result.duplicated, result.lost) == (4, 4, 0, 0)
    assert result.revenue_expected == result.revenue_observed == Decimal("36.85")
    assert result.verdict_line() == "verdict: exactly-once (produced=4 lost=0 duplicated=0)"


def test_at_least_once_counts_ids_and_extra_copies():
    delivered = PRODUCED + [PRODUCED[0], PRODUCED[0], PRODUCED[2]]
    result = reconcile(PRODUCED, delivered)
    assert result.verdict == L.AT_LEAST_ONCE
    assert result.duplicated == 2  # ids with more than one copy
    assert result.extra_copies == 3  # 2 extra of o-000001, 1 extra of o-000003
    assert result.duplicated_ids == ("o-000001", "o-000003")
    assert result.copies["o-000001"] == 3
    assert result.delivered_once == 2
    assert result.delivered_rows == 7
    assert result.revenue_difference == Decimal("25.25")


def test_at_most_once_lists_lost_ids_sorted():
    result = reconcile(PRODUCED, [PRODUCED[1], PRODUCED[2]])
    assert result.verdict == L.AT_MOST_ONCE
    assert result.lost_ids == ("o-000001", "o-000004")
    assert result.revenue_difference == Decimal("-11.10")


def test_lost_and_duplicated():
    result = reconcile(PRODUCED, [PRODUCED[1], PRODUCED[1], PRODUCED[2], PRODUCED[3]])
    assert result.verdict == L.LOST_AND_DUPLICATED
    assert result.verdict_line() == "verdict: lost and duplicated (produced=4 lost=1 duplicated=1)"


def test_unexpected_ids_are_counted_but_do_not_change_the_verdict():
    result = reconcile(PRODUCED, PRODUCED + [("zz-1", "3.00"), ("zz-1", "3.00")])
    assert result.unexpected == 1 and result.unexpected_ids == ("zz-1",)
    assert result.verdict == L.EXACTLY_ONCE
    assert result.revenue_observed == Decimal("42.85")  # what a dashboard on the sink would show


def test_decimal_sums_are_exact_where_floats_are_not():
    produced = [(i, 0.1) for i in range(10)]
    result = reconcile(produced, produced)
    assert sum(0.1 for _ in range(10)) != 1.0
    assert result.revenue_expected == Decimal("1.00")
    assert L.to_amount(19.99) == Decimal("19.99")


def test_accepts_pairs_dicts_and_row_like_objects():
    class FakeRow(tuple):  # behaves like pyspark.sql.Row for the ledger
        def asDict(self):
            return {"order_id": self[0], "amount": self[1]}

    Pair = namedtuple("Pair", "order_id amount")
    delivered = [
        {"order_id": "o-000001", "amount": Decimal("10.00"), "status": "paid"},
        ["o-000002", 20.5],
        FakeRow(("o-000003", "5.25")),
        Pair("o-000004", "1.1"),
    ]
    assert reconcile(PRODUCED, delivered).verdict == L.EXACTLY_ONCE


def test_integer_ids_sort_numerically():
    produced = [(n, "1.00") for n in (10, 9, 100, 2)]
    result = reconcile(produced, [])
    assert result.lost_ids == (2, 9, 10, 100)


@pytest.mark.parametrize("bad", [None, "ten", True, float("nan")])
def test_bad_amounts_raise_course_error(bad):
    with pytest.raises(CourseError, match="amount"):
        reconcile([("o-1", bad)], [])


def test_bad_rows_raise_course_error():
    with pytest.raises(CourseError, match="order_id"):
        reconcile([{"id": "o-1", "amount": "1.00"}], [])
    with pytest.raises(CourseError, match=r"\(order_id, amount\)"):
        reconcile(["o-1"], [])
    with pytest.raises(CourseError, match="real order id"):
        reconcile([(None, "1.00")], [])


def test_duplicate_produced_ids_are_refused():
    with pytest.raises(CourseError, match="twice in the produced list"):
        reconcile([("o-1", "1.00"), ("o-1", "1.00")], [])


def test_int_versus_str_ids_are_reported_not_silently_lost():
    with pytest.raises(CourseError, match="int but delivered ones are str"):
        reconcile([(1, "1.00")], [("1", "1.00")])


def test_summary_is_stable_text():
    delivered = PRODUCED[1:] + [PRODUCED[1], PRODUCED[1], ("zz-9", "2.00")]
    text = reconcile(PRODUCED, delivered, label="at-least-once").summary()
    assert text == "\n".join([
        "pipeline: at-least-once",
        "produced              4",
        "delivered once        2",
        "duplicated            1  (2 extra copies)",
        "lost                  1",
        "unexpected            1  (ids never produced)",
        "revenue expected  36.85",
        "revenue observed  69.85  (+33.00)",
        "verdict: lost and duplicated (produced=4 lost=1 duplicated=1)",
    ])


def test_summary_without_label_or_unexpected():
    text = reconcile(PRODUCED, PRODUCED).summary()
    assert text.splitlines()[0] == "produced              4"
    assert "unexpected" not in text
    assert "revenue observed  36.85  (0.00)" in text
    assert "(0 extra copies)" in text


def test_to_dict_is_json_ready():
    result = reconcile(PRODUCED, PRODUCED[:3] + [PRODUCED[0]], label="x")
    data = json.loads(json.dumps(result.to_dict()))
    assert data["verdict"] == "lost and duplicated"
    assert data["revenue_expected"] == "36.85"
    assert data["revenue_observed"] == "45.75"
    assert data["revenue_difference"] == "+8.90"
    assert data["lost_ids"] == ["o-000004"]
    assert data["duplicated_ids"] == ["o-000001"]
    assert data["copy_buckets"] == {"0": 1, "1": 2, "2": 1, "3+": 0}


def test_copy_buckets_cover_every_produced_id():
    delivered = [PRODUCED[0]] * 4 + [PRODUCED[1]] * 2 + [PRODUCED[2]]
    buckets = reconcile(PRODUCED, delivered).copy_buckets()
    assert buckets == {"0": 1, "1": 1, "2": 1, "3+": 1}
    assert list(buckets) == list(L.COPY_BUCKETS)


def test_ledger_is_frozen_and_has_a_short_repr():
    result = reconcile(PRODUCED, PRODUCED, label="eo")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.lost = 3
    assert repr(result) == "<Ledger 'eo' verdict: exactly-once (produced=4 lost=0 duplicated=0)>"


def test_verdict_for_covers_all_four_cases():
    assert [L.verdict_for(lost, dup) for lost, dup in [(0, 0), (1, 0), (0, 1), (1, 1)]] == [
        "exactly-once", "at-most-once", "at-least-once", "lost and duplicated"]


# --------------------------------------------------------------------------- read_sqlite


def _sqlite(tmp_path, rows, column_type="TEXT"):
    db = tmp_path / "sink.db"
    with sqlite3.connect(db) as con:
        con.execute(f"CREATE TABLE orders (order_id TEXT PRIMARY KEY, amount {column_type})")
        con.executemany("INSERT INTO orders VALUES (?, ?)", rows)
    con.close()
    return db


def test_read_sqlite_returns_decimal_pairs(tmp_path):
    db = _sqlite(tmp_path, [("o-000001", "10.00"), ("o-000002", "20.50")])
    assert L.read_sqlite(db, "orders") == [("o-000001", Decimal("10.00")), ("o-000002", Decimal("20.50"))]


def test_read_sqlite_real_column_is_still_exact(tmp_path):
    db = _sqlite(tmp_path, [("o-1", 0.1), ("o-2", 0.2)], column_type="REAL")
    result = reconcile([("o-1", "0.10"), ("o-2", "0.20")], L.read_sqlite(db, "orders"))
    assert result.revenue_observed == Decimal("0.30")


def test_read_sqlite_explains_missing_table_and_file(tmp_path):
    db = _sqlite(tmp_path, [])
    with pytest.raises(CourseError, match="has no table 'payments'.*orders"):
        L.read_sqlite(db, "payments")
    with pytest.raises(CourseError, match="no SQLite database"):
        L.read_sqlite(tmp_path / "absent.db", "orders")
    assert not (tmp_path / "absent.db").exists()


def test_read_sqlite_explains_missing_columns(tmp_path):
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE orders (id TEXT, total TEXT)")
    con.close()
    with pytest.raises(CourseError, match="cannot read order_id and amount"):
        L.read_sqlite(db, "orders")


# --------------------------------------------------------------------------- Kafka values and draining


def test_parse_order_json_keeps_amounts_exact():
    assert L.parse_order_json(b'{"order_id":"o-1","amount":19.99,"status":"paid"}') == ("o-1", Decimal("19.99"))
    assert L.parse_order_json('{"order_id":"o-2","amount":"5.5"}') == ("o-2", Decimal("5.50"))
    assert L.parse_order_json(None) is None


def test_parse_order_json_explains_bad_values():
    with pytest.raises(CourseError, match="not JSON"):
        L.parse_order_json(b"\xff\xfe", "p0 offset 3")
    with pytest.raises(CourseError, match="not an order"):
        L.parse_order_json(b'{"id": 1}')


def test_read_kafka_topic_rejects_unknown_isolation_level():
    with pytest.raises(CourseError, match="isolation_level"):
        L.read_kafka_topic("127.0.0.1:1", "t", isolation_level="serializable")


TP = namedtuple("TP", "topic partition")
Record = namedtuple("Record", "offset value")


class FakeConsumer:
    """Serves prepared records per partition, a few per poll, like a slow broker."""

    def __init__(self, records_by_partition, per_poll=2):
        self.pending = {tp: list(records) for tp, records in records_by_partition.items()}
        self.positions = {tp: 0 for tp in records_by_partition}
        self.per_poll = per_poll
        self.paused = set()

    def position(self, tp, timeout_ms=None):
        return self.positions[tp]

    def pause(self, *tps):
        self.paused.update(tps)

    def poll(self, timeout_ms=0):
        batch = {}
        for tp, records in self.pending.items():
            if tp in self.paused or not records:
                continue
            taken, self.pending[tp] = records[: self.per_poll], records[self.per_poll:]
            batch[tp] = taken
            self.positions[tp] = taken[-1].offset + 1
        return batch


def _value(n):
    return json.dumps({"order_id": f"o-{n}", "amount": "1.00"}).encode()


def test_drain_stops_at_end_offsets_and_skips_tombstones():
    p0, p1 = TP("t", 0), TP("t", 1)
    consumer = FakeConsumer({
        p0: [Record(0, _value(0)), Record(1, None), Record(2, _value(2)), Record(3, _value(99))],
        p1: [Record(0, _value(1))],
    })
    rows = sinkrows._drain(consumer, [p0, p1], {p0: 3, p1: 1}, timeout_s=5, topic="t")
    assert [order_id for order_id, _ in rows] == ["o-0", "o-2", "o-1"]  # o-99 came after the snapshot


def test_drain_times_out_with_a_helpful_message():
    p0 = TP("t", 0)
    consumer = FakeConsumer({p0: [Record(0, _value(0))]})
    with pytest.raises(CourseError, match="did not reach the end.*p0 at 1 of 5"):
        sinkrows._drain(consumer, [p0], {p0: 5}, timeout_s=0.05, topic="t")


# --------------------------------------------------------------------------- values, not only ids


def test_an_upsert_that_adds_on_a_replay_keeps_ids_unique_and_is_caught_by_its_amounts():
    doubled = [(order_id, str(Decimal(amount) * 2)) if order_id == "o-000002" else (order_id, amount)
               for order_id, amount in PRODUCED]
    result = reconcile(PRODUCED, doubled)
    assert (result.lost, result.duplicated, result.verdict) == (0, 0, "exactly-once")
    assert result.wrong_amount_ids == ("o-000002",) and not result.values_right
    assert result.verdict_line() == "verdict: exactly-once (produced=4 lost=0 duplicated=0 wrong_amount=1)"
    assert result.amount_problem() == "order o-000002 holds 41.00 where 20.50 was produced"
    assert "wrong amount" in result.summary() and result.to_dict()["wrong_amount_ids"] == ["o-000002"]


def test_right_amounts_leave_the_verdict_line_as_it_always_was():
    result = reconcile(PRODUCED, PRODUCED + PRODUCED[:1])
    assert result.values_right and result.amount_problem() is None
    assert result.verdict_line() == "verdict: at-least-once (produced=4 lost=0 duplicated=1)"


def _event(order_id, amount, status, second):
    return {"order_id": order_id, "amount": amount, "status": status, "event_time": f"2026-01-01T00:00:{second:02d}Z"}


EVENTS = [_event("o-1", "10.00", "placed", 1), _event("o-2", "20.00", "placed", 2),
          _event("o-1", "10.00", "paid", 5), _event("o-2", "18.00", "placed", 1)]  # o-2's second event is OLDER


def test_the_final_state_is_the_latest_event_by_time_not_by_arrival():
    assert L.final_states(EVENTS) == {"o-1": (Decimal("10.00"), "paid"), "o-2": (Decimal("20.00"), "placed")}


def test_equal_times_are_broken_by_status_as_the_course_merges_break_them():
    tied = [_event("o-1", "10.00", "paid", 3), _event("o-1", "10.00", "shipped", 3), _event("o-1", "10.00", "placed", 3)]
    assert L.final_states(tied)["o-1"] == (Decimal("10.00"), "shipped")


def test_a_sink_holding_each_final_state_once_is_right():
    result = L.reconcile_states(EVENTS, [("o-1", "10.00", "paid"), ("o-2", "20.00", "placed")])
    assert result.right and result.problem() is None
    assert result.line() == "final state: right (orders=2 missing=0 duplicated=0 wrong_amount=0 wrong_status=0)"


@pytest.mark.parametrize("rows, line_part, problem", [
    ([("o-1", "10.00", "placed"), ("o-2", "20.00", "placed")], "wrong_status=1",
     "order o-1 holds status 10.00 placed where its final event says 10.00 paid"),        # insert-only: the later event ignored
    ([("o-1", "10.00", "paid"), ("o-2", "18.00", "placed")], "wrong_amount=1",
     "order o-2 holds amount 18.00 placed where its final event says 20.00 placed"),      # an older event overwrote a newer one
    ([("o-1", "20.00", "paid"), ("o-2", "20.00", "placed")], "wrong_amount=1",
     "order o-1 holds amount 20.00 paid where its final event says 10.00 paid"),          # a replay that added
    ([("o-1", "10.00", "paid"), ("o-1", "10.00", "paid"), ("o-2", "20.00", "placed")], "duplicated=1",
     "order o-1 has 2 rows (10.00 paid and 10.00 paid): one row per order expected"),
    ([("o-1", "10.00", "paid")], "missing=1", "order o-2 is not in the sink"),
])
def test_each_way_a_keyed_sink_goes_wrong_is_named(rows, line_part, problem):
    result = L.reconcile_states(EVENTS, rows)
    assert not result.right and line_part in result.line() and result.line().startswith("final state: wrong")
    assert result.problem() == problem


def test_state_rows_come_as_dicts_too_and_bad_ones_say_what_to_give():
    rows = [{"order_id": "o-1", "amount": 10, "status": "paid"}, {"order_id": "o-2", "amount": "20.00", "status": "placed"}]
    assert L.reconcile_states(EVENTS, rows).right
    with pytest.raises(CourseError, match="status"):
        L.reconcile_states(EVENTS, [("o-1", "10.00")])
    with pytest.raises(CourseError, match="event_time"):
        L.final_states([{"order_id": "o-1", "amount": "1", "status": "paid", "event_time": "yesterday"}])
