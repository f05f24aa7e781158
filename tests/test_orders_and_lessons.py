import json
from decimal import Decimal

import pytest

from deliverylab import course, orders, streams
from deliverylab.config import CourseError, settings


def test_generator_is_seeded_and_ids_are_unique():
    a = orders.generate_orders(200, seed=3)
    assert a == orders.generate_orders(200, seed=3)
    assert a != orders.generate_orders(200, seed=4)
    assert len({o["order_id"] for o in a}) == 200


def test_generator_continues_without_overlap():
    first = orders.generate_orders(10, start=0)
    more = orders.generate_orders(10, start=10)
    assert first + more == orders.generate_orders(20)


def test_orders_have_the_course_fields_and_two_decimal_amounts():
    o = orders.generate_orders(1)[0]
    assert set(o) == {"order_id", "customer_id", "amount", "status", "event_time"}
    assert Decimal(o["amount"]).as_tuple().exponent == -2
    assert orders.revenue(orders.generate_orders(3)) == sum(Decimal(x["amount"]) for x in orders.generate_orders(3))


def test_sample_file_matches_the_generator():
    lines = (settings().root / "data" / "orders-sample.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == orders.generate_orders(50, seed=7)


def test_poison_pill_sample_has_good_and_malformed_records():
    lines = (settings().root / "data" / "orders-with-poison-pills.jsonl").read_text().split("\n")[:-1]
    good, bad = 0, 0
    for line in lines:
        try:
            record = json.loads(line)
            ok = {"order_id", "amount", "event_time"} <= set(record) and Decimal(record["amount"]) and "T" in record["event_time"]
        except Exception:
            ok = False
        good += bool(ok)
        bad += not ok
    assert (good, bad) == (20, 6)


@pytest.mark.parametrize("name", ["02-anatomy", "01-three-guarantees-lab", "test-anything"])
def test_known_lesson_names(name):
    assert course.check_lesson_name(name) == name


def test_unknown_lesson_name_suggests_the_closest():
    with pytest.raises(CourseError, match="Did you mean '02-anatomy'"):
        course.check_lesson_name("02-anatomyy")


def test_waiting_on_a_dataframe_instead_of_a_query_is_explained():
    class NotAQuery:
        pass
    with pytest.raises(CourseError, match="Expected a StreamingQuery"):
        streams.wait_for_batches(NotAQuery())


def test_a_lessons_login_is_empty_on_ones_own_broker_and_the_learners_on_a_class_broker(monkeypatch, tmp_path):
    from deliverylab.lesson import Lesson

    monkeypatch.setenv("DELIVERYLAB_WORKSHOP_FILE", str(tmp_path / "none.ini"))
    for name in ("DELIVERYLAB_BROKER", "DELIVERYLAB_KAFKA_USER", "DELIVERYLAB_KAFKA_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    own = Lesson("00-setup-and-tour", "ada", settings().bootstrap, tmp_path)
    assert own.login == {} and own.spark_login == {}  # notebooks pass them along unchanged: no option at all
    monkeypatch.setenv("DELIVERYLAB_BROKER", "10.0.0.5:9092")
    monkeypatch.setenv("DELIVERYLAB_KAFKA_PASSWORD", "pw")
    monkeypatch.setenv("DELIVERYLAB_LEARNER", "ada")
    shared = Lesson("00-setup-and-tour", "ada", "10.0.0.5:9092", tmp_path)
    assert shared.login["security_protocol"] == "SASL_PLAINTEXT" and shared.login["sasl_plain_username"] == "ada"
    assert shared.spark_login["kafka.sasl.mechanism"] == "SCRAM-SHA-512"


def test_follow_up_events_change_orders_later_or_arrive_stale_and_never_tie():
    import random

    from deliverylab import ledger
    from deliverylab.orders import follow_up_events, generate_orders

    for seed in range(40):
        rng = random.Random(seed)
        orders = generate_orders(30, seed=seed)
        extra = follow_up_events(orders, rng, count=12)
        assert len(extra) == 12 and {e["order_id"] for e in extra} <= {o["order_id"] for o in orders}
        by_id = {o["order_id"]: o for o in orders}
        assert all(e["event_time"] != by_id[e["order_id"]]["event_time"] for e in extra)
        final = ledger.final_states(orders + extra)
        for e in extra:  # a stale event loses, a later one wins, whichever arrives last
            first = by_id[e["order_id"]]
            winner = e if e["event_time"] > first["event_time"] else first
            assert final[e["order_id"]] == (ledger.to_amount(winner["amount"]), winner["status"])
