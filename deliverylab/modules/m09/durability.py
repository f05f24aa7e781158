"""What a producer's acknowledgement promises on the three-broker cluster (lesson 09 section 3).

Three runs, each on a topic whose partition 0 has two replicas (a leader and one follower):

    cluster_settings       what the brokers say about min.insync.replicas (Kafka's default, and the
                           cluster's), unclean election, fsync per write, and eligible leader replicas
    one_replica_left       the follower is killed: acks=all is refused, acks=1 is written, but no reader
                           (a Kafka consumer, a Spark batch read) sees that record until the follower is back
    acked_then_leader_died the follower is paused, an acks=1 record is acknowledged by the leader alone, the
                           in-sync replicas are read, and the leader is killed: the follower, still in sync,
                           becomes leader without the record

Kafka's rule behind the second run: a partition's high watermark (the end of what readers may read)
moves only while its in-sync replicas number at least min.insync.replicas (Partition.maybeIncrementLeaderHW
in Kafka's core; a rule since Kafka 3.7, part of KIP-966). The third run is acks=1's classic loss: no unclean
election is needed.

A paused (SIGSTOPped) broker stops fetching and stops heartbeating to the controller alike, so it stays in
the in-sync replicas only for a short while: the controller fences a broker it has not heard from for
``broker.session.timeout.ms`` (9 s by default) and drops it from every ISR, and a leader drops a follower that
has not caught up for ``replica.lag.time.max.ms`` (30 s). The third run pauses for about a second and reads
the ISR just before the kill, rather than inferring it from the election.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

from ...config import CourseError
from ...stack import brokers, kafka
from .leaders import live_address, partitions_of, producer, quiet, wait_for_isr

#: what Kafka documents as the default of min.insync.replicas (a broker and topic setting)
KAFKA_DEFAULT_MIN_ISR = "1"
#: Long.MAX_VALUE: Kafka's default for flush.ms and flush.messages, i.e. the broker never forces an fsync itself
NEVER = str(2**63 - 1)
ELECTION_TIMEOUT_S = 45


def _synonym(entry: dict, source: str) -> str | None:
    return next((s["value"] for s in entry.get("synonyms", []) if s["source"] == source), None)


def cluster_settings(bootstrap: str, topic: str) -> list[str]:
    """Stable lines: min.insync.replicas (Kafka's default and this cluster's), unclean leader election,
    the topic's flush settings, and whether eligible leader replicas are on (a cluster feature)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    with kafka.admin(bootstrap) as client:
        node = str(min(brokers.live_brokers(bootstrap) or {1}))
        found = client.describe_configs([ConfigResource(ConfigResourceType.BROKER, node),
                                         ConfigResource(ConfigResourceType.TOPIC, topic)],
                                        include_synonyms=True, config_filter="all")
        features = client.describe_features()
    broker, on_topic = found["broker"][node], found["topic"][topic]
    min_isr = broker["min.insync.replicas"]
    elr = features.get("eligible.leader.replicas.version", {}).get("finalized", (0, 0))[1]
    flush = {key: on_topic[key]["value"] for key in ("flush.messages", "flush.ms")}
    return [f"min.insync.replicas, Kafka's default: {_synonym(min_isr, 'DEFAULT_CONFIG')}",
            f"min.insync.replicas, this cluster's brokers: {min_isr['value']}",
            f"unclean.leader.election.enable: {broker['unclean.leader.election.enable']['value']}",
            "flush.messages and flush.ms (fsync after so many records or ms): "
            + ("never, Kafka's default" if set(flush.values()) == {NEVER} else str(flush)),
            f"eligible leader replicas on: {'yes' if elr >= 1 else 'no'}"]


def readable(bootstrap: str, topic: str, spark=None, wait_s: float = 2.0) -> dict[str, int]:
    """How many records of ``topic`` a reader gets now: a kafka-python consumer reading from the start for
    ``wait_s`` seconds, and (with ``spark``) a Spark batch read of the topic up to its latest offsets."""
    from kafka import TopicPartition

    counts = {}
    with kafka.consumer(bootstrap) as client:
        parts = [TopicPartition(topic, p) for p in sorted(client.partitions_for_topic(topic) or ())]
        client.assign(parts)
        client.seek_to_beginning()
        got, deadline = 0, time.monotonic() + wait_s
        while time.monotonic() < deadline:
            got += sum(len(batch) for batch in client.poll(timeout_ms=250).values())
        counts["a Kafka consumer"] = got
    if spark is not None:
        counts["a Spark batch read"] = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                                        .option("subscribe", topic).option("startingOffsets", "earliest")
                                        .option("endingOffsets", "latest").load().count())
    return counts


def _send(bootstrap: str, topic: str, acks, key: bytes, sender=None) -> str:
    """Send one record to partition 0: "written" or "refused (<error>)". ``sender``: a producer made earlier
    (it is closed here too); else a new one."""
    sender = sender or producer(bootstrap, acks=acks, enable_idempotence=False, retries=0)
    try:
        sender.send(topic, key=key, value=b"{}", partition=0).get(timeout=20)
        return "written"
    except Exception as error:  # noqa: BLE001 - the lesson prints which error the broker gave
        return f"refused ({type(error).__name__})"
    finally:
        sender.close(timeout=5)


@dataclass
class OneReplicaLeft:
    """What partition 0 did with its follower dead, and what readers saw before and after it came back."""

    sends: dict[str, str] = field(default_factory=dict)        # "acks=all" / "acks=1" -> written or refused (...)
    while_alone: dict[str, int] = field(default_factory=dict)   # reader -> records it read, follower dead
    after_rejoin: dict[str, int] = field(default_factory=dict)  # reader -> records it read, follower back in sync

    def lines(self) -> list[str]:
        def counts(found: dict[str, int]) -> str:
            return ", ".join(f"{reader} {n}" for reader, n in found.items())

        return ([f"{acks:<9} {outcome}" for acks, outcome in self.sends.items()]
                + [f"records read while the follower is down: {counts(self.while_alone)}",
                   f"records read once it is back in sync:    {counts(self.after_rejoin)}"])


def one_replica_left(bootstrap: str, topic: str, spark=None, log=quiet) -> OneReplicaLeft:
    """Partition 0 of ``topic`` has two replicas and ``min.insync.replicas=2``. Kill the follower and wait until
    the cluster drops it from the in-sync replicas; send one record with ``acks=all`` and one with ``acks=1``
    (retries off, so a refusal shows at once); count what readers get; restart the follower, wait until it is
    in sync again, and count again."""
    part = partitions_of(bootstrap, topic)[0]
    leader = part["leader_id"]
    follower = next(n for n in part["replica_nodes"] if n != leader)
    live = live_address(follower)
    result = OneReplicaLeft()
    brokers.kill_broker(follower, log=log)
    try:
        wait_for_isr(live, topic, 0, {leader})
        for acks in ("all", 1):
            result.sends[f"acks={acks}"] = _send(live, topic, acks, b"o-check")
        result.while_alone = readable(live, topic, spark)
    finally:
        brokers.restart_broker(follower, log=log)
    wait_for_isr(bootstrap, topic, 0, {leader, follower})
    result.after_rejoin = readable(bootstrap, topic, spark)
    return result


@dataclass
class AckedThenLost:
    """An acks=1 record the leader acknowledged alone, then the leader's death."""

    before: int = 0                 # records readable before the send
    acknowledged: str = ""          # what the producer heard
    old_leader: int | None = None
    follower: int | None = None
    follower_in_isr: bool = False   # read from the cluster just before the leader was killed
    new_leader: int | None = None
    after: int = 0                  # records readable once the follower leads

    def lines(self) -> list[str]:
        return [f"acks=1 record acknowledged by the leader alone: {self.acknowledged == 'written'}",
                f"the follower was in the in-sync replicas when the leader was killed: {self.follower_in_isr}",
                f"the new leader was that follower (a clean election): "
                f"{self.new_leader is not None and self.new_leader == self.follower}",
                f"records in the partition before the send: {self.before} | after the election: {self.after}",
                f"the acknowledged record is lost: {self.acknowledged == 'written' and self.after == self.before}"]


def isr_at(bootstrap: str, topic: str, node: int, timeout_ms: int = 5000) -> list[int]:
    """Partition 0's in-sync replicas as broker ``node`` has them, asked of that broker alone. An admin client
    left to choose (``describe_topics``) may ask a paused broker, whose answer never comes: waiting for it
    would outlast the 9 s after which the controller fences the paused broker and drops it from the ISR."""
    from kafka.protocol.metadata import MetadataRequest

    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                              allow_auto_topic_creation=False)
    with kafka.admin(bootstrap) as client:
        async def ask():
            return await client._manager.send(request, node_id=node, request_timeout_ms=timeout_ms)

        answer = client._manager.run(ask).to_dict()
    parts = [p for t in answer["topics"] if t["name"] == topic for p in t["partitions"] if p["partition_index"] == 0]
    return list(parts[0]["isr_nodes"]) if parts else []


def acked_then_leader_died(bootstrap: str, topic: str, log=quiet) -> AckedThenLost:
    """Partition 0 of ``topic`` has two replicas, both in sync. Pause the follower (SIGSTOP: for the second or
    so this takes it is still in the ISR; after about 9 s without heartbeats the controller would fence it and
    drop it), send one record with ``acks=1``, read the ISR, SIGKILL the leader, resume the follower,
    wait for the controller to elect it, restart the old leader (it rejoins as a follower and drops what the
    new leader does not have), and count the partition's records once both replicas are in sync again."""
    part = partitions_of(bootstrap, topic)[0]
    leader = part["leader_id"]
    follower = next(n for n in part["replica_nodes"] if n != leader)
    pid = brokers.status().pids.get(follower)
    if not pid:
        raise CourseError(f"Broker {follower} of the Kafka cluster is not running; `python -m deliverylab stack "
                          "up --brokers 3` starts it.")
    result = AckedThenLost(old_leader=leader, follower=follower, before=sum(readable(bootstrap, topic).values()))
    live = live_address(leader)
    # the producer learns the partition's leader now, while every broker answers: paused, the follower must
    # not be asked anything (an answer that never comes would outlast the 9 s before the controller fences it)
    sender = producer(live_address(follower), acks=1, enable_idempotence=False, retries=0)
    sender.partitions_for(topic)
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(1.0)  # a fetch the follower had parked at the leader (up to 500 ms) comes back empty first
        result.acknowledged = _send(live, topic, 1, b"o-acked", sender=sender)  # goes to the leader alone
        result.follower_in_isr = follower in isr_at(live_address(follower), topic, leader)
        brokers.kill_broker(leader, log=log)
    finally:
        os.kill(pid, signal.SIGCONT)
    try:
        deadline = time.monotonic() + ELECTION_TIMEOUT_S
        while time.monotonic() < deadline:
            now = partitions_of(live, topic)[0]["leader_id"]
            if now not in (-1, leader):
                result.new_leader = now
                break
            time.sleep(0.3)
    finally:
        brokers.restart_broker(leader, log=log)
    # counted once both replicas are in sync again: nothing is then held back by min.insync.replicas
    wait_for_isr(bootstrap, topic, 0, {leader, follower})
    result.after = sum(readable(bootstrap, topic).values())
    return result
