"""A lost produce reply, on the real broker: a retry duplicates, unless the producer is idempotent."""
import json
from collections import Counter

import pytest

from deliverylab import ledger
from deliverylab.stack import flaky, kafka

pytestmark = pytest.mark.stack


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
