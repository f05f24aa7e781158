"""What one learner may take of the class broker beyond her ACLs and byte quotas, enforced by the broker itself.

Kafka's ACLs say which topics are hers; nothing in them says how many. Without limits, one learner's loop (or one
typo in a partition count) filled the class broker with 50 000 partitions of her own prefix, and the whole room
waited. Four of Kafka's own hooks bound it, whatever client the learner writes:

    topic policy         ClassTopicPolicy (Java, deliverylab/stack/classpolicy, compiled at setup by stack/jars.py),
                         loaded by the broker's controller as create.topic.policy.class.name and
                         alter.config.policy.class.name: at most PARTITIONS_PER_TOPIC partitions a topic,
                         TOPICS_PER_LEARNER topics and PARTITIONS_PER_LEARNER partitions under xo.<learner>., and
                         topic settings from a short list, within bounds (no retention forever, no 100 MB records)
    mutation quota       controller_mutation_rate (KIP-599, set per user by stack/classquota.py): partitions created
                         or deleted a second, with a burst of MUTATION_RATE x MUTATION_WINDOWS
    connection limits    max.connections.per.ip (KIP-402): connections one machine may hold open; loopback and the
                         instructor's own address are exempt (the board, the instructor's tools). And a ceiling per
                         learners' listener, so learners together can never use up the broker's file descriptors
    broker defaults      what a topic that sets nothing gets: 64 MiB kept per partition at most, 16 MiB segments,
                         records up to ~1 MiB, requests up to 16 MiB. A learner may reset her topic's settings to
                         these (a legacy AlterConfigs resets keys the policy never sees, KAFKA-14195): they are safe

The numbers: the lessons' largest topic has 3 partitions. How much a learner who runs every lesson and lab without
a reset holds is an estimate, counted from the topics the course's code creates (not measured on a broker): up to
ESTIMATED_PARTITIONS partitions in ESTIMATED_TOPICS topics, and up to ESTIMATED_CONNECTIONS connections from her
machine (kernels, Spark's clients, the relay, the flaky proxy). The per-learner limits leave a third more than that,
the connection limit more than twice; a learner who reaches a limit is told to delete what she no longer needs
(``lesson.reset()``). A refusal reaches the learner as one line that names the limit (stack/kafka.py): the policy's
own message, or for the quota :func:`throttled_line`. tests/stack/test_classlimits.py keeps the Java constants
equal to these.
"""
from __future__ import annotations

MIB = 1 << 20
POLICY_CLASS = "deliverylab.classpolicy.ClassTopicPolicy"
#: server.properties keys the policy reads (deliverylab.class.<name>); the Java class has the same defaults
KEY_PREFIX = "deliverylab.class."

PARTITIONS_PER_TOPIC = 8
PARTITIONS_PER_LEARNER = 240
TOPICS_PER_LEARNER = 120
RETENTION_MS_MAX = 7 * 24 * 3600 * 1000
RETENTION_BYTES_MAX = 64 * MIB
#: Kafka's own default for message.max.bytes (1 MiB plus a record batch's overhead)
MAX_MESSAGE_BYTES_MAX = 1048588
#: what a learner who runs every lesson and lab without a reset is estimated to hold (counted from the course's code,
#: not measured): the limits above leave a third more
ESTIMATED_TOPICS = 90
ESTIMATED_PARTITIONS = 180
ESTIMATED_CONNECTIONS = 60

#: partitions a learner may create or delete a second (controller_mutation_rate), and the windows of one second the
#: broker keeps (controller.quota.window.num): a burst of 60 passes at once, a lesson's reset and setup need ~25
MUTATION_RATE = 2.0
MUTATION_WINDOWS = 30
#: connections one machine may hold open to the class broker (max.connections.per.ip)
CONNECTIONS_PER_IP = 150
#: connections all learners together may hold on each of their listeners (listener.name.<l>.max.connections)
LISTENER_CONNECTIONS = {"class": 3000, "flaky": 1500}
#: Kafka's own "no limit" (Integer.MAX_VALUE), for the addresses exempt from the per-IP limit
NO_LIMIT = (1 << 31) - 1

POLICY_LIMITS = {"partitions.per.topic": PARTITIONS_PER_TOPIC, "partitions.per.learner": PARTITIONS_PER_LEARNER,
                 "topics.per.learner": TOPICS_PER_LEARNER, "retention.ms.max": RETENTION_MS_MAX,
                 "retention.bytes.max": RETENTION_BYTES_MAX, "max.message.bytes.max": MAX_MESSAGE_BYTES_MAX}
#: the broker's defaults for a topic that sets nothing (and what a learner's reset of a setting falls back to)
BROKER_DEFAULTS = {"message.max.bytes": MAX_MESSAGE_BYTES_MAX, "log.retention.bytes": RETENTION_BYTES_MAX,
                   "log.segment.bytes": 16 * MIB, "log.retention.ms": RETENTION_MS_MAX,
                   "socket.request.max.bytes": 16 * MIB}


def exempt_addresses(address: str) -> list[str]:
    """Where connections are not counted per IP: loopback (the instructor's tools, the broker itself) and the
    instructor's own address on the class network (the board connects from it)."""
    return list(dict.fromkeys(["127.0.0.1", address]))


def server_properties(address: str) -> dict[str, str]:
    """The class broker's settings for its limits (classbroker.server_properties adds them)."""
    props = {"create.topic.policy.class.name": POLICY_CLASS, "alter.config.policy.class.name": POLICY_CLASS}
    props.update({KEY_PREFIX + name: str(value) for name, value in POLICY_LIMITS.items()})
    props.update({name: str(value) for name, value in BROKER_DEFAULTS.items()})
    props["controller.quota.window.num"] = str(MUTATION_WINDOWS)
    props["max.connections.per.ip"] = str(CONNECTIONS_PER_IP)
    props["max.connections.per.ip.overrides"] = ",".join(f"{a}:{NO_LIMIT}" for a in exempt_addresses(address))
    props.update({f"listener.name.{listener}.max.connections": str(n) for listener, n in LISTENER_CONNECTIONS.items()})
    return props


def burst() -> int:
    """Partitions a learner who was idle may create or delete at once before the quota holds her."""
    return int(MUTATION_RATE * MUTATION_WINDOWS)


def throttled_line() -> str:
    """The end of the line a learner reads when the mutation quota holds her (Kafka's THROTTLING_QUOTA_EXCEEDED)."""
    return (f"partitions were created or deleted faster than the class broker allows (controller_mutation_rate: "
            f"{MUTATION_RATE:g} a second, bursts of {burst()}); wait a minute, then run the cell again")


def connections_line(bootstrap: str) -> str:
    """What a learner reads when the class broker closes her new connections at once (no Kafka error exists)."""
    return (f"The class broker at {bootstrap} closes this machine's new connections at once: it may hold "
            f"{CONNECTIONS_PER_IP} connections from one machine (max.connections.per.ip), or it is full. Shut down "
            "the kernels of notebooks you are not using (Kernel > Shut Down), then run the cell again.")


def describe() -> list[str]:
    """The limits, for the instructor (stack up --class prints them)."""
    return [f"limits: every learner at most {PARTITIONS_PER_TOPIC} partitions a topic, {TOPICS_PER_LEARNER} topics and "
            f"{PARTITIONS_PER_LEARNER} partitions; retention up to 7 days and {RETENTION_BYTES_MAX // MIB} MiB a "
            f"partition, records up to {MAX_MESSAGE_BYTES_MAX} bytes; {MUTATION_RATE:g} partitions created or deleted "
            f"a second (bursts of {burst()}); {CONNECTIONS_PER_IP} connections a machine"]
