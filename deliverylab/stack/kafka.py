"""Kafka clients for the course's own bookkeeping: topics, offsets, groups, offset ranges.

Every admin client and every helper consumer of the package is built here, with the same
settings: no group unless one is asked for, no auto-commit, no topic auto-creation. On a class
broker with logins (stack/classauth.py) they log in with the learner's credential
(config.Settings.kafka_login, or a ``login=`` given), and a refusal is one CourseError line
(:func:`refusals`); on the course's own broker nothing of that applies. (The
consumers and producers that lessons study are written out in the lessons' own code; each is
built with :func:`client`, and each Spark Kafka source and sink takes :func:`spark_security`'s
options, so they log in the same way, in the notebook and in the processes it starts, which
read the same settings from the environment and the workshop file.)
"""
from __future__ import annotations

import contextlib
import logging
import re
import time
from typing import Iterator

from ..config import HOST, CourseError, KafkaLogin, settings as course_settings
from . import loginprobe
from .classauth import client_options, refusal_line, spark_options

CLIENT_ID = "deliverylab"
LOGIN_BOOTSTRAP_TIMEOUT_MS = 10000
#: how long a topic creation or deletion waits for a class broker's mutation quota (stack/classlimits.py) before
#: it says so: a lesson's own burst never waits, a loop of creations does
MUTATION_WAIT_S = 30


def login_for(bootstrap: str, login: KafkaLogin | None = None) -> KafkaLogin | None:
    """The login to use at ``bootstrap``: the one given, else the course's own when it is for that broker, or for
    the flaky-network proxy on this machine that forwards to that broker's FLAKY listener (stack/flaky.py)."""
    if login is not None:
        return login
    s = course_settings()
    found = s.kafka_login
    if found is None:
        return None
    return found if bootstrap in (found.broker, f"{HOST}:{s.flaky_proxy_port}") else None


# kafka-python warns "Exchanging credentials in the clear" at every SCRAM login: SCRAM sends a proof, never the
# password (RFC 5802), so the warning would only alarm a learner whose notebook shows it
logging.getLogger("kafka.net.sasl.scram").setLevel(logging.ERROR)


def security(bootstrap: str, login: KafkaLogin | None = None) -> dict[str, str]:
    """kafka-python keyword arguments that log in at ``bootstrap`` ({} on a broker without logins)."""
    return client_options(login_for(bootstrap, login))


def spark_security(bootstrap: str, login: KafkaLogin | None = None) -> dict[str, str]:
    """Options of Spark's Kafka source and sink that log in at ``bootstrap``: ``.options(**spark_security(b))``
    ({} on a broker without logins). Spark passes them to the consumers and producers it makes on executors too,
    and names the source's consumer groups with the learner's prefix (groupIdPrefix, classauth.spark_options)."""
    return spark_options(login_for(bootstrap, login))


@contextlib.contextmanager
def refusals(bootstrap: str, action: str, resource: str = "", login: KafkaLogin | None = None) -> Iterator:
    """Turn Kafka's authorization and authentication errors inside the block into one CourseError line."""
    from kafka.errors import KafkaError

    try:
        yield
    except KafkaError as error:
        code = _refusal_code(error)
        if code is None:
            raise
        found = login_for(bootstrap, login)
        detail = str(error.args[0]) if error.args else ""
        raise CourseError(refusal_line(code, found.username if found else "this client", action, resource,
                                       detail)) from None


def _refusal_code(error) -> str | None:
    """Kafka's error code when ``error`` is a refused login or action (TOPIC_AUTHORIZATION_FAILED, ...) or a class
    broker's limit (POLICY_VIOLATION, THROTTLING_QUOTA_EXCEEDED), else None. kafka-python wraps some (an idempotent
    producer's InitProducerId) in a plain KafkaError that names the class."""
    import kafka.errors as errors

    if isinstance(error, (errors.AuthorizationError, errors.SaslAuthenticationFailedError,
                          errors.PolicyViolationError, errors.ThrottlingQuotaExceededError)):
        return error.message
    named = re.search(r"\b(\w+AuthorizationFailedError|SaslAuthenticationFailedError)\b", str(error))
    found = getattr(errors, named.group(1), None) if named else None
    return found.message if isinstance(found, type) and issubclass(found, errors.BrokerResponseError) else None


@contextlib.contextmanager
def _logging_in(bootstrap: str, login: KafkaLogin | None) -> Iterator[dict]:
    """Around a client's construction: with a login, a refused password is one CourseError line, soon (the
    bootstrap gives up after the request timeout instead of kafka-python's 30 s). Without one, nothing changes.
    kafka-python reports a refused login as a bootstrap timeout: stack/loginprobe.py asks the broker directly."""
    from kafka.errors import SaslAuthenticationFailedError

    login = login_for(bootstrap, login)
    if login is None:
        yield {}
        return
    with refusals(bootstrap, "connect", login=login):
        try:
            yield client_options(login)
        except Exception:
            if loginprobe.refused(bootstrap, login):
                raise SaslAuthenticationFailedError(f"{login.username} on {bootstrap}") from None
            if loginprobe.closed_at_once(bootstrap):  # this machine is over the class broker's connection limit
                from .classlimits import connections_line

                raise CourseError(connections_line(bootstrap)) from None
            raise


def client(kind, bootstrap: str, login: KafkaLogin | None = None, **settings):
    """``kind(bootstrap_servers=bootstrap, **settings)`` for a kafka-python KafkaProducer or KafkaConsumer, the way
    every lesson builds its own. On a class broker with logins it logs in (:func:`security`) and a refused password
    is one CourseError line within 10 s, not kafka-python's 30 s bootstrap timeout (``settings`` win over both).
    On a broker without logins: exactly ``kind(bootstrap_servers=bootstrap, **settings)``."""
    with _logging_in(bootstrap, login) as options:
        if options:
            options = {"bootstrap_timeout_ms": LOGIN_BOOTSTRAP_TIMEOUT_MS, **options}
        return kind(bootstrap_servers=bootstrap, **{**options, **settings})


@contextlib.contextmanager
def admin(bootstrap: str, timeout_s: float | None = None, login: KafkaLogin | None = None) -> Iterator:
    """A KafkaAdminClient, closed afterwards. Raises kafka's errors when the broker does not answer."""
    from kafka import KafkaAdminClient

    extra = {"request_timeout_ms": int(timeout_s * 1000)} if timeout_s else {}
    with _logging_in(bootstrap, login) as options:
        if options and timeout_s:
            extra["bootstrap_timeout_ms"] = int(timeout_s * 1000)
        admin_client = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=f"{CLIENT_ID}-admin", **options, **extra)
    try:
        yield admin_client
    finally:
        admin_client.close()


@contextlib.contextmanager
def consumer(bootstrap: str, login: KafkaLogin | None = None, **settings) -> Iterator:
    """A KafkaConsumer with no group, no auto-commit and no topic auto-creation, closed afterwards."""
    from kafka import KafkaConsumer

    options = dict(group_id=None, client_id=f"{CLIENT_ID}-reader", enable_auto_commit=False,
                   allow_auto_create_topics=False, auto_offset_reset="earliest")
    reader = client(KafkaConsumer, bootstrap, login, **{**options, **settings})
    try:
        yield reader
    finally:
        reader.close(autocommit=False)


def listening(bootstrap: str, timeout_s: float = 1.0) -> bool:
    """Does anything accept a TCP connection at one of the ``host:port`` addresses? (A quick first probe:
    kafka-python's clients take up to 30 s to give up on an address where nothing listens.)"""
    import socket

    for address in bootstrap.split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_s):
                return True
        except (OSError, ValueError):
            continue
    return False


def topics(bootstrap: str, prefix: str = "", timeout_s: float = 3.0, login: KafkaLogin | None = None) -> list[str] | None:
    """Topic names starting with ``prefix``, sorted; None when no broker answers at ``bootstrap``. A broker that
    refuses the login raises a CourseError that says what to do (a wrong password is no broker down)."""
    from kafka.errors import KafkaConfigurationError, KafkaError

    if not listening(bootstrap, min(timeout_s, 1.0)):
        return None
    try:
        with admin(bootstrap, timeout_s, login=login) as client:
            return sorted(t for t in client.list_topics() if t.startswith(prefix))
    except KafkaConfigurationError:
        raise
    except (KafkaError, OSError, ValueError):
        return None


def answers(bootstrap: str, timeout_s: float = 3.0, login: KafkaLogin | None = None) -> bool:
    """True when a broker answers a metadata request at ``bootstrap`` (the readiness probe)."""
    return topics(bootstrap, timeout_s=timeout_s, login=login) is not None


def admin_call(bootstrap: str, call, within_s: float = 30, login: KafkaLogin | None = None):
    """``call(client)`` on a fresh admin client, tried again for up to ``within_s`` while the node the client
    picked does not answer. kafka-python's admin client gives up on the first node that refuses, even when
    others would answer: on the three-broker cluster, a broker that was just killed stays in the cluster's
    metadata until the controller fences it (several seconds). A broker that is not there at all still fails
    at once (NoBrokersAvailable)."""
    from kafka.errors import KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError

    deadline = time.monotonic() + within_s
    while True:
        try:
            with admin(bootstrap, login=login) as client:
                return call(client)
        except (KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def ensure_topic(bootstrap: str, topic: str, partitions: int = 2, replication: int = -1,
                 config: dict[str, str] | None = None, login: KafkaLogin | None = None) -> bool:
    """Create ``topic`` if it does not exist (the course's broker does not auto-create topics).

    ``replication=-1`` takes the broker's ``default.replication.factor``: one copy on the
    course's single broker, three on the three-broker cluster (stack/brokers.py).

    Returns True if it was created now.
    """
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    def create(client) -> bool:
        if topic in client.list_topics():
            return False
        new = NewTopic(topic, num_partitions=partitions, replication_factor=replication, topic_configs=config or {})
        failed = _until_not_throttled(lambda: _failures(client.create_topics([new], raise_errors=False)["topics"]))
        if failed and not isinstance(failed[0], TopicAlreadyExistsError):
            raise failed[0]
        return not failed

    with refusals(bootstrap, "create topic", topic, login):
        return admin_call(bootstrap, create, login=login)


def _failures(results: list[dict], ignore=()) -> list:
    """The errors (kafka-python's exceptions, with the broker's message) of a create or delete topics result."""
    import kafka.errors as errors

    found = [errors.for_code(r["error_code"])(r.get("error_message") or r.get("name") or "") for r in results
             if r["error_code"]]
    return [e for e in found if not isinstance(e, ignore)]


def _until_not_throttled(attempt) -> list:
    """``attempt()`` (a list of errors) again while a class broker's mutation quota holds it (for up to
    MUTATION_WAIT_S; kafka-python waits the broker's throttle time before sending again); its last errors."""
    from kafka.errors import ThrottlingQuotaExceededError

    deadline = time.monotonic() + MUTATION_WAIT_S
    while True:
        failed = attempt()
        if not any(isinstance(e, ThrottlingQuotaExceededError) for e in failed) or time.monotonic() > deadline:
            return failed
        time.sleep(1.0)


def delete_topics(bootstrap: str, names: list[str], wait_s: float = 30, login: KafkaLogin | None = None) -> None:
    """Delete topics and wait (up to ``wait_s``) until the names are free again (deletion is asynchronous)."""
    if not names:
        return
    from kafka.errors import UnknownTopicOrPartitionError

    with admin(bootstrap, login=login) as client, refusals(bootstrap, "delete topic", ", ".join(names), login):
        left = list(names)

        def delete() -> list:
            result = client.delete_topics(left, timeout_ms=30000, raise_errors=False)["topics"]
            left[:] = [r["name"] for r in result if r["error_code"]]  # a throttled topic is tried again
            return _failures(result, ignore=UnknownTopicOrPartitionError)

        failed = _until_not_throttled(delete)
        if failed:
            raise failed[0]
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        left = set(names) & set(topics(bootstrap, login=login) or [])
        if not left:
            return
        time.sleep(0.2)


def require_topic_access(client, bootstrap: str, topic: str, action: str, login: KafkaLogin | None = None) -> None:
    """On a broker with logins, a CourseError line when the login may not see ``topic``. Kafka answers a topic it
    hides like one that does not exist in most of kafka-python's calls (an empty read, no configs, no offsets);
    the metadata request for the one topic names the refusal. Without a login, nothing is asked."""
    from kafka.errors import TopicAuthorizationFailedError

    if login_for(bootstrap, login) is None:
        return
    with refusals(bootstrap, action, topic, login):
        for found in client.describe_topics([topic]):
            if found.get("error_code") == TopicAuthorizationFailedError.errno:
                raise TopicAuthorizationFailedError(topic)


def topic_configs(bootstrap: str, topic: str, login: KafkaLogin | None = None) -> dict[str, str]:
    """The settings of ``topic`` that differ from the broker's defaults (``{name: value}``)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    with admin(bootstrap, login=login) as client:
        require_topic_access(client, bootstrap, topic, "read the settings of topic", login)
        found = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    return {name: entry["value"] for name, entry in found.get("topic", {}).get(topic, {}).items()}


def set_topic_config(bootstrap: str, topic: str, config: dict[str, str], login: KafkaLogin | None = None) -> None:
    """Change settings of an existing topic (for example ``retention.ms``)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    import kafka.errors as errors

    with admin(bootstrap, login=login) as client, refusals(bootstrap, "change the settings of topic", topic, login):
        require_topic_access(client, bootstrap, topic, "change the settings of topic", login)
        # raise_on_unknown=False: the broker judges the settings (a class broker's policy names its limit);
        # kafka-python's own check compares them with the topic's dynamic settings, which a learner may not read
        found = client.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=config)],
                                     raise_on_unknown=False)
        result = str(found.get("topic", {}).get(topic, "OK"))  # kafka-python returns a refusal as text: raise it
        failed = re.match(r"\[Error (-?\d+)\] \w+: (.*)", result, re.S)
        if failed:
            raise errors.for_code(int(failed.group(1)))(failed.group(2))


def _partitions(client, topic: str, bootstrap: str = "") -> list:
    from kafka import TopicPartition

    found = [TopicPartition(topic, p) for p in sorted(client.partitions_for_topic(topic) or ())]
    if not found and bootstrap:
        refuse_if_hidden(bootstrap, topic, "read topic")
    return found


def refuse_if_hidden(bootstrap: str, topic: str, action: str) -> None:
    """A topic a login may not see looks missing to a consumer: on a broker with logins, say it is refused."""
    if login_for(bootstrap) is not None:
        with admin(bootstrap) as client:
            require_topic_access(client, bootstrap, topic, action)


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """``{partition: offset of the next record}`` of ``topic`` now ({} if it does not exist)."""
    with consumer(bootstrap) as client:
        tps = _partitions(client, topic, bootstrap)
        return {tp.partition: off for tp, off in client.end_offsets(tps).items()} if tps else {}


def producer_ids(bootstrap: str, topic: str) -> set[int]:
    """Ids of the idempotent (or transactional) producers the broker holds for ``topic``'s partitions."""
    from kafka import TopicPartition

    partitions = [TopicPartition(topic, p) for p in sorted(end_offsets(bootstrap, topic))]
    if not partitions:
        raise CourseError(f"topic {topic!r} does not exist on {bootstrap}.")
    with admin(bootstrap) as client:
        states = client.describe_producers(partitions)
    return {p.producer_id for state in states.values() for p in state.active_producers}


def beginning_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """``{partition: offset of the first record still kept}`` ({} if the topic does not exist)."""
    with consumer(bootstrap) as client:
        tps = _partitions(client, topic, bootstrap)
        return {tp.partition: off for tp, off in client.beginning_offsets(tps).items()} if tps else {}


def count_records(bootstrap: str, topic: str) -> int:
    """How many offsets the topic holds now (records, plus transaction markers if any)."""
    begin, end = beginning_offsets(bootstrap, topic), end_offsets(bootstrap, topic)
    return sum(end[p] - begin.get(p, 0) for p in end)


def read_range(bootstrap: str, topic: str, ranges: dict[int, tuple[int, int]], timeout_s: float = 30,
               isolation_level: str = "read_uncommitted") -> list:
    """The records of ``topic`` in ``{partition: (start, end)}`` (end exclusive), in partition and offset order."""
    from kafka import TopicPartition

    wanted = {TopicPartition(topic, p): r for p, r in ranges.items() if r[1] > r[0]}
    if not wanted:
        return []
    refuse_if_hidden(bootstrap, topic, "read topic")  # else an empty wait of timeout_s
    records: dict = {tp: [] for tp in wanted}
    with consumer(bootstrap, isolation_level=isolation_level) as client:
        client.assign(list(wanted))
        for tp, (start, _) in wanted.items():
            client.seek(tp, start)
        remaining = dict(wanted)
        deadline = time.monotonic() + timeout_s
        while remaining and time.monotonic() < deadline:
            for tp, batch in client.poll(timeout_ms=500).items():
                records[tp].extend(r for r in batch if r.offset < wanted[tp][1])
            for tp in list(remaining):
                if client.position(tp) >= wanted[tp][1]:
                    del remaining[tp]
    return [r for tp in sorted(records, key=lambda t: t.partition) for r in sorted(records[tp], key=lambda r: r.offset)]


def consumer_groups(bootstrap: str) -> list[str]:
    """Every consumer group the broker knows, sorted."""
    with admin(bootstrap) as client:
        return sorted(g["group_id"] if isinstance(g, dict) else g[0] for g in client.list_groups())


def group_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """``{partition: committed offset}`` of ``group`` on ``topic`` ({} if it committed none)."""
    with admin(bootstrap) as client:
        offsets = client.list_group_offsets({group: None}).get(group, {})
    return {tp.partition: meta.offset for tp, meta in sorted(offsets.items()) if tp.topic == topic}


def delete_group(bootstrap: str, group: str, static_member: str | None = None) -> None:
    """Forget a consumer group (and first its static member, which outlives a killed consumer)."""
    from kafka.admin import MemberToRemove

    if group not in consumer_groups(bootstrap):
        return
    with admin(bootstrap) as client:
        if static_member:
            try:
                client.remove_group_members(group, [MemberToRemove(group_instance_id=static_member)])
            except Exception:  # noqa: BLE001 - not a member (any more): nothing to remove
                pass
        client.delete_groups([group])
