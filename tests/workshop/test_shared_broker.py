"""Two learners, one broker: the running course broker plays the instructor's.

Both run the same lesson in shared-broker mode, each with a state folder of their own (their own
machine). Neither can touch the other's topics, a reset takes seconds and removes only its own
lesson, and the class board shows both.
"""
from __future__ import annotations

import uuid

import pytest

from deliverylab import ledger, lesson, progress
from deliverylab.config import CourseError, settings
from deliverylab.stack import kafka
from deliverylab.stack.classauth import board_topic
from deliverylab.workshop import board, events, feed, join

pytestmark = pytest.mark.stack

LESSON = "test-shared-lesson"


@pytest.fixture
def room(monkeypatch, tmp_path, broker_up):
    """``room(name)`` makes ``name`` the learner at the keyboard, on their own machine."""
    monkeypatch.setenv("DELIVERYLAB_BROKER", broker_up.bootstrap)

    def sit_down(name: str) -> None:
        monkeypatch.setenv("DELIVERYLAB_LEARNER", name)
        monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path / name))

    return sit_down


def ids() -> tuple[str, str]:
    run = uuid.uuid4().hex[:6]
    return f"test-ws-ada-{run}", f"test-ws-bob-{run}"


def test_two_learners_share_a_broker_without_touching_each_other(room, capsys):
    ada, bob = ids()
    room(ada)
    ada_lesson = lesson.setup(LESSON)
    assert "shared, set by DELIVERYLAB_BROKER" in capsys.readouterr().out
    ada_lesson.produce_orders(30, progress=False)
    kafka.ensure_topic(ada_lesson.bootstrap, ada_lesson.topic("payments"))
    room(bob)
    bob_lesson = lesson.setup(LESSON, quiet=True)
    bob_orders = bob_lesson.produce_orders(20, progress=False)
    (bob_lesson.folder / "tables" / "kept.txt").write_text("bob's table")
    ledger.reconcile(bob_orders, bob_orders[:15]).verdict_line()
    progress.record_lesson_complete(LESSON)
    assert ada_lesson.topic_prefix != bob_lesson.topic_prefix  # same lesson, two prefixes

    room(ada)
    said = []
    ada_lesson.reset(log=said.append)
    assert "deleted 2 topic(s)" in said[0]
    bootstrap = settings().bootstrap
    assert kafka.topics(bootstrap, prefix=ada_lesson.topic_prefix) == []
    assert kafka.topics(bootstrap, prefix=bob_lesson.topic_prefix) == [bob_lesson.topic("orders")]
    assert kafka.count_records(bootstrap, bob_lesson.topic("orders")) == 20
    assert (bob_lesson.folder / "tables" / "kept.txt").exists()
    with pytest.raises(CourseError, match="is not yours"):
        lesson.reset(learner=bob, log=said.append)
    with pytest.raises(CourseError, match="is not yours"):
        bob_lesson.reset(log=said.append)
    lesson.reset(log=said.append)  # all of ada's data: still nothing of bob's
    assert kafka.topics(bootstrap, prefix=bob_lesson.topic_prefix) == [bob_lesson.topic("orders")]
    assert kafka.topics(bootstrap, prefix=settings().learner_prefix(bob))

    assert events.flush(10)
    seen = board.Board()
    seen.add_all(feed.read_all_events(bootstrap, timeout_s=10))  # every learner's board topic
    assert {ada, bob} <= set(seen.learners)
    bob_cell = seen.learners[bob].modules[LESSON]
    assert bob_cell.lesson_complete and bob_cell.verdict == "at-most-once"
    assert board.main(["--once"]) == 0
    shown = capsys.readouterr().out
    assert ada in shown and bob in shown
    room(bob)
    lesson.reset(log=said.append)
    kafka.delete_topics(bootstrap, [board_topic(ada), board_topic(bob)])  # a reset never deletes them


def test_a_second_machine_with_the_same_id_gets_a_warning_at_setup(room, monkeypatch, capsys):
    ada, _ = ids()
    room(ada)
    this_machine = events.machine_id
    monkeypatch.setattr(events, "machine_id", lambda: "5e1f0e15e")  # another machine's id (hex, as machine_id's)
    lesson.setup(LESSON, quiet=True)  # another machine says hello as ada
    assert events.flush(10)
    monkeypatch.setattr(events, "machine_id", this_machine)  # back to this machine, same learner id
    lesson.setup(LESSON)
    out = capsys.readouterr().out
    assert "warning   another machine" in out and repr(ada) in out
    lesson.reset(log=lambda m: None)
    kafka.delete_topics(settings().bootstrap, [board_topic(ada)])


def test_join_writes_the_workshop_file_after_checking_the_broker(broker_up, capsys):
    with pytest.raises(CourseError, match="No Kafka broker answers at 127.0.0.1:1"):
        join.join("127.0.0.1:1", "ada")
    join.join(broker_up.bootstrap, "Ada Lovelace")
    s = settings()
    assert s.shared and s.bootstrap == broker_up.bootstrap and "workshop.ini" in s.shared_source
    join.leave()
    assert not settings().shared
