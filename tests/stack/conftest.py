"""Fixtures of the cluster tests (tests/stack/test_cluster*.py): each cluster is started once per test run,
and stopped at the end if the run started it (one left running by `cluster up` is left running). And the class
broker with logins of tests/stack/test_class_broker*.py: one per test module that asks for it."""
import os

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


class Room:
    """The class broker of tests/stack/test_class_broker*.py: its address, the passwords it issued, its folder."""
    def __init__(self, bootstrap: str, passwords: dict[str, str], state):
        self.bootstrap, self.passwords, self.state = bootstrap, passwords, state

    def login(self, name: str):
        from deliverylab.config import KafkaLogin

        return KafkaLogin(self.bootstrap, name, self.passwords[name])


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """A class broker with logins for ada and bob (stack/classbroker.py), from the course's jars, on ports of its
    own (never the course broker's 9092-9095) and in a state folder of its own, for the module's tests."""
    from deliverylab import config
    from deliverylab.stack import broker, classauth, classbroker

    folder = tmp_path_factory.mktemp("class-broker")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DELIVERYLAB_JARS", str(config.settings().jars))
        mp.setenv("DELIVERYLAB_STATE", str(folder / "state"))
        mp.setenv("DELIVERYLAB_WORKSHOP_FILE", str(folder / "workshop.ini"))
        for name in ("DELIVERYLAB_BROKER", "DELIVERYLAB_KAFKA_USER", "DELIVERYLAB_KAFKA_PASSWORD", "DELIVERYLAB_LEARNER"):
            mp.delenv(name, raising=False)
        # below Linux's ephemeral range, above the stop/start test's 19610-19699 (tests/stack/test_broker.py); each
        # pytest-xdist worker searches a range of its own, so two test files starting a room at once never pick the
        # same free ports
        worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
        first = 19720 + 90 * (worker % 3)
        base = next(p for p in [*range(first, first + 90, 10), *range(19720, 19990, 10)]
                    if all(broker.port_is_free(q) for q in classbroker.Ports(p).bound()))
        mp.setenv("DELIVERYLAB_CLASS_PORT", str(base))
        roster = folder / "class.txt"
        roster.write_text("# the room\nada\nbob\n")
        classbroker.up(roster, log=lambda m: None)
        passwords = classauth.read_passwords(classbroker.paths(config.settings())["passwords"])
        try:
            yield Room(f"127.0.0.1:{base}", passwords, folder)
        finally:
            classbroker.down(log=lambda m: None)


@pytest.fixture
def as_learner(room, monkeypatch):
    """The course's own settings log in as ``name`` on the class broker (as workshop.ini would)."""
    def use(name: str) -> None:
        monkeypatch.setenv("DELIVERYLAB_BROKER", room.bootstrap)
        monkeypatch.setenv("DELIVERYLAB_LEARNER", name)
        monkeypatch.setenv("DELIVERYLAB_KAFKA_USER", name)
        monkeypatch.setenv("DELIVERYLAB_KAFKA_PASSWORD", room.passwords[name])
    return use
