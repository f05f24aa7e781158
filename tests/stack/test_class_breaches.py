"""Issue 37's four ways one learner broke a class broker for everyone, each tried for real on a class broker of the
module's own (tests/stack/conftest.py's ``room``: ada and bob), and what else the issue asked of it.

1. a partition flood in her own prefix: refused by the broker's topic policy, per topic and per learner, and held
   by the controller mutation quota; topic settings bounded (stack/classlimits.py)
2. a forged event: nobody can write another learner's board topic, so her `workshop join` is never refused for it
3. a malformed event: counted and shown in one line, never fatal to the board; control codes shown as text
4. the roster: a removed learner's login and ACLs are deleted, a re-added learner's new token works and her old
   one does not (stack/classroster.py)

Every refusal is one CourseError line that names the limit. Tests that stop or break the broker come last.
"""
from __future__ import annotations

import json
import os
import socket
import stat
import time
from dataclasses import replace

import pytest
from kafka import KafkaProducer

from deliverylab import config
from deliverylab.config import CourseError, KafkaLogin
from deliverylab.stack import classauth, classbroker, kafka, loginprobe

pytestmark = pytest.mark.stack


def send(login: KafkaLogin, topic: str, value: dict | bytes) -> str:
    """Send one record as ``login``; "ok", or the name of the error Kafka answered."""
    producer = KafkaProducer(bootstrap_servers=login.broker, max_block_ms=5000, **classauth.client_options(login))
    try:
        body = value if isinstance(value, bytes) else json.dumps(value).encode()
        producer.send(topic, body).get(timeout=10)
        return "ok"
    except Exception as error:  # noqa: BLE001 - the refusal is what the test looks at
        return type(error).__name__
    finally:
        producer.close(timeout=2)


def roster(room, *names: str) -> str:
    """Make the module's roster ``names`` and run `stack up --class` on it; what it printed."""
    (room.state / "class.txt").write_text("\n".join(names) + "\n")
    said: list[str] = []
    classbroker.up(room.state / "class.txt", log=said.append)
    return "\n".join(said)


def password(name: str) -> str:
    return classauth.read_passwords(classbroker.paths(config.settings())["passwords"])[name]


def eventually(check, seconds: float = 120) -> bool:
    """``check()`` is true now or within ``seconds`` (the broker applies a changed login a moment after it is stored)."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def one_line(error: pytest.ExceptionInfo) -> str:
    line = str(error.value)
    assert "\n" not in line, line
    return line


# --------------------------------------------------------------------------- 1. the partition flood


def test_a_topic_with_more_partitions_than_allowed_is_refused_in_one_line(room):
    with pytest.raises(CourseError) as refused:
        kafka.ensure_topic(room.bootstrap, "xo.ada.flood", partitions=50, login=room.login("ada"))
    line = one_line(refused)
    assert line.startswith("Kafka refused: ada may not create topic xo.ada.flood (POLICY_VIOLATION): xo.ada.flood "
                           "asks for 50 partitions; the class broker allows at most 8 per topic (partitions.per.topic)")
    assert "xo.ada.flood" not in kafka.topics(room.bootstrap, login=room.login("ada"))


def test_a_learner_cannot_hold_more_topics_or_partitions_than_allowed(room):
    """mal floods in single requests of many topics (the quota, which would slow him down first, is lifted for him
    here): the policy stops him at his limits, whatever the request. Runs in seconds."""
    from kafka.admin import NewTopic

    from deliverylab.stack import classlimits, classquota, jars
    from deliverylab.stack.java import require_java

    roster(room, "ada", "bob", "mal")
    mal = KafkaLogin(room.bootstrap, "mal", password("mal"))
    admin = classbroker.admin_login()
    assert classquota.run_config_commands(require_java(), str(jars.classpath_dir("kafka") / "*"), admin, {
        "mal": ["--alter", "--add-config", "controller_mutation_rate=2147483647", "--entity-type", "users",
                "--entity-name", "mal"]}) == []
    try:
        with kafka.admin(room.bootstrap, login=mal) as client:
            big = client.create_topics([NewTopic(f"xo.mal.big{n}", 8, -1) for n in range(40)], raise_errors=False)
            refused = [t["error_message"] for t in big["topics"] if t["error_code"]]
            assert refused and all("(partitions.per.learner)" in m for m in refused), refused[:2]
            small = client.create_topics([NewTopic(f"xo.mal.small{n}", 1, -1) for n in range(150)], raise_errors=False)
        held = partitions_of(admin, "xo.mal.")
        assert sum(held.values()) <= classlimits.PARTITIONS_PER_LEARNER and len(held) <= classlimits.TOPICS_PER_LEARNER
        assert any("(partitions.per.learner)" in t["error_message"] or "(topics.per.learner)" in t["error_message"]
                   for t in small["topics"] if t["error_code"])
    finally:
        kafka.delete_topics(admin.broker, kafka.topics(admin.broker, "xo.mal.", login=admin), login=admin)


def partitions_of(admin: KafkaLogin, prefix: str) -> dict[str, int]:
    """``{topic: partitions}`` of the topics whose names start with ``prefix``, as admin sees them."""
    names = kafka.topics(admin.broker, prefix, login=admin)
    with kafka.admin(admin.broker, login=admin) as client:
        return {t["name"]: len(t["partitions"]) for t in client.describe_topics(names)} if names else {}


def test_retention_forever_and_huge_records_are_refused_on_create_and_on_alter(room):
    ada = room.login("ada")
    with pytest.raises(CourseError) as refused:
        kafka.ensure_topic(room.bootstrap, "xo.ada.keep-forever", partitions=1, config={"retention.ms": "-1"}, login=ada)
    assert "(POLICY_VIOLATION): retention.ms=-1 is outside what the class broker allows" in one_line(refused)
    kafka.ensure_topic(room.bootstrap, "xo.ada.07-what-breaks.retention", partitions=1, login=ada)
    with pytest.raises(CourseError) as refused:
        kafka.set_topic_config(room.bootstrap, "xo.ada.07-what-breaks.retention", {"max.message.bytes": "104857600"},
                               login=ada)
    assert one_line(refused) == (
        "Kafka refused: ada may not change the settings of topic xo.ada.07-what-breaks.retention (POLICY_VIOLATION): "
        "max.message.bytes=104857600 is outside what the class broker allows, 0 to 1048588 (max.message.bytes.max).")
    with pytest.raises(CourseError, match=r"segment.ms cannot be set on the class broker"):
        kafka.set_topic_config(room.bootstrap, "xo.ada.07-what-breaks.retention", {"segment.ms": "10"}, login=ada)
    kafka.set_topic_config(room.bootstrap, "xo.ada.07-what-breaks.retention", {"retention.ms": "600000"}, login=ada)
    # the controller commits the change; the broker that answers the describe applies it a moment later
    assert eventually(lambda: kafka.topic_configs(room.bootstrap, "xo.ada.07-what-breaks.retention",
                                                  login=ada).get("retention.ms") == "600000", seconds=120)


def test_lesson_02_grows_its_one_topic_and_no_other(room, as_learner):
    from deliverylab.modules import m02

    as_learner("ada")
    grown, other = "xo.ada.02-anatomy.grown", "xo.ada.02-anatomy.orders"
    m02.fill_partitions(room.bootstrap, grown, {0: 3})
    assert m02.add_partition(room.bootstrap, grown) == 1  # CreatePartitions: ALTER on that one topic
    kafka.ensure_topic(room.bootstrap, other, partitions=1)
    with pytest.raises(Exception, match="TopicAuthorizationFailed"):
        m02.add_partition(room.bootstrap, other, timeout_s=5)
    kafka.delete_topics(room.bootstrap, [grown, other])


# --------------------------------------------------------------------------- 2. a forged event, 3. a malformed one


def test_a_forged_event_from_another_learner_never_locks_ada_out(room, as_learner):
    """bob says hello "from ada", from another machine, dated years ahead, wherever he may write; ada's own
    `workshop join <her token>` still lets her in, and no board shows it as hers."""
    from deliverylab.workshop import feed, join

    bob = room.login("bob")
    forged = {"v": 1, "kind": "hello", "learner": "ada", "module": "01-three-guarantees", "machine": "bad0",
              "host": "bobs-pc", "at": "2031-01-01T00:00:00+00:00"}
    assert send(bob, "xo._board.ada", forged) == "TopicAuthorizationFailedError"  # only ada may write hers
    assert send(bob, config.CLASS_TOPIC, forged) != "ok"  # the shared class topic: no learner writes it any more
    assert send(bob, "xo._board.bob", forged) == "ok"  # his own: the board takes it as his, not ada's
    token = classauth.join_token(room.bootstrap, "ada", room.passwords["ada"])
    join.join(token, None, log=lambda m: None)  # not refused as "already in use by another machine"
    join.leave(log=lambda m: None)
    board_login = room.login("board")
    seen = feed.read_all_events(room.bootstrap, timeout_s=10, login=board_login)
    assert [e["learner"] for e in seen if e.get("machine") == "bad0"] == ["bob"]
    assert all(e["at"] < "2031" for e in seen)  # the broker's time, not the sender's


def test_a_malformed_event_never_stops_the_board_and_is_counted_in_one_line(room, capsys):
    from deliverylab.workshop import board

    bob = room.login("bob")
    bad = [{"v": 1, "kind": "progress", "learner": "bob", "module": "01-three-guarantees", "checks_passed": "many"},
           {"v": 1, "kind": "hello", "learner": "bob", "module": "01-three-guarantees", "machine": "cafe",
            "host": "pc\x1b[2J\x1b[31m"},
           {"v": 1, "kind": "hello", "learner": "bob", "module": "01-three-guarantees", "machine": "beef", "host": "pc-2"},
           b"not json at all"]
    for topic in ("xo._board.bob", config.CLASS_TOPIC):  # wherever he may write
        for value in bad:
            send(bob, topic, value)
    assert board.main(["--class", "--once"]) == 0  # again: a restarted board reads it all again
    assert board.main(["--class", "--once"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "pc\\x1b[2J\\x1b[31m" in out
    assert "events skipped: 2 malformed" in out


# --------------------------------------------------------------------------- 4. the roster, and the state files


def test_the_broker_matches_the_roster_a_removed_login_is_refused_a_readded_one_gets_a_new_token(room):
    from kafka.admin import (ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             ResourcePatternFilter, ResourceType)

    old = room.login("bob")
    said = roster(room, "ada")
    assert "removed bob" in said
    assert eventually(lambda: loginprobe.refused(room.bootstrap, old) is True)  # his password no longer logs in
    with kafka.admin(classbroker.admin_login().broker, login=classbroker.admin_login()) as client:
        acls, _ = client.describe_acls(ACLFilter("User:bob", None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                 ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
    assert acls == []
    said = roster(room, "ada", "bob")
    new = replace(old, password=password("bob"))
    assert new.password != old.password and "added bob" in said  # back, with a new password
    assert eventually(lambda: loginprobe.refused(room.bootstrap, new) is False
                      and loginprobe.refused(room.bootstrap, old) is True)
    assert kafka.ensure_topic(room.bootstrap, "xo.bob.04-at-least-once.back", partitions=1, login=new) is True
    room.passwords["bob"] = new.password
    assert loginprobe.refused(room.bootstrap, replace(old, username="admin", password=password("admin"))) is True


def test_the_instructors_state_is_readable_by_the_instructor_only(room):
    folder = classbroker.paths(config.settings())["dir"]
    assert (folder / "data" / "__cluster_metadata-0").is_dir()  # the KRaft log: every SCRAM salt and key
    loose = [str(p) for p in [folder, *folder.rglob("*")] if stat.S_IMODE(p.lstat().st_mode) & 0o077]
    assert loose == []


# --------------------------------------------------------------------------- the quota, connections, stop and start


def test_partitions_created_faster_than_the_quota_are_refused_and_the_course_says_so_in_one_line(room, monkeypatch):
    """One request of 20 topics of 4 partitions is more than the quota's burst of 60: the controller takes topics
    while bob's bucket lasts and refuses the rest (THROTTLING_QUOTA_EXCEEDED), however fast or slow the machine.
    The course's own line is checked with bob's rate lowered for the test (a refill of minutes, not seconds)."""
    from kafka.admin import NewTopic

    from deliverylab.stack import classquota, jars
    from deliverylab.stack.java import require_java

    bob, admin = KafkaLogin(room.bootstrap, "bob", password("bob")), classbroker.admin_login()
    config_command = [require_java(), str(jars.classpath_dir("kafka") / "*"), admin]
    try:
        with kafka.admin(room.bootstrap, login=bob) as client:
            codes = [t["error_code"] for t in client.create_topics([NewTopic(f"xo.bob.churn{n}", 4, -1)
                                                                    for n in range(20)], raise_errors=False)["topics"]]
        assert 0 in codes and 89 in codes, codes  # 89: THROTTLING_QUOTA_EXCEEDED, after the burst went through
        assert classquota.run_config_commands(*config_command, {"bob": [
            "--alter", "--add-config", "controller_mutation_rate=0.01", "--entity-type", "users",
            "--entity-name", "bob"]}) == []
        monkeypatch.setattr(kafka, "MUTATION_WAIT_S", 0)  # the course's own calls wait up to 30 s first
        with pytest.raises(CourseError) as refused:
            for n in range(2):  # the first may still find tokens in his bucket; the second finds none
                kafka.ensure_topic(room.bootstrap, f"xo.bob.again{n}", partitions=8, login=bob)
        line = one_line(refused)
        assert line.startswith("Kafka refused: bob may not create topic xo.bob.again")
        assert "(THROTTLING_QUOTA_EXCEEDED): partitions were created or deleted faster than the class broker " \
               "allows (controller_mutation_rate: 2 a second, bursts of 60)" in line
    finally:
        classquota.run_config_commands(*config_command, {"bob": [
            "--alter", "--delete-config", "controller_mutation_rate", "--entity-type", "users", "--entity-name", "bob"]})
        kafka.delete_topics(admin.broker, kafka.topics(admin.broker, "xo.bob.", login=admin), login=admin)


def test_one_machine_cannot_open_more_connections_than_allowed(room):
    """From 127.0.0.2 (another machine, to the broker: loopback and the instructor's address are exempt)."""
    from deliverylab.stack import classlimits

    host, port = room.bootstrap.split(":")
    held = []
    try:
        for _ in range(classlimits.CONNECTIONS_PER_IP):
            held.append(socket.create_connection((host, int(port)), timeout=5, source_address=("127.0.0.2", 0)))
        # once the broker has accepted them all (a moment on a busy machine), the next one is closed at once
        assert eventually(lambda: loginprobe.closed_at_once(room.bootstrap, source="127.0.0.2") is True)
        assert loginprobe.closed_at_once(room.bootstrap) is False  # this machine (loopback) is exempt
        assert loginprobe.refused(room.bootstrap, room.login("ada")) is False
    finally:
        for sock in held:
            sock.close()


def test_the_class_broker_stops_cleanly_with_many_partitions_and_starts_again(room):
    """Stopping waits as long as the broker makes progress closing its logs: a clean stop, never a kill."""
    from kafka.admin import NewTopic

    admin = classbroker.admin_login()
    with kafka.admin(admin.broker, login=admin) as client:  # admin's own topics: no learner's limit applies
        client.create_topics([NewTopic(f"load.t{n}", 50, -1) for n in range(40)], raise_errors=False)
    data = classbroker.paths(config.settings())["data"]
    deadline = time.monotonic() + 300
    while len(list(data.glob("load.t*-*"))) < 2000 and time.monotonic() < deadline:  # the broker made every log
        time.sleep(1)
    said: list[str] = []
    assert classbroker.down(log=said.append) is True
    assert not any("killed" in line for line in said), said
    assert (data / ".kafka_cleanshutdown").exists()  # Kafka's own mark of a clean stop: no log to recover
    up = roster(room, "ada", "bob")
    assert classbroker.status().pid and "roster: no change" in up
    assert loginprobe.refused(room.bootstrap, room.login("ada")) is False
    kafka.delete_topics(admin.broker, kafka.topics(admin.broker, "load.", login=admin), login=admin)


def test_a_class_broker_that_cannot_start_ends_in_one_line_that_says_what_to_do(room):
    classbroker.down(log=lambda m: None)
    meta = classbroker.paths(config.settings())["data"] / "meta.properties"
    kept = meta.read_text()
    meta.write_text("version=1\nnode.id=77\ncluster.id=not-this-cluster\n")
    try:
        with pytest.raises(CourseError) as failed:
            roster(room, "ada", "bob")
        line = one_line(failed)
        assert line.startswith("The class broker exited while starting") and "stack down --class" in line
        assert "stack wipe --class" in line and str(classbroker.paths(config.settings())["log"]) in line
    finally:
        classbroker.down(log=lambda m: None)
        meta.write_text(kept)
    roster(room, "ada", "bob")  # the module's broker, back for what follows
    assert loginprobe.refused(room.bootstrap, room.login("ada")) is False
    assert os.environ.get("DELIVERYLAB_CLASS_PORT")
