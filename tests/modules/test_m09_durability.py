"""Module 09's acknowledgement and UDF-call helpers, without a cluster: what their lines say, and how
cluster_settings reads the brokers' answers. The runs themselves are lesson 09's checked cells."""
import contextlib
from types import SimpleNamespace

from deliverylab.modules.m09 import durability, repeats


def test_one_replica_left_reports_the_answers_and_both_readers():
    result = durability.OneReplicaLeft(
        sends={"acks=all": "refused (NotEnoughReplicasError)", "acks=1": "written"},
        while_alone={"a Kafka consumer": 0, "a Spark batch read": 0},
        after_rejoin={"a Kafka consumer": 1, "a Spark batch read": 1})
    assert result.lines() == [
        "acks=all  refused (NotEnoughReplicasError)",
        "acks=1    written",
        "records read while the follower is down: a Kafka consumer 0, a Spark batch read 0",
        "records read once it is back in sync:    a Kafka consumer 1, a Spark batch read 1"]


def test_an_acknowledged_record_missing_after_a_clean_election_is_lost():
    lost = durability.AckedThenLost(before=1, acknowledged="written", old_leader=1, follower=2, follower_in_isr=True,
                                    new_leader=2, after=1)
    assert lost.lines()[-1] == "the acknowledged record is lost: True"
    assert lost.lines()[1] == "the follower was in the in-sync replicas when the leader was killed: True"
    assert lost.lines()[2] == "the new leader was that follower (a clean election): True"


def test_a_record_that_survived_or_was_refused_is_not_called_lost():
    kept = durability.AckedThenLost(before=1, acknowledged="written", old_leader=1, new_leader=2, after=2)
    refused = durability.AckedThenLost(before=1, acknowledged="refused (KafkaTimeoutError)", old_leader=1,
                                       new_leader=2, after=1)
    for result in (kept, refused):
        assert result.lines()[-1] == "the acknowledged record is lost: False"
    assert "(a clean election): False" in durability.AckedThenLost(old_leader=1, follower=2, new_leader=None).lines()[2]
    # a leader change alone is not the follower's election (ELR may elect a replica that had left the ISR)
    other = durability.AckedThenLost(old_leader=1, follower=2, new_leader=3)
    assert other.lines()[1:3] == ["the follower was in the in-sync replicas when the leader was killed: False",
                                  "the new leader was that follower (a clean election): False"]


def _entry(value, *synonyms):
    return {"value": value, "synonyms": [{"value": v, "source": s} for s, v in synonyms]}


def test_cluster_settings_reads_the_default_next_to_the_brokers_value(monkeypatch):
    never = durability.NEVER
    configs = {"broker": {"1": {"min.insync.replicas": _entry("2", ("STATIC_BROKER_CONFIG", "2"), ("DEFAULT_CONFIG", "1")),
                                "unclean.leader.election.enable": _entry("false")}},
               "topic": {"t": {"flush.messages": _entry(never), "flush.ms": _entry(never)}}}
    client = SimpleNamespace(describe_configs=lambda resources, **kw: configs,
                             describe_features=lambda: {"eligible.leader.replicas.version": {"finalized": (1, 1)}})
    monkeypatch.setattr(durability.kafka, "admin", lambda bootstrap: contextlib.nullcontext(client))
    monkeypatch.setattr(durability.brokers, "live_brokers", lambda bootstrap: {1, 2, 3})
    assert durability.cluster_settings("b:1", "t") == [
        "min.insync.replicas, Kafka's default: 1",
        "min.insync.replicas, this cluster's brokers: 2",
        "unclean.leader.election.enable: false",
        "flush.messages and flush.ms (fsync after so many records or ms): never, Kafka's default",
        "eligible leader replicas on: yes"]
    configs["topic"]["t"]["flush.ms"] = _entry("1000")
    client.describe_features = lambda: {}
    lines = durability.cluster_settings("b:1", "t")
    assert "'flush.ms': '1000'" in lines[3] and lines[4] == "eligible leader replicas on: no"


def test_udf_call_lines_name_the_action_the_mode_and_the_count():
    assert repeats.call_lines({("collect where x > 0", True): 200, ("count", True): 0}, rows=100) == [
        "collect where x > 0    deterministic (default)  200 calls for 100 rows",
        "count                  deterministic (default)  0 calls for 100 rows"]
    assert "asNondeterministic()     100 calls" in repeats.call_lines({("collect where x > 0", False): 100})[0]
