"""The crash lab's Spark Kafka source and sink on the class broker with logins (issue 25), for real.

The course's settings log in as ada, as ``workshop join`` leaves them (DELIVERYLAB_BROKER, _LEARNER,
_KAFKA_USER, _KAFKA_PASSWORD; tests/stack/conftest.py's ``room`` and ``as_learner``), and each lesson
is named as deliverylab.setup names it, so its topics, groups and transactional ids start with
xo.ada.<lesson>. A crash-lab driver (Spark's Kafka source and sink) reads that login from the environment
it inherits, across a SIGKILL and a restart. Bob, on ada's lesson, is refused in one line. The lessons'
other Kafka paths (lesson 01's consumer processes, lesson 04's producer through the flaky-network proxy,
lesson 06's transactional relay) are run as ada by ``make test`` itself: lessons 01, 04 and 06 run under
nbval on a class broker with logins (stack/classrun.py).
"""
from __future__ import annotations

import pytest

from deliverylab import crashlab
from deliverylab.config import CourseError
from deliverylab.crashlab import drivers
from deliverylab.lesson import Lesson
from deliverylab.modules import m01

pytestmark = pytest.mark.stack


@pytest.fixture
def lesson_as(room, as_learner, monkeypatch, tmp_path):
    """``lesson_as(name, learner)``: the lesson as deliverylab.setup makes it for ``learner``, logged in as her,
    without the class board's hello (setup's, a thread of its own). The crash lab's drivers come from a pool of
    the test's own, so every driver starts with this login in its environment (a standby of an earlier test of
    this worker has none)."""
    made: list[Lesson] = []

    def make(name: str, learner: str = "ada") -> Lesson:
        as_learner(learner)
        folder = tmp_path / learner / name
        for sub in ("checkpoints", "tables"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        made.append(Lesson(name=name, learner=learner, bootstrap=room.bootstrap, folder=folder))
        return made[-1]

    monkeypatch.setenv("DELIVERYLAB_STANDBY_WARM_UP", "0")
    pool = drivers.DriverPool(tmp_path / "drivers")
    monkeypatch.setattr(drivers, "_pool", pool)
    yield make
    for lesson in made:
        lesson.cleanup()
    pool.shutdown()


def test_a_crash_lab_pipeline_reads_and_writes_kafka_with_adas_login_across_a_crash(lesson_as):
    lesson = lesson_as("04-at-least-once")
    pipe = crashlab.Pipeline(lesson, "kafka_sink", max_per_batch=100)
    assert pipe.topic.startswith("xo.ada.04-at-least-once.") and pipe.sink.startswith("xo.ada.04-at-least-once.")
    try:
        pipe.start()
        pipe.produce(150)
        pipe.drain()
        crash = pipe.crash("after_sink_write", orders=100)
        assert crash.by_sigkill
        pipe.restart()
        pipe.drain()
    finally:
        pipe.stop()
    ledger = pipe.ledger()  # Spark's Kafka sink, read back with ada's login
    assert ledger.lost == 0
    assert set(ledger.duplicated_ids) >= set(pipe.batch_orders(crash.batch, run=1))  # at-least-once: a replay


def test_bobs_consumer_process_on_adas_topic_is_refused_in_one_line(lesson_as):
    adas = lesson_as("01-three-guarantees")
    adas.produce_orders(20, progress=False)
    as_bob = lesson_as("01-three-guarantees", learner="bob")
    on_adas_topic = Lesson(name=adas.name, learner="ada", bootstrap=adas.bootstrap, folder=as_bob.folder)
    with pytest.raises(CourseError) as refused:
        m01.run_consumer("offsets_with_data", on_adas_topic, timeout_s=30)
    line = str(refused.value)
    assert "\n" not in line and line.startswith("the offsets_with_data consumer failed (exit code 2): Kafka refused")
    assert ("Kafka refused: bob may not read topic xo.ada.01-three-guarantees.orders (TOPIC_AUTHORIZATION_FAILED)"
            in line and "starts with xo.bob." in line), line
