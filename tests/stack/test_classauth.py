"""stack/classauth.py without a broker: the roster, the password file, join tokens, ACLs, client options;
and where the course's settings find a login (config.py). The real broker's side: test_class_broker.py."""
from __future__ import annotations

import stat

import pytest

from deliverylab import config
from deliverylab.config import CLASS_TOPIC, CourseError, KafkaLogin
from deliverylab.stack import classauth, classbroker


def test_a_roster_is_one_learner_id_a_line_with_comments_and_blank_lines():
    assert classauth.parse_roster("# morning group\nada\n\nbob-2  # late\n") == ["ada", "bob-2"]


@pytest.mark.parametrize("line, says", [
    ("Ada L.", "'Ada L.' is not a learner id.*e.g. 'ada-l'"),
    ("bob_smith", "is not a learner id.*'bob-smith'"),
    ("-cy", "is not a learner id"),
    ("admin", "the class broker's own admin identity"),
    ("board", "own board identity"),
])
def test_a_bad_roster_line_is_named_with_its_number_and_the_fix(line, says):
    with pytest.raises(CourseError, match=f"class.txt, line 2: .*{says}"):
        classauth.parse_roster(f"ada\n{line}\n")


def test_a_learner_twice_or_no_learner_at_all_is_refused():
    with pytest.raises(CourseError, match="line 3: 'ada' is already on line 1"):
        classauth.parse_roster("ada\nbob\nada\n")
    with pytest.raises(CourseError, match="names no learner"):
        classauth.parse_roster("# nobody yet\n")


def test_passwords_are_new_for_new_names_and_kept_for_known_ones(tmp_path):
    first = classauth.passwords_for(["ada"])
    assert set(first) == {"admin", "board", "ada"} and len(set(first.values())) == 3
    assert all(len(p) == 24 and p.replace("-", "").replace("_", "").isalnum() for p in first.values())
    again = classauth.passwords_for(["ada", "bob"], first)
    assert {k: again[k] for k in first} == first and again["bob"] not in first.values()


def test_the_password_file_is_readable_by_its_owner_only(tmp_path):
    path = tmp_path / "class" / "passwords.json"
    path.parent.mkdir()
    path.write_text("{}")
    path.chmod(0o644)  # a file that was there before: made private, not merely created private
    classauth.write_passwords(path, {"ada": "secret"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert classauth.read_passwords(path) == {"ada": "secret"}
    path.chmod(0o640)
    with pytest.raises(CourseError, match="others may read it .mode 640.*chmod 600"):
        classauth.read_passwords(path)


def test_a_join_token_is_one_line_that_carries_the_login():
    token = classauth.join_token("192.168.1.20:9092", "ada", "pw-1")
    assert token.startswith("xo1.") and "\n" not in token and "pw-1" not in token
    assert classauth.is_join_token(f"  {token} ")
    assert classauth.parse_join_token(token) == KafkaLogin("192.168.1.20:9092", "ada", "pw-1")
    with pytest.raises(CourseError, match="join token is damaged.*starting with xo1"):
        classauth.parse_join_token(token[:-6])
    assert "pw-1" not in repr(classauth.parse_join_token(token))  # never in a traceback or a log


def test_a_learner_may_use_her_prefix_grow_one_topic_and_write_her_board_topic_and_nothing_else():
    rules = classauth.learner_rules("ada")
    assert {r.principal for r in rules} == {"User:ada"}
    assert {(r.resource, r.name, r.pattern) for r in rules} == {
        ("TOPIC", "xo.ada.", "PREFIXED"), ("GROUP", "xo.ada.", "PREFIXED"),
        ("TRANSACTIONAL_ID", "xo.ada.", "PREFIXED"), ("TOPIC", "xo.ada.02-anatomy.grown", "LITERAL"),
        ("TOPIC", "xo._board.ada", "LITERAL")}
    on_topics = {r.operation for r in rules if r.name == "xo.ada." and r.resource == "TOPIC"}
    assert on_topics == {"CREATE", "WRITE", "READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
    # ALTER (CreatePartitions, which no topic policy sees) on lesson 02's one growing topic only
    assert [(r.name, r.operation) for r in rules if r.operation == "ALTER"] == [("xo.ada.02-anatomy.grown", "ALTER")]
    # her board topic: she writes and reads it; admin creates it, and she may neither configure nor delete it
    assert {r.operation for r in rules if r.name == "xo._board.ada"} == {"WRITE", "READ", "DESCRIBE"}
    assert not any(r.resource == "CLUSTER" for r in rules)  # idempotent producers need WRITE on a topic only (KIP-679)
    assert config.settings().learner_prefix("ada") == classauth.learner_prefix("ada")
    assert not classauth.board_topic("ada").startswith(classauth.learner_prefix("ada"))  # no reset of hers touches it
    assert not any(r.name == CLASS_TOPIC for r in classauth.class_rules(["ada"]))  # the shared class topic is gone


def test_the_board_reads_only_the_roster_learners_board_topics_and_admin_needs_no_acl():
    assert {(r.resource, r.name, r.pattern, r.operation) for r in classauth.board_rules(["ada", "bob"])} == {
        ("TOPIC", f"xo._board.{n}", "LITERAL", op) for n in ("ada", "bob") for op in ("READ", "DESCRIBE")}
    assert not any(r.principal == "User:admin" for r in classauth.class_rules(["ada", "bob"]))


def test_a_login_becomes_kafka_python_and_spark_options():
    ada = KafkaLogin("h:9092", "ada", "pw")
    assert classauth.client_options(ada) == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
                                             "sasl_plain_username": "ada", "sasl_plain_password": "pw"}
    assert classauth.spark_options(ada) == {
        "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                  'username="ada" password="pw";',
        "groupIdPrefix": "xo.ada."}  # Spark's source names its consumer groups so ada's ACLs allow them
    assert classauth.client_options(None) == {} and classauth.spark_options(None) == {}


def test_refusals_read_as_one_line_that_says_what_to_do():
    line = classauth.refusal_line("TOPIC_AUTHORIZATION_FAILED", "ada", "write topic", "xo.bob.orders")
    assert line.startswith("Kafka refused: ada may not write topic xo.bob.orders (TOPIC_AUTHORIZATION_FAILED).")
    assert "starts with xo.ada." in line and "\n" not in line
    line = classauth.refusal_line("SASL_AUTHENTICATION_FAILED", "ada", "connect")
    assert "password of 'ada'" in line and "workshop join <token>" in line


def test_a_limit_reads_as_one_line_in_the_brokers_words_or_the_quotas():
    policy = "xo.ada.x asks for 50 partitions; the class broker allows at most 8 per topic (partitions.per.topic)"
    line = classauth.refusal_line("POLICY_VIOLATION", "ada", "create topic", "xo.ada.x", policy + "\n")
    assert line == f"Kafka refused: ada may not create topic xo.ada.x (POLICY_VIOLATION): {policy}."
    line = classauth.refusal_line("THROTTLING_QUOTA_EXCEEDED", "ada", "delete topic", "xo.ada.x")
    assert "(THROTTLING_QUOTA_EXCEEDED): partitions were created or deleted faster" in line
    assert "controller_mutation_rate: 2 a second, bursts of 60" in line and "\n" not in line


def test_the_class_broker_logs_everyone_in_and_trusts_only_admin(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    props = dict(line.split("=", 1) for line in classbroker.server_properties(
        config.settings(), "192.168.1.20", classbroker.Ports(9092), "adm").splitlines() if "=" in line
        and not line.startswith("#"))
    assert props["listeners"] == ("CLASS://192.168.1.20:9092,FLAKY://192.168.1.20:9094,"
                                  "CONTROLLER://127.0.0.1:9097,INTERNAL://127.0.0.1:9098")
    assert "FLAKY://127.0.0.1:9095" in props["advertised.listeners"]  # each learner's own flaky proxy
    assert all(p.endswith(":SASL_PLAINTEXT") for p in props["listener.security.protocol.map"].split(","))
    assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert props["super.users"] == "User:admin" and props["allow.everyone.if.no.acl.found"] == "false"
    assert props["listener.name.class.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["sasl.mechanism.controller.protocol"] == "PLAIN" and 'user_admin="adm"' in \
        props["listener.name.controller.plain.sasl.jaas.config"]
    assert props["num.partitions"] == "2" and props["transaction.state.log.replication.factor"] == "1"  # the course's
    assert props["create.topic.policy.class.name"] == props["alter.config.policy.class.name"] == \
        "deliverylab.classpolicy.ClassTopicPolicy"  # the limits (test_classlimits.py)


def test_a_password_in_the_workshop_file_goes_only_to_the_files_broker(monkeypatch, tmp_path):
    ini = tmp_path / "workshop.ini"
    monkeypatch.setenv("DELIVERYLAB_WORKSHOP_FILE", str(ini))
    for name in ("DELIVERYLAB_BROKER", "DELIVERYLAB_LEARNER", "DELIVERYLAB_KAFKA_USER", "DELIVERYLAB_KAFKA_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    ini.write_text("[workshop]\nbroker = 10.0.0.5:9092\nlearner = ada\npassword = pw\n")
    assert config.settings().kafka_login == KafkaLogin("10.0.0.5:9092", "ada", "pw")
    monkeypatch.setenv("DELIVERYLAB_BROKER", "127.0.0.1:9192")  # lesson 09 moves onto the local cluster
    assert config.settings().kafka_login is None
    monkeypatch.setenv("DELIVERYLAB_KAFKA_PASSWORD", "env-pw")
    monkeypatch.setenv("DELIVERYLAB_KAFKA_USER", "board")
    assert config.settings().kafka_login == KafkaLogin("127.0.0.1:9192", "board", "env-pw")


def test_the_course_broker_alone_has_no_login(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_WORKSHOP_FILE", str(tmp_path / "none.ini"))
    monkeypatch.delenv("DELIVERYLAB_BROKER", raising=False)
    monkeypatch.setenv("DELIVERYLAB_KAFKA_PASSWORD", "pw")  # a stray password changes nothing on one's own broker
    from deliverylab.stack import kafka

    assert config.settings().kafka_login is None and kafka.security(config.settings().bootstrap) == {}


def test_the_docker_way_says_how_to_start_the_broker_first(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_JARS", str(config.settings().jars))  # the class policy's jar is built from them
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("DELIVERYLAB_CLASS_PORT", "19990")  # nothing listens on its INTERNAL port, 19996
    (tmp_path / "class.txt").write_text("ada\n")
    with pytest.raises(CourseError, match="docker compose --env-file .*docker.env -f docker/class-broker.yaml up -d"):
        classbroker.up(tmp_path / "class.txt", "192.168.1.20", log=lambda m: None, docker=True)
    env_file = classbroker.paths(config.settings())["docker_env"]
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "DELIVERYLAB_CLASS_ADDRESS=192.168.1.20\n" in env_file.read_text()
    assert "DELIVERYLAB_CLASS_POLICY_JAR=" in env_file.read_text()  # mounted into the container
