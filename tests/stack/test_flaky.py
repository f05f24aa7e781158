"""A lost produce reply, on the real broker: a retry duplicates, unless the producer is idempotent."""
import json
import socket
import threading
import time
from collections import Counter

import pytest

from deliverylab import CourseError, ledger
from deliverylab.stack import flaky, kafka

pytestmark = pytest.mark.stack


@pytest.fixture
def own_proxy_port(tmp_path, monkeypatch):
    """A port and state of their own, so these tests never meet the suite's proxy (controller port + 2)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    monkeypatch.setenv("DELIVERYLAB_CONTROLLER_PORT", str(free - 2))
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    return free


def test_a_second_proxy_waits_for_the_first_then_listens(own_proxy_port):
    events = []
    with flaky.FlakyNetwork() as first:
        assert first.listen_port == own_proxy_port

        def second():
            with flaky.FlakyNetwork():
                events.append("second listening")

        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.5)
        events.append("first done")
    thread.join(10)
    assert events == ["first done", "second listening"]


def test_a_proxy_held_too_long_is_named(own_proxy_port):
    with flaky.FlakyNetwork():
        waiting = flaky.FlakyNetwork()
        waiting.wait_seconds = 0.3
        with pytest.raises(CourseError, match="Another notebook or test of this course has used the flaky"):
            waiting.__enter__()
    with flaky.FlakyNetwork():  # the failed attempt left nothing locked
        pass


def test_a_port_taken_outside_the_course_says_so(own_proxy_port):
    with socket.socket() as other:
        other.bind(("127.0.0.1", own_proxy_port))
        other.listen()
        with pytest.raises(CourseError, match="in use by a program outside this course"):
            flaky.FlakyNetwork().__enter__()
    with flaky.FlakyNetwork():  # nor did this one
        pass


@pytest.fixture
def only_the_proxy_port_counts(own_proxy_port, monkeypatch):
    """doctor.check_ports with the broker's ports free, so only the proxy's port can make it fail."""
    from deliverylab import doctor
    real = doctor.broker.port_is_free
    monkeypatch.setattr(doctor.broker, "port_is_free", lambda port: real(port) if port == own_proxy_port else True)
    monkeypatch.setattr(doctor.broker, "status", lambda *a: type("Stopped", (), {"running": False})())
    return doctor.check_ports


def test_doctor_counts_a_running_demo_proxy_as_the_course_own(only_the_proxy_port_counts, own_proxy_port):
    # a lesson's demo holding the proxy while lesson 00 runs its checks (two notebooks at a time under nbval)
    with flaky.FlakyNetwork():
        finding = only_the_proxy_port_counts()
    assert finding.ok, finding.detail
    assert "flaky-network demo is using it now" in finding.detail
    assert only_the_proxy_port_counts().ok


def test_doctor_names_a_program_outside_the_course_on_the_proxy_port(only_the_proxy_port_counts, own_proxy_port):
    with socket.socket() as other:
        other.bind(("127.0.0.1", own_proxy_port))
        other.listen()
        finding = only_the_proxy_port_counts()
    assert not finding.ok
    assert f"{own_proxy_port} in use by another program" in finding.detail


def test_frames_are_split_on_their_size_prefix():
    frame = (6).to_bytes(4, "big") + b"abcdef"
    frames, rest = flaky._split_frames(frame + frame[:7])
    assert frames == [frame] and rest == frame[:7]


@pytest.mark.parametrize("idempotent, copies", [(False, 2), (True, 1)])
def test_a_retry_after_a_lost_reply(broker_up, idempotent, copies):
    from kafka import KafkaProducer

    import deliverylab

    lesson = deliverylab.setup("test-flaky", quiet=True)
    topic = lesson.topic(f"retry-{idempotent}")
    kafka.ensure_topic(lesson.bootstrap, topic)
    with flaky.FlakyNetwork() as net:
        producer = KafkaProducer(bootstrap_servers=net.bootstrap, enable_idempotence=idempotent, acks="all",
                                 retries=5, max_in_flight_requests_per_connection=1, request_timeout_ms=5000)
        try:
            producer.send(topic, b'{"order_id": "o-0", "amount": "1.00"}').get(10)  # connected, metadata known
            net.lose_produce_replies(1)
            producer.send(topic, json.dumps({"order_id": "o-1", "amount": "2.00"}).encode()).get(30)
        finally:
            producer.close()
        assert net.lost_replies == 1
    found = Counter(order_id for order_id, _ in ledger.read_kafka_topic(lesson.bootstrap, topic))
    assert found == {"o-0": 1, "o-1": copies}
