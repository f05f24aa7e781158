"""The three-broker Kafka cluster's settings and commands, without starting a JVM."""
import socket

import pytest

from deliverylab import config
from deliverylab.__main__ import build_parser, main
from deliverylab.config import CourseError
from deliverylab.stack import broker, brokers


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_each_node_is_a_combined_node_with_its_own_id_ports_and_storage(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    s = config.settings()
    nodes = [_props(brokers.server_properties(s, n)) for n in (1, 2, 3)]
    assert [p["node.id"] for p in nodes] == ["1", "2", "3"]
    assert nodes[1]["listeners"] == "PLAINTEXT://127.0.0.1:9202,CONTROLLER://127.0.0.1:9203"
    assert nodes[1]["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9202"
    assert {p["controller.quorum.voters"] for p in nodes} == {
        "1@127.0.0.1:9193,2@127.0.0.1:9203,3@127.0.0.1:9213"}
    assert len({p["log.dirs"] for p in nodes}) == 3 and str(tmp_path) in nodes[2]["log.dirs"]
    for p in nodes:
        assert p["process.roles"] == "broker,controller" and "0.0.0.0" not in str(p)
        assert "controller.quorum.bootstrap.servers" not in p and "FLAKY" not in p["listeners"]


def test_replication_is_three_with_two_in_sync(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    p = _props(brokers.server_properties(config.settings(), 1))
    assert p["default.replication.factor"] == "3" and p["min.insync.replicas"] == "2"
    assert p["offsets.topic.replication.factor"] == "3" and p["transaction.state.log.replication.factor"] == "3"
    assert p["transaction.state.log.min.isr"] == "2" and p["unclean.leader.election.enable"] == "false"


def test_the_single_brokers_other_settings_are_reused_unchanged():
    s = config.settings()
    single = _props(broker.server_properties(s))
    node = _props(brokers.server_properties(s, 3))
    for key in ("num.partitions", "auto.create.topics.enable", "group.initial.rebalance.delay.ms",
                "offsets.topic.num.partitions", "inter.broker.listener.name", "controller.listener.names"):
        assert node[key] == single[key]
    assert single["node.id"] == "1" and single["offsets.topic.replication.factor"] == "1"  # the single path as it was


def test_the_bootstrap_list_is_what_the_shared_broker_setting_takes(monkeypatch):
    assert brokers.bootstrap() == "127.0.0.1:9192,127.0.0.1:9202,127.0.0.1:9212"
    monkeypatch.setenv("DELIVERYLAB_BROKER", brokers.bootstrap())
    assert config.settings().bootstrap == brokers.bootstrap() and config.settings().shared
    monkeypatch.setenv("DELIVERYLAB_CLUSTER_KAFKA_PORT", "19192")
    assert brokers.bootstrap() == "127.0.0.1:19192,127.0.0.1:19202,127.0.0.1:19212"


def test_a_taken_port_is_reported_with_the_fix(monkeypatch, tmp_path):
    with socket.socket() as other_program:
        other_program.bind(("127.0.0.1", 0))
        other_program.listen()
        port = other_program.getsockname()[1]
        monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
        monkeypatch.setenv("DELIVERYLAB_CLUSTER_KAFKA_PORT", str(port))
        with pytest.raises(CourseError) as err:
            brokers.up(log=lambda m: None)
    assert f"Port {port}" in str(err.value) and "DELIVERYLAB_CLUSTER_KAFKA_PORT" in str(err.value)


def test_nothing_runs_in_an_empty_state_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    assert not brokers.status().running and brokers.status().line().startswith("kafka cluster: stopped")
    assert brokers.down(log=lambda m: None) is False
    with pytest.raises(CourseError, match="Broker 2 of the Kafka cluster is not running"):
        brokers.kill_broker(2, log=lambda m: None)
    with pytest.raises(CourseError, match="no broker 4"):
        brokers.kill_broker(4, log=lambda m: None)


def test_the_cli_takes_brokers_and_a_node(capsys):
    args = build_parser().parse_args(["stack", "kill-broker", "2"])
    assert args.action == "kill-broker" and args.node == 2
    args = build_parser().parse_args(["stack", "up", "--brokers", "3"])
    assert args.brokers == 3 and args.node is None
    assert build_parser().parse_args(["stack", "reset", "--all-learners"]).all_learners  # the old forms still parse
    assert main(["stack", "up", "--brokers", "2"]) == 2
    assert main(["stack", "restart-broker"]) == 2
    assert "needs the broker's number" in capsys.readouterr().err


def test_stack_down_also_stops_both_clusters(monkeypatch, capsys):
    """`stack down` (and so `make stop`) stops the Spark cluster and the three-broker cluster when they run."""
    from deliverylab.stack import cluster, processes

    calls = []
    monkeypatch.setattr(processes, "stop_course_processes", lambda state: 0)
    monkeypatch.setattr(cluster, "down", lambda log=print: calls.append("spark") or True)
    monkeypatch.setattr(brokers, "down", lambda log=print: calls.append("kafka") or True)
    monkeypatch.setattr(broker, "down", lambda log=print: calls.append("broker") or False)
    monkeypatch.delenv("DELIVERYLAB_BROKER", raising=False)
    assert main(["stack", "down"]) == 0
    out = capsys.readouterr().out
    assert calls == ["spark", "kafka", "broker"]
    assert "spark cluster: stopped" in out and "kafka cluster: stopped" in out and "broker: not running" in out
