"""Results reach the class board only in shared-broker mode, never break a lesson, never wait for it."""
import threading
import warnings

import pytest

from deliverylab import ledger, progress
from deliverylab.checks import Checks
from deliverylab.workshop import events, presence


@pytest.fixture
def shared(monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_BROKER", "class-pc:9092")


def test_nothing_is_sent_without_a_shared_broker(sent):
    events.set_current_lesson("01-three-guarantees")
    progress.record_check("01-three-guarantees-lab", "a check")
    ledger.reconcile([("a", 1)], [("a", 1)]).verdict_line()
    assert presence.announce("01-three-guarantees") is None
    events.flush(2)
    assert sent == [] and events._senders == {}


def test_nothing_is_sent_to_the_courses_own_kafka_cluster(sent, monkeypatch):
    """Lesson 09 points DELIVERYLAB_BROKER at the three-broker cluster on this machine: no workshop there,
    so no class board (a broker killed by the lesson made every result warn that the board missed it)."""
    from deliverylab.stack import brokers

    monkeypatch.setenv("DELIVERYLAB_BROKER", brokers.bootstrap())
    events.set_current_lesson("09-beyond-the-driver")
    progress.record_check("09-beyond-the-driver-lab", "a check")
    events.flush(2)
    assert not events.enabled() and sent == [] and events._senders == {}


def test_progress_goes_out_as_a_snapshot_of_the_module(shared, sent):
    progress.record_check("01-three-guarantees-lab", "first")
    progress.record_check("01-three-guarantees-lab", "second")
    progress.record_quiz("01-three-guarantees", 4, 5)
    assert events.flush(5)
    last = sent[-1]
    assert last["kind"] == "progress" and last["module"] == "01-three-guarantees"
    assert last["checks_passed"] == 2 and last["quiz"] == [4, 5] and last["lesson_complete"] is False
    assert last["learner"] == progress.settings().learner and last["machine"] == events.machine_id()


def test_check_results_and_verdicts_go_out_once_per_change(shared, sent):
    events.set_current_lesson("03-at-most-once-lab")
    checks = Checks("03-at-most-once-lab")
    checks.equal("the answer", lambda: 41, 42, hint="count again")
    result = ledger.reconcile([("a", 1), ("b", 2)], [("a", 1)])
    for _ in range(3):
        result.verdict_line()  # a repr, a summary, a print: one event
    assert events.flush(5)
    kinds = [(item["kind"], item.get("status") or item.get("verdict")) for item in sent]
    assert ("check", "FAIL") in kinds and kinds.count(("verdict", "at-most-once")) == 1
    verdict = next(item for item in sent if item["kind"] == "verdict")
    assert (verdict["produced"], verdict["lost"], verdict["duplicated"]) == (2, 1, 0)
    assert verdict["module"] == "03-at-most-once" and verdict["lesson"] == "03-at-most-once-lab"


def test_a_broker_that_fails_costs_one_warning_and_no_time(shared, monkeypatch):
    """The sends run on the events' own thread, so a broker that fails never holds up the learner's cell
    (whatever the machine's speed); one warning says so, and sends within the back-off are not even tried."""
    tried_on = []

    def broken(sender, item):
        tried_on.append(threading.current_thread().name)
        raise ConnectionError("no route to host")

    monkeypatch.setattr(events, "_send_one", broken)
    progress.record_lesson_complete("00-setup-and-tour")  # sent in the background: fails there
    assert events.flush(60)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        progress.record_lesson_complete("00-setup-and-tour")  # the next result reports the failure
        events.flush(60)
        progress.record_lesson_complete("00-setup-and-tour")  # inside the back-off: dropped quietly
        events.flush(60)
    assert tried_on == ["class-board-events"]  # once, and never on the caller's thread
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "no route to host" in messages[0] and "saved on this machine" in messages[0]
    assert progress.lesson_complete("00-setup-and-tour")  # progress itself was recorded every time
