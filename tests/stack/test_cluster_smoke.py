"""The cluster smoke: cluster up, one real Kafka -> Delta micro-batch on its executors, cluster down."""
import pytest

from deliverylab import cluster_smoke
from deliverylab.stack import cluster

pytestmark = pytest.mark.stack


def test_one_micro_batch_runs_on_the_clusters_executors(broker_up, spark_cluster):
    figures = cluster_smoke.run(orders=200, log=lambda m: None)
    print({k: figures.get(k) for k in ("cluster_up_s", "session_s", "total_s", "smoke_s")})
    assert figures["master"] == cluster.master_url()
    assert figures["executors"] >= 1 and figures["executor_folders"] >= 1  # tasks ran outside the driver
    assert figures["batch_id"] == 0 and figures["rows"] == figures["distinct"] == 200
    assert figures["ok"]
    assert cluster.status().ready  # a cluster that was up before the smoke is left up
