"""Per-learner quotas on the class broker: what one learner may take of it, so a runaway loop cannot starve a room.

Kafka's client quotas (Kafka's documentation, Design > Quotas; the names and types are Kafka 4's
``org.apache.kafka.server.config.QuotaConfig``):

    producer_byte_rate   bytes a second a user may produce (LONG)
    consumer_byte_rate   bytes a second a user may fetch (LONG)
    request_percentage   the share of one request-handler or network thread's time a user's requests may take,
                         in percent (DOUBLE); the broker has (num.io.threads + num.network.threads) x 100 %
    controller_mutation_rate  partitions a user may create or delete a second (DOUBLE, KIP-599), a token bucket of
                         controller.quota.window.num one-second windows (stack/classlimits.py sets 30: a burst of
                         60 partitions); over it, CreateTopics, CreatePartitions and DeleteTopics fail with
                         THROTTLING_QUOTA_EXCEEDED for as long as the bucket is below zero

The most specific quota wins: ``/config/users/<user>`` before ``/config/users/<default>``. The broker
measures a user's rate over ``quota.window.num`` (11) samples of ``quota.window.size.seconds`` (1 s), and
over no less than 10 s even when the user has just started or was idle (Kafka's ``Rate.windowSize`` pads the
window to samples - 1 whole windows), so a burst passes unthrottled up to about ten seconds' worth of the quota
(:func:`free_burst_bytes`). Above that the broker answers at once with a throttle time, then mutes the
connection for that long (KIP-219), which brings the rate back to the quota: a client over its quota waits
(kafka-python also holds its next request for the throttle time); it gets no error.

What this module sets, as admin, when the class broker starts (classbroker.up, also with ``--docker``):
    every learner   the default user quota (``--entity-type users --entity-default``): one setting covers the
                    whole roster, learners added later too, with no step per learner
    admin, board    Kafka's own "no quota" values (:data:`UNLIMITED`): admin is the instructor's tools and the
                    broker's own identity on its loopback listeners; the board reads every learner's board topic
                    when it starts, and neither should ever wait behind a learner's share

kafka-python 3.0.12's KafkaAdminClient has no alter_client_quotas, so Kafka's own ``kafka.admin.ConfigCommand``
(``kafka-configs``) runs from the course's jars, once per identity, with the admin login in a 0600 file
(``--command-config``), never on a command line. ``quotas.json`` next to the passwords records what was set:
a later ``up`` with the same numbers runs no JVM.
"""
from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from ..config import CourseError, KafkaLogin
from . import classauth, classlimits

MIB = 1 << 20
#: what one learner may produce, in bytes a second: a lesson's burst (300 orders of ~200 bytes, a relay of 300
#: in transactions of 50) is ~60 KB, under a tenth of the ~10 MiB the broker lets through unthrottled; a
#: producer loop flat out is held at 1 MiB/s, so 30 of them would still be 30 MiB/s, which one broker takes
PRODUCER_BYTE_RATE = 1 * MIB
#: what one learner may fetch, in bytes a second: a Spark read of a few thousand orders (~1 MB), and a setup's
#: read of her board topic, stay far under the ~20 MiB burst; a consumer loop re-reading a topic is held
CONSUMER_BYTE_RATE = 2 * MIB
#: one learner's share of the broker's request threads' time, in percent of one thread (the broker has
#: 8 I/O + 3 network threads = 1100 %): a loop of tiny requests is held at a quarter of one thread
REQUEST_PERCENTAGE = 25.0
QUOTAS = {"producer_byte_rate": PRODUCER_BYTE_RATE, "consumer_byte_rate": CONSUMER_BYTE_RATE,
          "request_percentage": REQUEST_PERCENTAGE, "controller_mutation_rate": classlimits.MUTATION_RATE}
#: Kafka's own defaults when no quota applies (QuotaConfig: Long.MAX_VALUE bytes/s, Integer.MAX_VALUE % and
#: mutations a second)
UNLIMITED = {"producer_byte_rate": (1 << 63) - 1, "consumer_byte_rate": (1 << 63) - 1,
             "request_percentage": float((1 << 31) - 1), "controller_mutation_rate": float((1 << 31) - 1)}
#: Kafka's defaults: quota.window.num=11 samples of quota.window.size.seconds=1; the rate is measured over at
#: least (11 - 1) x 1 s (the broker's Rate stat pads a young window to samples - 1 whole windows)
WINDOW_SAMPLES = 11
WINDOW_SECONDS = 1.0
EXEMPT = (classauth.ADMIN, classauth.BOARD)
COMMAND = "kafka.admin.ConfigCommand"
TIMEOUT_S = 60


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def add_config(quotas: dict[str, float]) -> str:
    """``--add-config`` of kafka-configs: ``k=v,k=v`` in a fixed order (integers without a decimal point)."""
    return ",".join(f"{key}={_number(quotas[key])}" for key in sorted(quotas))


def plan() -> list[tuple[str | None, dict[str, float]]]:
    """Every quota entity to set: (None = the default user, its quotas), then each exempt identity's."""
    return [(None, dict(QUOTAS))] + [(name, dict(UNLIMITED)) for name in EXEMPT]


def entity_args(user: str | None) -> list[str]:
    return ["--entity-type", "users", *(["--entity-default"] if user is None else ["--entity-name", user])]


def alter_args(user: str | None, quotas: dict[str, float]) -> list[str]:
    """ConfigCommand's arguments (after the login) that set ``quotas`` on ``user`` (None: the default user)."""
    return ["--alter", "--add-config", add_config(quotas), *entity_args(user)]


def command_config(login: KafkaLogin) -> str:
    """An admin client's properties that log in as ``login`` (PLAIN on the loopback listener, or SCRAM)."""
    module = classauth.PLAIN_LOGIN_MODULE if login.mechanism == "PLAIN" else classauth.SCRAM_LOGIN_MODULE
    return (f"security.protocol={classauth.PROTOCOL}\nsasl.mechanism={login.mechanism}\n"
            f"sasl.jaas.config={classauth.jaas_config(login.username, login.password, module)}\n")


def window_seconds(elapsed_s: float) -> float:
    """The span the broker divides a user's bytes by, ``elapsed_s`` after the user's first request."""
    return max(elapsed_s, (WINDOW_SAMPLES - 1) * WINDOW_SECONDS)


def free_burst_bytes(rate: float) -> float:
    """How many bytes a user who was idle may send (or fetch) at once before the broker throttles: ~10 s of it."""
    return rate * window_seconds(0.0)


def allowed_bytes(rate: float, elapsed_s: float) -> float:
    """At most how many bytes a user held at ``rate`` gets through in its first ``elapsed_s`` seconds (one more
    sample's worth of slack: the broker throttles after a request, so the last one may overshoot)."""
    return rate * (window_seconds(elapsed_s) + WINDOW_SECONDS)


def recorded(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def wanted(cluster_id: str) -> dict:
    """What quotas.json holds once every entity of :func:`plan` is set on cluster ``cluster_id`` (compared before
    running any JVM; storage formatted anew is a new cluster id, so its quotas are set again)."""
    return {"cluster_id": cluster_id,
            "quotas": {"<default>" if user is None else user: add_config(quotas) for user, quotas in plan()}}


def apply(java: str, classpath: str, admin: KafkaLogin, cluster_id: str, record: Path, log=print) -> bool:
    """Set every quota of :func:`plan` on the broker at ``admin.broker`` with Kafka's ConfigCommand, unless
    ``record`` says they are set already on this cluster. True when it ran. The ConfigCommands run side by side."""
    if recorded(record) == wanted(cluster_id):
        return False
    failed = run_config_commands(java, classpath, admin,
                                 {user or "the default user": alter_args(user, quotas) for user, quotas in plan()})
    if failed:
        raise CourseError("Setting the learners' quotas on the class broker failed (kafka-configs):\n"
                          + "\n".join(failed) + "\nRun `stack up --class` again; `stack status --class` shows the broker.")
    classauth.write_secret_file(record, json.dumps(wanted(cluster_id), indent=1, sort_keys=True) + "\n")
    log(f"quotas: every learner {describe()}; admin and board unlimited")
    return True


def remove_default(java: str, classpath: str, admin: KafkaLogin) -> list[str]:
    """Delete the default user quota (a load test's control run without quotas); what failed, if anything."""
    return run_config_commands(java, classpath, admin, {"the default user": [
        "--alter", "--delete-config", ",".join(sorted(QUOTAS)), *entity_args(None)]})


def run_config_commands(java: str, classpath: str, admin: KafkaLogin, jobs: dict[str, list[str]]) -> list[str]:
    """One ConfigCommand per job (name: its arguments after the login), side by side, logged in as ``admin`` through
    a 0600 properties file; the failures' last lines."""
    with tempfile.TemporaryDirectory(prefix="deliverylab-quotas-") as folder:
        secret = Path(folder) / "admin.properties"
        classauth.write_secret_file(secret, command_config(admin))
        login = ["--bootstrap-server", admin.broker, "--command-config", str(secret)]
        runs = [(name, subprocess.Popen([java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
                                         classpath, COMMAND, *login, *args],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
                for name, args in jobs.items()]
        failed = []
        for name, proc in runs:
            try:
                out, _ = proc.communicate(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            if proc.returncode != 0:
                failed.append(f"{name}: {(out or '').strip()[-600:]}")
    return failed


def describe() -> str:
    """One line for the instructor: the default user quota in readable units."""
    return (f"produces up to {PRODUCER_BYTE_RATE / MIB:g} MiB/s, fetches up to {CONSUMER_BYTE_RATE / MIB:g} MiB/s, "
            f"uses up to {REQUEST_PERCENTAGE:g} % of one request thread, creates or deletes up to "
            f"{classlimits.MUTATION_RATE:g} partitions a second")
