"""The class archive holds what the crash lab's drivers load: Kafka's client and Delta come from it."""
import subprocess
import sys

import pytest

from deliverylab.config import settings
from deliverylab.stack import classarchive, kafka

pytestmark = pytest.mark.stack

#: A driver's first work, in a JVM that logs where each class came from.
DRIVER_LIKE = """
import sys
from deliverylab.stack.session import get_spark, spark_conf
log, bootstrap, topic, scratch = sys.argv[1:]
options = spark_conf()["spark.driver.extraJavaOptions"] + f" -Xlog:class+load=info:file={log}"
spark = get_spark("archive-check", extra_conf={"spark.driver.extraJavaOptions": options})
rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
        .option("startingOffsets", "earliest").load())
rows.selectExpr("CAST(value AS STRING) AS value").write.format("delta").save(scratch)
print(spark.read.format("delta").load(scratch).count())
"""


def test_a_driver_maps_kafka_and_delta_classes_from_the_archive(broker_up, tmp_path):
    from kafka import KafkaProducer

    assert classarchive.path().exists(), "run `make setup` first: it records the archive"
    topic = settings().lesson_prefix("test-classarchive") + "orders"  # the course's topic names
    kafka.ensure_topic(broker_up.bootstrap, topic, partitions=1)
    producer = KafkaProducer(bootstrap_servers=broker_up.bootstrap)
    producer.send(topic, b'{"order_id": "o-1"}').get(10)
    producer.close()
    log = tmp_path / "classes.log"
    out = subprocess.run([sys.executable, "-c", DRIVER_LIKE, str(log), broker_up.bootstrap, topic,
                          str(tmp_path / "delta")], capture_output=True, text=True, timeout=300)
    kafka.delete_topics(broker_up.bootstrap, [topic])
    assert out.returncode == 0 and out.stdout.strip().endswith("1"), out.stderr[-2000:]
    lines = log.read_text().splitlines()

    def source(cls):
        found = [line for line in lines if f" {cls} source: " in line]
        assert found, f"{cls} was never loaded"
        return found[0].split(" source: ")[1]

    for cls in ("org.apache.kafka.clients.consumer.KafkaConsumer", "org.apache.spark.sql.kafka010.KafkaSourceProvider",
                "org.apache.spark.sql.delta.DeltaLog"):
        assert source(cls) == "shared objects file (top)", (cls, source(cls))
    from_kafka_jar = [line for line in lines if "kafka-clients" in line.split(" source: ")[-1]]
    assert len(from_kafka_jar) < 100, f"{len(from_kafka_jar)} classes of Kafka's client read from its jar"


@pytest.mark.parametrize("problem", ["recording_times_out", "topic_cannot_be_created"])
def test_a_recording_that_fails_leaves_spark_to_start_without_an_archive(monkeypatch, tmp_path, problem):
    from types import SimpleNamespace

    from deliverylab.config import CourseError

    fake = SimpleNamespace(jars=tmp_path, state=tmp_path, lesson_prefix=lambda name: f"t-{name}-")
    monkeypatch.setattr(classarchive, "settings", lambda: fake)  # never the real archive's folder
    monkeypatch.setattr(classarchive, "path", lambda: tmp_path / "spark-classes-test.jsa")
    monkeypatch.setattr(classarchive, "_a_broker", lambda log: ("127.0.0.1:1", False))
    monkeypatch.setattr(kafka, "delete_topics", lambda *args: None)

    def no_topic(*args, **kwargs):
        raise CourseError("the broker did not answer")

    def too_slow(options, scratch, bootstrap, topic, archive, log):  # the recording's process outlived its limit
        raise subprocess.TimeoutExpired(["python", "-c", "RECORDING"], classarchive.RECORDING_TIMEOUT_S)

    monkeypatch.setattr(kafka, "ensure_topic", no_topic if problem == "topic_cannot_be_created" else lambda *a, **k: None)
    monkeypatch.setattr(classarchive, "_record", too_slow)
    said = []
    assert classarchive.build(log=said.append) is None
    assert "Spark will start without it" in said[-1]
    assert ("TimeoutExpired" if problem == "recording_times_out" else "the broker did not answer") in said[-1]
    assert not (tmp_path / "spark-classes-test.jsa").exists()
