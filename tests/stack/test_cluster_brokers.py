"""The three-broker Kafka cluster, for real: up, replicated topics, a leader killed mid-stream, back, down."""
import time

import pytest

from deliverylab import config
from deliverylab.stack import brokers, kafka

pytestmark = [pytest.mark.stack, pytest.mark.cluster]


@pytest.fixture
def topic(kafka_cluster):
    name = config.settings().learner_prefix() + f"cluster-test.t{time.monotonic_ns()}"
    assert kafka.ensure_topic(brokers.bootstrap(), name)  # as every lesson creates its topics
    yield name
    kafka.delete_topics(brokers.bootstrap(), [name])


def _partitions(topic: str) -> list[dict]:
    with kafka.admin(brokers.bootstrap()) as client:
        return sorted(client.describe_topics([topic])[0]["partitions"], key=lambda p: p["partition_index"])


def test_up_is_idempotent_and_lists_three_brokers(kafka_cluster):
    assert kafka_cluster.ready and kafka_cluster.live == {1, 2, 3}
    before = brokers.status()  # not the fixture's snapshot: other cluster tests kill and restart brokers
    again = brokers.up(log=lambda m: None)
    assert again.pids == before.pids and again.live == {1, 2, 3}


def test_a_topic_gets_three_replicas_by_default(topic):
    for p in _partitions(topic):
        assert sorted(p["replica_nodes"]) == [1, 2, 3] and sorted(p["isr_nodes"]) == [1, 2, 3]


def test_a_killed_leader_loses_nothing_with_acks_all_and_comes_back(topic):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=brokers.bootstrap(), acks="all", enable_idempotence=True,
                             retries=2**31 - 1, request_timeout_ms=5000, delivery_timeout_ms=60000)
    for i in range(200):
        producer.send(topic, key=f"o-{i}".encode(), value=b"x", partition=0)
    producer.flush()
    leader = brokers.leader(topic, 0)
    assert leader == _partitions(topic)[0]["leader_id"]
    brokers.kill_broker(leader, log=lambda m: None)
    for i in range(200, 400):
        producer.send(topic, key=f"o-{i}".encode(), value=b"x", partition=0)
    producer.flush()
    producer.close()
    after = _partitions(topic)[0]
    assert after["leader_id"] not in (leader, -1) and brokers.leader(topic, 0) == after["leader_id"]
    end = kafka.end_offsets(brokers.bootstrap(), topic)[0]
    keys = [r.key.decode() for r in kafka.read_range(brokers.bootstrap(), topic, {0: (0, end)})]
    assert len(keys) == 400 and len(set(keys)) == 400  # none lost, none twice
    back = brokers.restart_broker(leader, log=lambda m: None)
    assert back.ready and back.pids[leader] is not None
    deadline = time.monotonic() + 60
    while sorted(_partitions(topic)[0]["isr_nodes"]) != [1, 2, 3] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert sorted(_partitions(topic)[0]["isr_nodes"]) == [1, 2, 3]  # the restarted broker caught up
