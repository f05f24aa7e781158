"""Fixtures of the cluster tests (tests/stack/test_cluster*.py): each cluster is started once per test run,
and stopped at the end if the run started it (one left running by `cluster up` is left running)."""
import pytest


@pytest.fixture(scope="session")
def spark_cluster():
    """The local Spark standalone cluster (stack/cluster.py), up with both workers ALIVE."""
    from deliverylab.stack import cluster

    was_up = cluster.status().ready
    st = cluster.up(log=lambda m: None)
    yield st
    if not was_up:
        cluster.down(log=lambda m: None)


@pytest.fixture(scope="session")
def kafka_cluster():
    """The three-broker Kafka cluster (stack/brokers.py), every broker in the cluster's metadata."""
    from deliverylab.stack import brokers

    was_up = brokers.status().ready
    st = brokers.up(log=lambda m: None)
    yield st
    if not was_up:
        brokers.down(log=lambda m: None)
