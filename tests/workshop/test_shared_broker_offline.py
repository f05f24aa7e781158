"""In shared-broker mode the course never starts, stops or wipes a broker, and refuses to reset others' data."""
import socket
from pathlib import Path

import pytest

from deliverylab import config, doctor, lesson
from deliverylab.config import CourseError
from deliverylab.stack import broker


@pytest.fixture
def closed_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once the probe is closed


@pytest.fixture
def unreachable(monkeypatch, closed_port):
    address = f"127.0.0.1:{closed_port}"
    monkeypatch.setenv("DELIVERYLAB_BROKER", address)
    return address


def test_an_unreachable_instructor_broker_is_named_and_nothing_starts(unreachable):
    with pytest.raises(CourseError) as error:
        lesson.setup("test-shared-offline", quiet=True)
    message = str(error.value)
    assert unreachable in message and "DELIVERYLAB_BROKER" in message and "instructor" in message
    assert not (config.settings().kafka_dir / "broker.pid").exists()  # no local broker was started
    with pytest.raises(CourseError, match=unreachable):
        broker.require_running()


def test_down_and_wipe_leave_a_shared_broker_alone(unreachable):
    said = []
    assert broker.down(log=said.append) is False
    assert "stops nothing" in said[0]
    with pytest.raises(CourseError, match="only its owner can wipe"):
        broker.wipe(log=said.append)


def test_status_and_doctor_say_which_broker_is_used(unreachable):
    status = broker.status()
    assert status.shared_by == "DELIVERYLAB_BROKER" and not status.answering
    assert f"shared broker at {unreachable}" in status.line()
    finding = doctor.check_broker()
    assert not finding.ok and unreachable in finding.detail


def test_a_reset_of_other_learners_data_is_refused(unreachable):
    with pytest.raises(CourseError, match="Refused: xo.\\* is not yours"):
        lesson.reset(all_learners=True, log=lambda m: None)
    with pytest.raises(CourseError, match="Refused: xo.bob.\\* is not yours"):
        lesson.reset(learner="bob", log=lambda m: None)
    someone_else = lesson.Lesson(name="test-shared-offline", learner="bob", bootstrap=unreachable,
                                 folder=Path(config.settings().lessons_dir / "bob" / "test-shared-offline"))
    with pytest.raises(CourseError, match="Refused: xo.bob.test-shared-offline.\\* is not yours"):
        someone_else.reset(log=lambda m: None)
