import socket
import uuid

import pytest

from deliverylab import config
from deliverylab.stack import broker, kafka
from deliverylab.config import CourseError


def test_server_properties_are_single_node_and_loopback_only():
    props = broker.server_properties(config.settings())
    assert "listeners=PLAINTEXT://127.0.0.1:" in props
    assert "0.0.0.0" not in props
    for line in ("transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
                 "offsets.topic.replication.factor=1", "group.initial.rebalance.delay.ms=0",
                 "process.roles=broker,controller"):
        assert line in props


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch):
    # kafka-storage format -t -Xyz... fails: its parser reads "-Xyz..." as an option (seen in a fresh setup)
    draws = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=bytes(16))])
    monkeypatch.setattr(broker.uuid, "uuid4", lambda: next(draws))
    assert broker.new_cluster_id() == "AAAAAAAAAAAAAAAAAAAAAA"
    assert next(draws, None) is None  # the first draw, "-AAA...", was refused


def test_a_port_taken_by_another_program_is_reported_with_the_fix(monkeypatch, tmp_path):
    with socket.socket() as other_program:
        other_program.bind(("127.0.0.1", 0))
        other_program.listen()
        port = other_program.getsockname()[1]
        monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))  # a state folder with no broker of ours
        monkeypatch.setenv("DELIVERYLAB_KAFKA_PORT", str(port))
        with pytest.raises(CourseError) as err:
            broker.up(log=lambda m: None)
    assert f"Port {port}" in str(err.value) and "DELIVERYLAB_KAFKA_PORT" in str(err.value)


@pytest.mark.stack
def test_up_is_idempotent_and_the_broker_answers(broker_up):
    first = broker.up(log=lambda m: None)
    again = broker.up(log=lambda m: None)
    assert first.pid == again.pid and again.answering


@pytest.fixture
def own_broker(monkeypatch, tmp_path):
    """A broker of this test's own (its storage, its two ports), so stopping it disturbs no other test."""
    monkeypatch.setenv("DELIVERYLAB_JARS", str(config.settings().jars))
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path / "state"))
    # two ports below Linux's ephemeral range (32768 and up): a port the kernel handed out to probe
    # (bind to port 0) can be given to a client's outgoing connection before the broker binds it
    kafka_port, controller_port = [p for p in range(19610, 19700) if broker.port_is_free(p)][:2]
    monkeypatch.setenv("DELIVERYLAB_KAFKA_PORT", str(kafka_port))
    monkeypatch.setenv("DELIVERYLAB_CONTROLLER_PORT", str(controller_port))
    yield broker.up(log=lambda m: None)
    broker.down(log=lambda m: None)


@pytest.mark.stack
def test_down_stops_it_and_up_brings_it_back(own_broker):
    assert own_broker.answering and own_broker.bootstrap != "127.0.0.1:9092"
    assert broker.down(log=lambda m: None) is True
    st = broker.status()
    assert not st.running and not kafka.answers(st.bootstrap, timeout_s=1)
    assert broker.require_running.__doc__
    with pytest.raises(CourseError, match="stack up"):
        broker.require_running()
    assert broker.up(log=lambda m: None).answering
