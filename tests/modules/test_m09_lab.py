"""Lab 09's checks accept right answers written several ways and reject planted wrong ones, on the run shown and on
hidden runs (no cluster needed).

Exercise 1's run shown is played on the real Outbox: a task's first attempt notifies some orders and dies, the retry
(attempt 1) notifies them all, each call carrying the key the answer computes. Its hidden run is the lab's own
(hidden_runs.retried_tasks, played on an Outbox in a temporary folder), as the check makes it.
"""
import hashlib
import random
import uuid
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks, hidden
from deliverylab.modules.m09 import hidden_runs, lab, leaders
from deliverylab.modules.m09.executors import ExecutorKill, Outbox, reconcile_outbox
from seeds import seed_fixture

PRODUCED = [{"order_id": f"o-{n:06d}", "amount": "10.00"} for n in range(12)]
CALLS = [{"order_id": o["order_id"], "partition": n % 2, "offset": n // 2} for n, o in enumerate(PRODUCED)]

RIGHT_KEYS = {"order id": lambda call: call["order_id"],
              "partition and offset": lambda call: f"{call['partition']}:{call['offset']}",
              "a tuple of both": lambda call: (call["partition"], call["offset"]),
              "a hash of the order id": lambda call: hashlib.sha256(call["order_id"].encode()).hexdigest()}
#: name: (key, where it goes wrong, the check that fails)
LOST, TWICE = "every order's notification delivered", "no notification delivered twice"
WRONG_KEYS = {
    "no key": (None, "the run above", TWICE),
    "a new uuid per call": (lambda call: str(uuid.uuid4()), "the run above", TWICE),
    "the attempt in the key": (lambda call: f"{call['order_id']}-{call['attempt']}", "the run above", TWICE),
    "one key for every order": (lambda call: "notification", "the run above", LOST),
    "the offset alone": (lambda call: str(call["offset"]), "the run above", LOST),
    # kind 2: right on the demo's two partitions of about a hundred records and its 200 order ids
    "partition and offset side by side": (lambda call: f"{call['partition']}{call['offset']}", "a hidden run", LOST),
    "partition times a thousand plus offset": (lambda call: str(call["partition"] * 1000 + call["offset"]),
                                               "a hidden run", LOST),
    "the order id's last three digits": (lambda call: call["order_id"][-3:], "a hidden run", LOST),
    # kind 1: the run's 200 orders, read off the lab's text, as the room each partition gets
    "partition times 200 plus offset": (lambda call: str(call["partition"] * 200 + call["offset"]), "a hidden run", LOST),
}


seed = seed_fixture()


def run_with(tmp_path, key, killed_after=5) -> ExecutorKill:
    outbox = Outbox(tmp_path / "outbox")
    for attempt, calls in ((0, CALLS[:killed_after]), (1, CALLS)):  # the first attempt dies after a few rows
        for call in calls:
            outbox.send(call["order_id"], attempt, key(dict(call, attempt=attempt)) if key else None)
    return ExecutorKill(produced=PRODUCED, table=ledger.reconcile(PRODUCED, PRODUCED), killed=[4242],
                        notified=reconcile_outbox(PRODUCED, outbox), calls=outbox.calls(), on_cluster=True)


def fresh():
    return Checks("09-beyond-the-driver-lab", record=False)


def statuses(checks):
    return {r.description: r.status for r in checks.results}


def lines_of(checks, description):
    return "\n".join(line for r in checks.results if r.description == description for line in r.lines)


@pytest.mark.parametrize("name", RIGHT_KEYS)
def test_exercise_1_keys_that_stay_the_same_across_attempts_pass_on_the_hidden_batch_too(tmp_path, seed, name):
    run = run_with(tmp_path, RIGHT_KEYS[name])
    checks = fresh()
    lab.check_idempotency_key(checks, lambda: run, lambda: RIGHT_KEYS[name])
    assert set(statuses(checks).values()) == {"PASS"}, checks.results


@pytest.mark.parametrize("name", WRONG_KEYS)
def test_exercise_1_keys_that_repeat_or_collide_fail_where_they_go_wrong(tmp_path, seed, name):
    key, where, failing = WRONG_KEYS[name]
    run = run_with(tmp_path, key)
    checks = fresh()
    lab.check_idempotency_key(checks, lambda: run, lambda: key)
    assert statuses(checks)[failing] == "FAIL", checks.results
    text = lines_of(checks, failing)
    assert f"on:       {where}" in text and "hint:" in text
    if where == "a hidden run":
        assert f"seed {seed}" in text and hidden.COPIED in text and "got the same key" in text


def test_exercise_1_rejects_a_run_without_a_retry(tmp_path):
    run = run_with(tmp_path, RIGHT_KEYS["order id"], killed_after=0)
    run.killed = []
    run.calls = [(0, c) for _, c in run.calls]
    checks = fresh()
    lab.check_idempotency_key(checks, lambda: run, lambda: RIGHT_KEYS["order id"])
    got = statuses(checks)
    assert got["an executor died mid-task and Spark ran the task again"] == "FAIL" and got[LOST] == "SKIP"


def test_exercise_1_says_skip_while_the_key_is_a_todo():
    def unfinished():
        raise NameError("name 'run' is not defined")

    checks = fresh()
    lab.check_idempotency_key(checks, unfinished, unfinished)
    assert set(statuses(checks).values()) == {"SKIP"}


def test_exercise_1_the_hidden_batch_names_a_changed_key():
    batch = hidden_runs.retried_tasks(random.Random(3))
    found = hidden_runs.notify_retried(batch, WRONG_KEYS["the attempt in the key"][0])
    assert found.notified.duplicated > 0 and "in attempt 0 and" in found.changed and found.shared is None


def _keys(batch, key):
    return [str(key({"order_id": o, "partition": t.partition, "offset": off, "attempt": 0}))
            for t in batch.tasks for off, o in t.records]


def test_exercise_1_hidden_batches_hold_every_hazard_for_every_seed():
    for n in range(500):
        batch = hidden_runs.retried_tasks(random.Random(n))
        records = [r for t in batch.tasks for r in t.records]
        assert len({o for _, o in records}) == len(records) == len(batch.produced), n
        for name in ("partition and offset side by side", "partition times a thousand plus offset",
                     "the order id's last three digits", "the offset alone", "partition times 200 plus offset"):
            keys = _keys(batch, WRONG_KEYS[name][0])
            assert len(set(keys)) < len(keys), (n, name)
        for name in ("order id", "partition and offset"):
            keys = _keys(batch, RIGHT_KEYS[name])
            assert len(set(keys)) == len(keys), (n, name)
        killed = [t for t in batch.tasks if t.died_after]
        assert killed and any(len(t.died_after) == 2 for t in killed), n
        assert all(1 <= k < len(t.records) for t in killed for k in t.died_after), n
        assert any(not t.died_after for t in batch.tasks) or len(killed) == len(batch.tasks)
        assert max(int(o[2:]) for _, o in records) >= 1000 and len(batch.tasks) >= 5


# --------------------------------------------------------------------------- exercise 2


EXACT = ledger.reconcile(PRODUCED, PRODUCED)


def leader_kill(**changes):
    drawn = lab.hidden_kill()
    safe = dict(topic={"replication_factor": 3, "min.insync.replicas": "2",
                       "unclean.leader.election.enable": leaders.BROKER_DEFAULT},
                settings={"acks": "all", "enable_idempotence": True}, in_topic=EXACT, table=EXACT, refused=None,
                partition=drawn["partition"], kill_after=drawn["kill_after"])
    return SimpleNamespace(**{**safe, **changes})


def test_exercise_2_passes_the_safe_settings(seed):
    checks = fresh()
    result = leader_kill()
    lab.check_replication(checks, lambda: result)
    assert set(statuses(checks).values()) == {"PASS"}


@pytest.mark.parametrize("planted, failing", [
    (dict(settings={"acks": 1, "enable_idempotence": False}), "the producer waits for every in-sync replica"),
    (dict(settings={"acks": "all", "enable_idempotence": False}), "the producer is idempotent"),
    (dict(topic={"replication_factor": 3, "min.insync.replicas": "1"}), "a write with acks=all needs two copies in sync"),
    (dict(topic={"replication_factor": 3, "min.insync.replicas": leaders.BROKER_DEFAULT}),  # the cluster's default
     "a write with acks=all needs two copies in sync"),
    (dict(topic={"replication_factor": 1, "min.insync.replicas": "2"}), "every partition has a copy on each of the three brokers"),
    (dict(topic={"replication_factor": 3, "min.insync.replicas": "2", "unclean.leader.election.enable": "true"}),
     "no replica out of sync can become the leader"),
    (dict(in_topic=ledger.reconcile(PRODUCED, PRODUCED + PRODUCED[:3])), "the topic: every order exactly once"),
    (dict(table=ledger.reconcile(PRODUCED, PRODUCED[2:])), "the Delta table the stream wrote: every order exactly once"),
])
def test_exercise_2_rejects_settings_that_lose_or_duplicate(seed, planted, failing):
    checks = fresh()
    result = leader_kill(**planted)
    lab.check_replication(checks, lambda: result)
    assert statuses(checks)[failing] == "FAIL"
    if failing.startswith(("the topic", "the Delta")):  # the outcome of the hidden leader kill
        assert f"seed {seed}" in lines_of(checks, failing)


def test_exercise_2_a_refused_setting_is_one_fail_line_and_the_rest_skip():
    line = "Kafka refused topic xo.ada.09.my-topic: Unknown topic config name: min.insync.replica (InvalidConfigurationError)"
    result = leader_kill(refused=line, topic={})
    checks = fresh()
    lab.check_replication(checks, lambda: result)
    got = statuses(checks)
    assert got["Kafka took your settings"] == "FAIL" and line in lines_of(checks, "Kafka took your settings")
    assert [s for d, s in got.items() if d != "Kafka took your settings"] == ["SKIP"] * 7


def test_exercise_2_a_run_made_without_the_hidden_kill_fails(seed):
    drawn = lab.hidden_kill()
    result = leader_kill(partition=1 - drawn["partition"])
    checks = fresh()
    lab.check_replication(checks, lambda: result)
    assert "lab.hidden_kill()" in lines_of(checks, "the topic: every order exactly once")


def test_the_hidden_kill_is_drawn_per_seed_and_kept_out_of_the_lines(monkeypatch):
    drawn = set()
    for n in range(40):
        monkeypatch.setenv(hidden.SEED_ENV, str(n + 1000))
        kill = lab.hidden_kill()
        assert kill["hidden"] and kill["partition"] in (0, 1) and 100 <= kill["kill_after"] <= 300
        drawn.add(kill["partition"])
    assert drawn == {0, 1}
    shown = leaders.LeaderKill(killed=2, new_leader=3, partition=1, hidden=True)
    assert shown.lines()[0] == "a partition's leader killed mid-stream: True"
    assert leaders.LeaderKill(refused="kafka-python refused ...").lines() == ["kafka-python refused ..."]


def test_kafkas_refusal_of_a_topic_is_one_line():
    answer = {"topics": [{"name": "t", "error_code": 40, "error_message": "Unknown topic config name: min.insync.replica"}]}
    assert leaders.refusal(answer) == "Unknown topic config name: min.insync.replica (InvalidConfigurationError)"
    assert leaders.refusal({"topics": [{"name": "t", "error_code": 0, "error_message": None}]}) is None
    assert "InvalidReplicationFactorError" in leaders.refusal({"topics": [{"name": "t", "error_code": 38}]})
    assert leaders._as_text(2) == "2" and leaders._as_text(False) == "false"


def test_kafka_pythons_refusal_of_a_producer_setting_is_one_line():
    line = leaders.producer_refusal("127.0.0.1:1", {"enable.idempotence": True})
    assert "\n" not in line and "Unrecognized configs" in line and "underscores" in line
    line = leaders.producer_refusal("127.0.0.1:1", {"retries": 0, "enable_idempotence": True, "api_version": (4, 0)})
    assert line.startswith("KafkaConfigurationError") and "retries=0" in line
