"""Module 04: the five watermark cases are planned from event times, and their outcomes read from copies."""
import pytest

from deliverylab.config import CourseError
from deliverylab.modules.m04 import pitfall
from deliverylab.orders import generate_orders

PRODUCED = generate_orders(400)


def test_five_cases_with_new_ids_and_copies_of_known_orders():
    cases = pitfall.plan(PRODUCED, "1 minute")
    assert [c.key for c in cases] == ["retry", "restamped", "evicted", "old_copy", "late_new"]
    known = {o["order_id"] for o in PRODUCED}
    for case in cases:
        assert all(o["order_id"] not in known for o in case.new)
        assert all(c["order_id"] == case.order_id for c in case.new + case.copies)
    assert {c.order_id for c in cases[2:4]} <= known and cases[4].order_id not in known


def test_event_times_sit_where_the_cases_need_them():
    cases = {c.key: c for c in pitfall.plan(PRODUCED, "1 minute")}
    latest = max(o["event_time"] for o in PRODUCED)
    assert cases["retry"].copies[0] == cases["retry"].new[0]                        # byte for byte the same
    assert cases["restamped"].copies[0]["event_time"] > cases["restamped"].new[0]["event_time"]
    assert cases["evicted"].copies[0]["event_time"] == latest                       # fresh, ahead of the watermark
    assert cases["old_copy"].copies[0] == PRODUCED[20]                              # unchanged, far behind
    assert cases["late_new"].new[0]["event_time"] == PRODUCED[30]["event_time"]
    assert "30 s later" in cases["restamped"].text
    assert "300 s later" in pitfall.plan(PRODUCED, "10 minutes")[1].text


def test_needs_enough_orders():
    with pytest.raises(CourseError, match="at least 40"):
        pitfall.plan(PRODUCED[:10])


def test_outcomes_and_table():
    cases = pitfall.plan(PRODUCED)
    assert pitfall.outcome(cases[0], 1) == "copy dropped" and pitfall.outcome(cases[0], 2) == "duplicated"
    assert pitfall.outcome(cases[4], 0) == "lost" and pitfall.outcome(cases[4], 1) == "kept"
    table = pitfall.table(cases, {"a": {cases[1].order_id: 2, cases[4].order_id: 1}, "b": {}})
    lines = table.splitlines()
    assert len(lines) == 6 and lines[0].split()[-2:] == ["a", "b"]
    assert "duplicated" in lines[2] and lines[5].split()[-2:] == ["kept", "lost"]
