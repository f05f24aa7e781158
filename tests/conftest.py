"""Shared fixtures. Tests marked `stack` use the real broker and real Spark."""
import pytest


@pytest.fixture(scope="session")
def broker_up():
    """The course's real broker, started if needed (idempotent)."""
    from deliverylab.stack import broker

    return broker.up(log=lambda msg: None)


@pytest.fixture(scope="session")
def spark(broker_up):
    from deliverylab.stack.session import get_spark

    return get_spark("tests")
