"""A partition leader killed mid-stream, on the three-broker Kafka cluster (lesson 09 section 3,
lab 09 exercise 2). What ``acks`` and ``min.insync.replicas`` decide when replicas are missing is in
durability.py.

Every broker of the cluster is a real JVM; "killing a broker" is a SIGKILL of it
(stack/brokers.py). The controller notices the missing heartbeats, fences the broker, and
elects a new leader among the in-sync replicas of each partition it led. A producer that
writes with ``acks=all`` and idempotence retries the writes it had in flight, and the broker
keeps only one copy of each (it tracks the producer's sequence numbers per partition).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ... import ledger, orders
from ...config import CourseError
from ...stack import brokers, kafka
from .executors import clear_run

#: the producer settings of the lesson: what makes a leader's death lose and duplicate nothing
SAFE_PRODUCER = {"acks": "all", "enable_idempotence": True}
#: the topic settings of the lesson: three copies, and a write needs two of them in sync
SAFE_TOPIC = {"replication_factor": 3, "min.insync.replicas": "2"}
ISR_TIMEOUT_S = 45
#: How long the producer may take to deliver what it holds: its delivery timeout (30 s, see producer()) and some.
#: A partition whose only copy died has no leader to send to; kafka-python's flush() alone could wait for ever.
FLUSH_TIMEOUT_S = 45


def quiet(message: str) -> None:
    """The default log: the lesson prints stable lines itself (pids and app ids differ every run)."""


def producer(bootstrap: str, **settings):
    """A kafka-python producer for the cluster, with bounded waits (a dead broker never hangs a cell)."""
    from kafka import KafkaProducer

    options = {"request_timeout_ms": 5000, "delivery_timeout_ms": 30000, "max_block_ms": 30000,
               "linger_ms": 5, **settings}
    return KafkaProducer(bootstrap_servers=bootstrap, **options)


def create_topic(bootstrap: str, topic: str, replication_factor: int = 3, partitions: int = 2,
                 replicas: dict[int, list[int]] | None = None, **config: str) -> None:
    """Create ``topic`` (deleted first if it exists) with ``replication_factor`` copies of each partition,
    or the exact ``replicas`` {partition: [broker ids]}, and the topic ``config`` (dots in names allowed
    through ``**{"min.insync.replicas": "2"}``)."""
    from kafka.admin import NewTopic

    kafka.delete_topics(bootstrap, [topic])
    config = {name: _as_text(value) for name, value in config.items()}
    spec = (NewTopic(topic, num_partitions=-1, replication_factor=-1, replica_assignments=replicas,
                     topic_configs=config) if replicas else
            NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor, topic_configs=config))
    with kafka.admin(bootstrap) as client:
        answer = client.create_topics([spec], raise_errors=False)
    refused = refusal(answer)
    if refused:
        raise TopicRefused(f"Kafka refused topic {topic}: {refused}")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if all(p["leader_id"] >= 0 for p in partitions_of(bootstrap, topic)):
            return wait_for_own_config(lambda: own_config(bootstrap, topic), config)
        time.sleep(0.2)
    raise CourseError(f"Topic {topic} has no leader for every partition 30 s after it was created.")


#: Answers in a row that must agree before a new topic's settings are read (each goes to whichever broker is least busy).
AGREEING_ANSWERS = 3


def own_config(bootstrap: str, topic: str) -> dict[str, str]:
    """The settings the topic sets itself, as one broker describes it now."""
    from kafka.admin import ConfigResource, ConfigResourceType

    with kafka.admin(bootstrap) as client:
        found = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    own = found.get("topic", {}).get(topic, {})
    return {key: entry["value"] for key, entry in own.items() if entry.get("config_source") == "DYNAMIC_TOPIC_CONFIG"}


def wait_for_own_config(describe, config: dict[str, str], timeout_s: float = 30) -> None:
    """Wait until ``describe()`` gives the topic's requested ``config`` ``AGREEING_ANSWERS`` times in a row. A topic
    deleted and created again under the same name (a cell run twice) can be described for a moment by a broker that
    has not yet caught up, with the old topic's settings (a real run saw unclean.leader.election.enable=true from
    the deleted topic on its new one); reading the settings then would judge the old topic."""
    deadline, agreeing = time.monotonic() + timeout_s, 0
    while agreeing < AGREEING_ANSWERS:
        agreeing = agreeing + 1 if describe() == config else 0
        if time.monotonic() > deadline:
            raise CourseError(f"The brokers still describe the topic's settings as {describe()}, {timeout_s:.0f} s "
                              f"after it was created with {config}: the cluster has not caught up. Run the cell again.")
        if agreeing < AGREEING_ANSWERS:
            time.sleep(0.1)


class TopicRefused(CourseError):
    """Kafka refused to create a topic with these settings: its own reason, in one line."""


def _as_text(value) -> str:
    """A topic config's value as Kafka takes it: text (True -> "true", 2 -> "2")."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def refusal(answer: dict) -> str | None:
    """Kafka's reason, in one line, when a CreateTopics answer (kafka-python's dict) refused a topic; else None."""
    from kafka.errors import for_code

    for found in answer.get("topics", []):
        if found.get("error_code"):
            error = for_code(found["error_code"])
            reason = " ".join(str(found.get("error_message") or error.description or "").split())
            return f"{reason} ({error.__name__})" if reason else error.__name__
    return None


def producer_refusal(bootstrap: str, settings: dict) -> str | None:
    """kafka-python's reason, in one line, when it refuses these producer settings (an unknown name, a value it
    cannot take); None when it takes them. The producer it builds to find out is closed at once."""
    from kafka.errors import KafkaConfigurationError

    try:
        producer(bootstrap, **settings).close(timeout=5)
    except (KafkaConfigurationError, ValueError, TypeError, AssertionError) as error:  # not a broker that is down
        text = " ".join(str(error).split()) or type(error).__name__
        if "Unrecognized configs" in text:
            text += " (kafka-python spells settings with underscores: enable_idempotence, not enable.idempotence)"
        return f"{type(error).__name__}: {text}" if type(error).__name__ not in text else text
    return None


def partitions_of(bootstrap: str, topic: str) -> list[dict]:
    """The topic's partitions as the cluster describes them (leader_id, replica_nodes, isr_nodes); tried
    again while a broker that was just killed is still in the cluster's metadata (stack/kafka.py)."""
    found = kafka.admin_call(bootstrap, lambda client: client.describe_topics([topic]))
    return sorted(found[0]["partitions"], key=lambda p: p["partition_index"]) if found else []


#: what topic_settings says when the topic does not set a setting itself
BROKER_DEFAULT = "not set on the topic (the brokers' default applies)"


def topic_settings(bootstrap: str, topic: str) -> dict:
    """What the brokers say the topic has: ``replication_factor`` and its own ``min.insync.replicas`` and
    ``unclean.leader.election.enable`` (BROKER_DEFAULT when the topic does not set one)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    with kafka.admin(bootstrap) as client:
        found = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    own = found.get("topic", {}).get(topic, {})  # {"topic": {name: {key: {...}}}}: the topic's own settings
    parts = partitions_of(bootstrap, topic)
    return {"replication_factor": min((len(p["replica_nodes"]) for p in parts), default=0),
            **{key: own[key]["value"] if key in own else BROKER_DEFAULT
               for key in ("min.insync.replicas", "unclean.leader.election.enable")}}


def wait_for_isr(bootstrap: str, topic: str, partition: int, wanted: set[int], timeout_s: float = ISR_TIMEOUT_S):
    """Wait until the partition's in-sync replicas are ``wanted`` (the controller fences a dead broker
    after its session times out, about 9 s, and drops it from every ISR)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        isr = set(partitions_of(bootstrap, topic)[partition]["isr_nodes"])
        if isr == wanted:
            return
        time.sleep(0.3)
    raise CourseError(f"Partition {partition} of {topic} did not reach in-sync replicas {sorted(wanted)} within "
                      f"{timeout_s:.0f} s. `python -m deliverylab stack status` shows which brokers run.")


@dataclass
class LeaderKill:
    """What producing through the death of a partition leader left in the topic."""

    produced: list = field(default_factory=list)
    killed: int | None = None              # the broker that led the partition
    new_leader: int | None = None          # the leader elected after it
    in_topic: ledger.Ledger | None = None  # the topic's records, reconciled
    table: ledger.Ledger | None = None     # the Delta table a Spark query wrote meanwhile, reconciled
    settings: dict = field(default_factory=dict)   # the producer settings used
    topic: dict = field(default_factory=dict)      # the topic settings, as the brokers describe them
    error: str | None = None               # what the producer said, when a send failed
    partition: int = 0                     # the partition whose leader was killed
    kill_after: int | None = None          # how many orders had been sent then
    hidden: bool = False                   # a lab's hidden run: its lines do not say which partition, or when
    refused: str | None = None             # Kafka's (or kafka-python's) refusal of the settings: nothing ran

    def lines(self) -> list[str]:
        if self.refused:
            return [self.refused]
        moved = self.new_leader is not None and self.new_leader != self.killed
        which = "a partition's leader killed mid-stream" if self.hidden else f"leader of partition {self.partition} killed"
        return [f"{which}: {self.killed is not None}",
                f"a new leader was elected from the in-sync replicas: {moved}",
                f"producer errors: {self.error or 'none'}",
                f"in the topic: {self.in_topic.verdict_line() if self.in_topic else 'not read'}"] + (
                [f"in the Delta table the stream wrote: {self.table.verdict_line()}"] if self.table else [])


def produce_through_a_leader_kill(bootstrap: str, topic: str, count: int = 400, settings: dict | None = None,
                                  restart: bool = True, log=quiet, partition: int = 0,
                                  kill_after: int | None = None) -> LeaderKill:
    """Produce ``count`` seeded orders to ``topic`` in a steady stream, SIGKILL the leader of ``partition``
    when ``kill_after`` are sent (default: half), finish, and reconcile what the topic holds. ``restart`` brings
    the broker back afterwards (it rejoins as a follower and catches up)."""
    settings = dict(SAFE_PRODUCER if settings is None else settings)
    kill_after = count // 2 if kill_after is None else kill_after
    result = LeaderKill(produced=orders.generate_orders(count), settings=settings,
                        topic=topic_settings(bootstrap, topic), partition=partition, kill_after=kill_after)
    sender = producer(bootstrap, **settings)
    # what the producer runs with, kafka-python's defaults included (3.x: acks=all, as -1, and idempotence on)
    result.settings = {**settings, **{k: sender.config[k] for k in ("acks", "enable_idempotence")}}
    failures: list[str] = []

    def failed(error):
        failures.append(type(error).__name__)

    try:
        for n, order in enumerate(result.produced):
            if n == kill_after:
                sender.flush()
                result.killed = partitions_of(bootstrap, topic)[partition]["leader_id"]
                brokers.kill_broker(result.killed, log=log)
            sender.send(topic, key=order["order_id"].encode(), value=orders.encode(order)).add_errback(failed)
            if n % 20 == 19:
                time.sleep(0.02)  # a steady stream, not one burst
        _flush_within(sender, failed)
    finally:
        sender.close(timeout=10)
    result.error = ", ".join(sorted(set(failures))) or None
    result.new_leader = partitions_of(live_address(result.killed), topic)[partition]["leader_id"]
    if restart and result.killed is not None:
        brokers.restart_broker(result.killed, log=log)  # before reading: a partition with one copy needs it back
    result.in_topic = ledger.reconcile(result.produced, ledger.read_kafka_topic(bootstrap, topic), label="topic")
    return result


def _flush_within(sender, failed) -> None:
    """Wait for the producer's sends, at most FLUSH_TIMEOUT_S; what is still undelivered then counts as failed."""
    from kafka.errors import KafkaTimeoutError

    try:
        sender.flush(timeout=FLUSH_TIMEOUT_S)
    except KafkaTimeoutError as error:
        failed(error)


def live_address(dead: int | None) -> str:
    """The bootstrap list without the broker that was killed."""
    return ",".join(f"127.0.0.1:{brokers.client_port(n)}" for n in range(1, brokers.NODES + 1) if n != dead)


def stream_through_a_leader_kill(spark, lesson, name: str = "leader-kill", count: int = 400,
                                 settings: dict | None = None, topic_config: dict | None = None,
                                 log=quiet, partition: int = 0, kill_after: int | None = None,
                                 hidden: bool = False) -> LeaderKill:
    """Create the lesson's topic ``name`` (``topic_config``: replication_factor and topic settings), start a
    Spark query that copies it into a Delta table, produce through the kill of ``partition``'s leader after
    ``kill_after`` orders (the killed broker is restarted once the producer is done), let the query catch up,
    and reconcile the topic and the table. Settings kafka-python or Kafka refuse come back as one line in
    ``refused``, before anything runs; ``hidden``: the lines do not say which partition, or when."""
    from ...streams import wait_until_drained

    settings = dict(SAFE_PRODUCER if settings is None else settings)
    topic_config = dict(SAFE_TOPIC if topic_config is None else topic_config)
    topic, table = clear_run(lesson, name), lesson.table(name)
    refused = producer_refusal(lesson.bootstrap, settings)
    if refused:
        return LeaderKill(settings=settings, partition=partition, hidden=hidden,
                          refused=f"kafka-python refused the producer settings: {refused}")
    copies = topic_config.pop("replication_factor", 3)
    try:
        replication = int(copies)
    except (TypeError, ValueError):
        return LeaderKill(settings=settings, partition=partition, hidden=hidden,
                          refused=f"replication_factor is a whole number of copies, such as 3, not {copies!r}")
    try:
        create_topic(lesson.bootstrap, topic, replication_factor=replication, **topic_config)
    except TopicRefused as error:
        return LeaderKill(settings=settings, partition=partition, hidden=hidden, refused=str(error))
    query = lesson.track(
        spark.readStream.format("kafka").option("kafka.bootstrap.servers", lesson.bootstrap)
        .option("subscribe", topic).option("startingOffsets", "earliest").load()
        .selectExpr("CAST(value AS STRING) AS json")
        .selectExpr("get_json_object(json, '$.order_id') AS order_id",
                    "CAST(get_json_object(json, '$.amount') AS DECIMAL(10,2)) AS amount")
        .writeStream.format("delta").option("checkpointLocation", lesson.checkpoint(name))
        .trigger(processingTime="1 second").start(table))
    try:
        result = produce_through_a_leader_kill(lesson.bootstrap, topic, count, settings, log=log,
                                               partition=partition, kill_after=kill_after)
        result.hidden = hidden
        wait_until_drained(query, timeout_s=120)
    finally:
        query.stop()
    result.table = ledger.reconcile(result.produced, ledger.read_delta(spark, table), label="delta table")
    return result
