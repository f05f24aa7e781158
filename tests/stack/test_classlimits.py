"""The class broker's limits (stack/classlimits.py) and its topic policy (deliverylab/stack/classpolicy, Java),
without a broker: the Java constants equal the Python ones the guide states, the settings the class broker gets,
and the policy driven as Kafka's controller drives it, on a log folder made up for the test. The real broker's
refusals: tests/stack/test_class_breaches.py."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from deliverylab import config
from deliverylab.stack import classbroker, classlimits, classquota, jars

JAVA = (Path(classlimits.__file__).parent / "classpolicy" / "deliverylab" / "classpolicy" / "ClassTopicPolicy.java")


def java_constant(name: str) -> str:
    found = re.search(rf"public static final \w+ {name} = (.+?);", JAVA.read_text())
    assert found, f"{name} is not a constant of ClassTopicPolicy.java"
    return found.group(1).strip().strip('"').rstrip("L")


def test_the_java_policy_has_the_numbers_of_the_python_mirror():
    # changing one is a decision: measure (docs/instructor-guide.md says how), then change both and the guide
    assert int(java_constant("PARTITIONS_PER_TOPIC")) == classlimits.PARTITIONS_PER_TOPIC == 8
    assert int(java_constant("PARTITIONS_PER_LEARNER")) == classlimits.PARTITIONS_PER_LEARNER
    assert int(java_constant("TOPICS_PER_LEARNER")) == classlimits.TOPICS_PER_LEARNER
    assert int(java_constant("RETENTION_MS_MAX")) == classlimits.RETENTION_MS_MAX == 7 * 24 * 3600 * 1000
    assert int(java_constant("RETENTION_BYTES_MAX")) == classlimits.RETENTION_BYTES_MAX == 64 << 20
    assert int(java_constant("MAX_MESSAGE_BYTES_MAX")) == classlimits.MAX_MESSAGE_BYTES_MAX == 1048588
    assert java_constant("KEY_PREFIX") == classlimits.KEY_PREFIX
    assert f"package {classlimits.POLICY_CLASS.rpartition('.')[0]};" in JAVA.read_text()
    for name in classlimits.POLICY_LIMITS:  # every limit the broker's settings may change is one the class reads
        assert f'"{name}"' in JAVA.read_text(), name


def test_the_limits_leave_room_above_what_a_learner_is_estimated_to_use():
    assert 3 * classlimits.PARTITIONS_PER_LEARNER >= 4 * classlimits.ESTIMATED_PARTITIONS
    assert 3 * classlimits.TOPICS_PER_LEARNER >= 4 * classlimits.ESTIMATED_TOPICS
    assert classlimits.CONNECTIONS_PER_IP >= 2 * classlimits.ESTIMATED_CONNECTIONS
    assert classlimits.burst() == 60 and classquota.QUOTAS["controller_mutation_rate"] == classlimits.MUTATION_RATE


def test_the_class_broker_loads_the_policy_and_bounds_connections_and_defaults(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    props = dict(line.split("=", 1) for line in classbroker.server_properties(
        config.settings(), "192.168.1.20", classbroker.Ports(9092), "adm").splitlines()
        if "=" in line and not line.startswith("#"))
    assert props["create.topic.policy.class.name"] == props["alter.config.policy.class.name"] == classlimits.POLICY_CLASS
    assert props["deliverylab.class.partitions.per.topic"] == "8"
    assert props["max.connections.per.ip"] == str(classlimits.CONNECTIONS_PER_IP)
    # loopback (the instructor's tools, the broker itself) and the instructor's address (the board) are not counted
    assert props["max.connections.per.ip.overrides"] == "127.0.0.1:2147483647,192.168.1.20:2147483647"
    assert props["listener.name.class.max.connections"] == "3000" and "listener.name.internal.max.connections" not in props
    assert props["log.retention.bytes"] == str(64 << 20) and props["log.segment.bytes"] == str(16 << 20)
    assert props["message.max.bytes"] == "1048588" and props["controller.quota.window.num"] == "30"
    assert classlimits.server_properties("127.0.0.1")["max.connections.per.ip.overrides"] == "127.0.0.1:2147483647"


def test_the_connection_line_names_the_limit_and_what_to_do():
    line = classlimits.connections_line("10.0.0.5:9092")
    assert "max.connections.per.ip" in line and "Kernel > Shut Down" in line and "\n" not in line


PROBE = """
import java.util.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.server.policy.*;
import deliverylab.classpolicy.ClassTopicPolicy;

/** ClassTopicPolicy driven as the controller drives it: log folder, then create:TOPIC:N[:K=V,..] or
 *  alter:TYPE:NAME:K=V[,..] (V null: a delete); one line per request, ok or refused: MESSAGE. */
public class PolicyProbe {
    public static void main(String[] args) {
        Map<String, Object> broker = new HashMap<>();
        broker.put("log.dirs", args[0]);
        broker.put("deliverylab.class.partitions.per.learner", "20");
        broker.put("deliverylab.class.topics.per.learner", "6");
        ClassTopicPolicy policy = new ClassTopicPolicy();
        policy.configure(broker);
        for (int i = 1; i < args.length; i++) {
            String[] part = args[i].split(":", -1);
            try {
                if (part[0].equals("create")) {
                    policy.validate(new CreateTopicPolicy.RequestMetadata(part[1], Integer.valueOf(part[2]), (short) 1,
                            null, configs(part.length > 3 ? part[3] : "")));
                } else {
                    policy.validate(new AlterConfigPolicy.RequestMetadata(
                            new ConfigResource(ConfigResource.Type.valueOf(part[1]), part[2]), configs(part[3])));
                }
                System.out.println("ok");
            } catch (PolicyViolationException refused) {
                System.out.println("refused: " + refused.getMessage());
            }
        }
    }

    static Map<String, String> configs(String text) {
        Map<String, String> found = new HashMap<>();
        for (String pair : text.isEmpty() ? new String[0] : text.split(",")) {
            String[] kv = pair.split("=", 2);
            found.put(kv[0], kv[1].equals("null") ? null : kv[1]);
        }
        return found;
    }
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    """``probe(log_folder, *requests)``: the policy's answers, from a JVM (the policy's jar, kafka-clients)."""
    from deliverylab.stack.java import java_executable

    folder = tmp_path_factory.mktemp("probe")
    (folder / "PolicyProbe.java").write_text(PROBE)
    classpath = f"{jars.class_policy_jar(log=lambda m: None)}:{sorted(jars.classpath_dir('kafka').glob('kafka-clients-*.jar'))[-1]}"
    subprocess.run([java_executable("javac"), "--release", "17", "-cp", classpath, "-d", str(folder),
                    str(folder / "PolicyProbe.java")], check=True, capture_output=True)

    def run(log_dir: Path, *requests: str) -> list[str]:
        out = subprocess.run([java_executable("java"), "-XX:TieredStopAtLevel=1", "-cp", f"{folder}:{classpath}",
                              "PolicyProbe", str(log_dir), *requests], check=True, capture_output=True, text=True)
        return out.stdout.splitlines()

    return run


def partitions(log_dir: Path, topic: str, n: int, suffix: str = "") -> None:
    for p in range(n):
        (log_dir / f"{topic}-{p}{suffix}").mkdir(parents=True)


def test_a_topic_over_the_per_topic_limit_is_refused_with_the_limit_named(probe, tmp_path):
    answers = probe(tmp_path, "create:xo.ada.flood:9", "create:xo.ada.ok:8", "create:__consumer_offsets:50",
                    "create:xo._board.ada:1", "create:orders:9")
    assert answers[0] == ("refused: xo.ada.flood asks for 9 partitions; the class broker allows at most 8 per topic "
                          "(partitions.per.topic)")
    assert answers[1:] == ["ok"] * 4  # not a learner's topic: Kafka's own, the board's, admin's


def test_what_a_learner_holds_is_counted_from_the_log_folders_and_recent_approvals(probe, tmp_path):
    partitions(tmp_path, "xo.ada.01-three-guarantees.orders", 2)
    partitions(tmp_path, "xo.ada.04-at-least-once.orders", 8)
    partitions(tmp_path, "xo.ada.gone", 8, suffix=".0123456789abcdef0123456789abcdef-delete")  # deleted: not counted
    partitions(tmp_path, "xo.bob.orders", 8)  # bob's are his
    answers = probe(tmp_path, "create:xo.ada.a:8", "create:xo.ada.b:3", "create:xo.bob.b:3", "create:xo.ada.c:2")
    assert answers[0] == "ok"  # 10 held + 8 = 18 of 20
    # the approval above has no folder yet (the test makes none): it still counts
    assert answers[1] == ("refused: xo.ada.* holds 18 partitions and xo.ada.b asks for 3 more; the class broker allows "
                          "20 per learner (partitions.per.learner): delete topics you no longer need (lesson.reset())")
    assert answers[2:] == ["ok", "ok"]


def test_a_learner_with_as_many_topics_as_allowed_creates_no_more(probe, tmp_path):
    for n in range(6):
        partitions(tmp_path, f"xo.ada.t{n}", 1)
    assert probe(tmp_path, "create:xo.ada.t6:1") == [
        "refused: xo.ada.* holds 6 topics, the class broker's limit per learner (topics.per.learner); delete topics "
        "you no longer need (lesson.reset())"]


def test_topic_settings_are_bounded_on_create_and_on_alter(probe, tmp_path):
    answers = probe(tmp_path, "create:xo.ada.forever:1:retention.ms=-1",
                    "alter:TOPIC:xo.ada.orders:max.message.bytes=104857600",
                    "alter:TOPIC:xo.ada.orders:retention.ms=600000,compression.type=zstd",
                    "alter:TOPIC:xo.ada.orders:segment.ms=1",
                    "alter:TOPIC:xo.ada.orders:cleanup.policy=compact",
                    "alter:TOPIC:xo.ada.orders:retention.bytes=null",
                    "alter:BROKER:1:log.retention.ms=-1",
                    "alter:TOPIC:orders:segment.ms=1")
    assert answers[0] == ("refused: retention.ms=-1 is outside what the class broker allows, 1 to 604800000 "
                          "(retention.ms.max)")
    assert answers[1] == ("refused: max.message.bytes=104857600 is outside what the class broker allows, 0 to 1048588 "
                          "(max.message.bytes.max)")
    assert answers[2] == "ok"
    assert answers[3].startswith("refused: segment.ms cannot be set on the class broker (allowed: retention.ms,")
    assert answers[4] == "refused: cleanup.policy=compact is not allowed on the class broker, only delete"
    assert answers[5:] == ["ok"] * 3  # a reset falls back to the broker's safe default; admin's resources are admin's
