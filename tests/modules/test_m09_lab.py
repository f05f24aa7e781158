"""Lab 09's checks accept the right answers and reject planted wrong ones (no cluster needed).

Exercise 1 is played on the real Outbox: a task's first attempt notifies some orders and dies,
the retry (attempt 1) notifies them all, each call carrying the key the answer computes.
"""
import uuid
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.checks import Checks
from deliverylab.modules.m09 import lab
from deliverylab.modules.m09.executors import ExecutorKill, Outbox, reconcile_outbox

PRODUCED = [{"order_id": f"o-{n}", "amount": "10.00"} for n in range(12)]
CALLS = [{"order_id": o["order_id"], "partition": n % 2, "offset": n // 2} for n, o in enumerate(PRODUCED)]

RIGHT_KEYS = {"order id": lambda call: call["order_id"],
              "partition and offset": lambda call: f"{call['partition']}:{call['offset']}"}
WRONG_KEYS = {"no key": None,
              "a new uuid per call": lambda call: str(uuid.uuid4()),
              "the attempt in the key": lambda call: f"{call['order_id']}-{call['attempt']}",
              "one key for every order": lambda call: "notification"}


def run_with(tmp_path, key, killed_after=5) -> ExecutorKill:
    outbox = Outbox(tmp_path / "outbox")
    for attempt, calls in ((0, CALLS[:killed_after]), (1, CALLS)):  # the first attempt dies after a few rows
        for call in calls:
            outbox.send(call["order_id"], attempt, key(dict(call, attempt=attempt)) if key else None)
    return ExecutorKill(produced=PRODUCED, table=ledger.reconcile(PRODUCED, PRODUCED), killed=[4242],
                        notified=reconcile_outbox(PRODUCED, outbox), calls=outbox.calls(), on_cluster=True)


@pytest.fixture
def checks():
    return Checks("09-beyond-the-driver-lab", record=False)


def statuses(checks):
    return {r.description: r.status for r in checks.results}


@pytest.mark.parametrize("name", RIGHT_KEYS)
def test_exercise_1_passes_a_key_that_stays_the_same_across_attempts(checks, tmp_path, name):
    run = run_with(tmp_path, RIGHT_KEYS[name])
    lab.check_idempotency_key(checks, lambda: run)
    assert set(statuses(checks).values()) == {"PASS"}


@pytest.mark.parametrize("name", WRONG_KEYS)
def test_exercise_1_rejects_keys_that_repeat_or_collide(checks, tmp_path, name):
    run = run_with(tmp_path, WRONG_KEYS[name])
    lab.check_idempotency_key(checks, lambda: run)
    got = statuses(checks)
    assert "FAIL" in got.values(), got
    if name == "one key for every order":
        assert got["every order's notification delivered"] == "FAIL"
    else:
        assert got["no notification delivered twice"] == "FAIL"


def test_exercise_1_rejects_a_run_without_a_retry(checks, tmp_path):
    run = run_with(tmp_path, RIGHT_KEYS["order id"], killed_after=0)
    run.killed = []
    outbox_calls = [(0, c) for _, c in run.calls]
    run.calls = outbox_calls
    lab.check_idempotency_key(checks, lambda: run)
    assert statuses(checks)["an executor died mid-task and Spark ran the task again"] == "FAIL"


def test_exercise_1_says_skip_while_the_key_is_a_todo(checks):
    def unfinished():
        raise NameError("name 'run' is not defined")

    lab.check_idempotency_key(checks, unfinished)
    assert set(statuses(checks).values()) == {"SKIP"}


EXACT = ledger.reconcile(PRODUCED, PRODUCED)
SAFE = SimpleNamespace(topic={"replication_factor": 3, "min.insync.replicas": "2"},
                       settings={"acks": "all", "enable_idempotence": True}, in_topic=EXACT, table=EXACT)


def leader_kill(**changes):
    return SimpleNamespace(**{**vars(SAFE), **changes})


def test_exercise_2_passes_the_safe_settings(checks):
    lab.check_replication(checks, lambda: SAFE)
    assert set(statuses(checks).values()) == {"PASS"}


@pytest.mark.parametrize("planted, failing", [
    (dict(settings={"acks": 1, "enable_idempotence": False}), "the producer waits for every in-sync replica"),
    (dict(settings={"acks": "all", "enable_idempotence": False}), "the producer is idempotent"),
    (dict(topic={"replication_factor": 3, "min.insync.replicas": "1"}), "a write with acks=all needs two copies in sync"),
    (dict(topic={"replication_factor": 1, "min.insync.replicas": "2"}), "every partition has a copy on each of the three brokers"),
    (dict(in_topic=ledger.reconcile(PRODUCED, PRODUCED + PRODUCED[:3])), "the topic: every order exactly once"),
    (dict(table=ledger.reconcile(PRODUCED, PRODUCED[2:])), "the Delta table the stream wrote: every order exactly once"),
])
def test_exercise_2_rejects_settings_that_lose_or_duplicate(checks, planted, failing):
    lab.check_replication(checks, lambda: leader_kill(**planted))
    assert statuses(checks)[failing] == "FAIL"
