"""Every kind of exactly-once sink, crashed on the clusters: a chaos run of driver crashes on the Spark
standalone cluster, reading from the three-broker Kafka cluster while the leader of its topic's
partition 0 is killed and brought back. The verdict must stay exactly-once (make test-cluster)."""
import threading
import time

import pytest

import deliverylab
from deliverylab.crashlab import chaos
from deliverylab.stack import brokers, cluster, kafka

pytestmark = [pytest.mark.stack, pytest.mark.cluster]

#: one exactly-once variant per way of being exactly-once (crashlab/variants.py)
VARIANTS = ["delta_sink", "file_sink", "delta_txn", "delta_merge", "sqlite_upsert", "control_table_atomic",
            "two_phase_commit"]


@pytest.fixture(scope="module")
def on_the_clusters(spark_cluster, kafka_cluster):
    patch = pytest.MonkeyPatch()
    patch.setenv("DELIVERYLAB_SPARK_MASTER", cluster.master_url())
    patch.setenv("DELIVERYLAB_BROKER", brokers.bootstrap())
    yield
    patch.undo()


class LeaderKiller(threading.Thread):
    """Kill the leader of partition 0 of ``topic`` once the topic has records, and restart it ``down_s`` later."""

    def __init__(self, topic: str, down_s: float = 8.0, timeout_s: float = 120):
        super().__init__(daemon=True)
        self.topic, self.down_s, self.timeout_s = topic, down_s, timeout_s
        self.killed: int | None = None
        self.error: Exception | None = None

    def run(self):
        try:
            deadline = time.monotonic() + self.timeout_s
            while time.monotonic() < deadline:
                names = kafka.topics(brokers.bootstrap(), prefix=self.topic) or []
                if self.topic in names and sum(kafka.end_offsets(brokers.bootstrap(), self.topic).values()) > 0:
                    break
                time.sleep(0.5)
            time.sleep(2)  # a batch or two into the run
            self.killed = brokers.leader(self.topic, 0)
            brokers.kill_broker(self.killed, log=lambda m: None)
            time.sleep(self.down_s)
            brokers.restart_broker(self.killed, log=lambda m: None)
        except Exception as error:  # noqa: BLE001 - reported by the test
            self.error = error


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_exactly_once_variant_stays_exactly_once_through_crashes_and_a_broker_kill(on_the_clusters, variant):
    lesson = deliverylab.setup(f"test-cluster-chaos-{variant.replace('_', '-')}", quiet=True)
    killer = LeaderKiller(lesson.topic(f"chaos-{variant}-orders"))
    killer.start()
    try:
        result = chaos.run_chaos(lesson, variant, plan=["after_sink_write", "now", "mid_sink_write"], orders=300,
                                 max_per_batch=100)
    finally:
        killer.join(timeout=180)
        lesson.cleanup()
    assert killer.error is None and killer.killed is not None, f"the broker kill did not happen: {killer.error}"
    assert brokers.status().ready, "the killed broker did not come back"
    assert result["verdict"] == "exactly-once", result["verdict_line"]
    assert result["ledger"]["lost"] == 0 and result["ledger"]["duplicated"] == 0
    assert [c["by_sigkill"] for c in result["crashes"]] == [True, True, True]
