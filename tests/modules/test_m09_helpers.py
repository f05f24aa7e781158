"""Module 09's helpers that need no cluster: the Outbox, what a run reports, moving the kernel onto the clusters."""
import threading
from types import SimpleNamespace

import pytest

from deliverylab import ledger
from deliverylab.config import CourseError
from deliverylab.modules.m09 import clusters, executors, leaders
from deliverylab.modules.m09.executors import ExecutorKill, Outbox, reconcile_outbox

PRODUCED = [{"order_id": f"o-{n}", "amount": "5.00"} for n in range(4)]


def test_the_outbox_delivers_every_call_without_a_key(tmp_path):
    box = Outbox(tmp_path / "box")
    assert box.send("o-1") and box.send("o-1", attempt=1)
    assert box.delivered() == ["o-1", "o-1"]
    assert box.calls() == [(0, "o-1"), (1, "o-1")]


def test_the_outbox_delivers_a_key_once_and_records_every_call(tmp_path):
    box = Outbox(tmp_path / "box")
    assert box.send("o-1", 0, key="o-1") is True
    assert box.send("o-1", 1, key="o-1") is False
    assert box.send("o-2", 1, key="o/2 with spaces") is True  # any text is a key
    assert box.delivered() == ["o-1", "o-2"]
    assert len(box.calls()) == 3


def test_two_tasks_sending_the_same_key_at_once_deliver_it_once(tmp_path):
    box = Outbox(tmp_path / "box")
    results = []
    threads = [threading.Thread(target=lambda: results.append(box.send("o-9", 0, key="o-9"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True] and box.delivered() == ["o-9"]


def test_the_outbox_records_each_tasks_attempts_when_the_task_is_named(tmp_path):
    box = Outbox(tmp_path / "box")
    box.send("o-1", 0, task=0)
    box.send("o-1", 1, task=0)   # the killed task's retry
    box.send("o-2", 0, task=1)
    box.send("o-3")              # a caller that names no task (the lab's tests, an older log)
    assert box.calls() == [(0, "o-1"), (1, "o-1"), (0, "o-2"), (0, "o-3")]
    assert box.attempts_per_task() == {0: {0, 1}, 1: {0}}
    run = ExecutorKill(attempts_per_task=box.attempts_per_task())
    assert run.task_line() == "tasks of the batch: 2 | ran a second attempt: 1 | ran once: 1"


def test_an_empty_outbox_has_no_calls(tmp_path):
    assert Outbox(tmp_path / "never").calls() == [] and Outbox(tmp_path / "never").delivered() == []


def run_where_the_first_attempt_died_after(k, tmp_path):
    box = Outbox(tmp_path / "box")
    for attempt, ids in ((0, PRODUCED[:k]), (1, PRODUCED)):
        for order in ids:
            box.send(order["order_id"], attempt)
    return ExecutorKill(produced=PRODUCED, table=ledger.reconcile(PRODUCED, PRODUCED), killed=[1],
                        notified=reconcile_outbox(PRODUCED, box), calls=box.calls(), on_cluster=True)


def test_a_run_reports_the_retry_and_where_the_repeats_came_from(tmp_path):
    run = run_where_the_first_attempt_died_after(2, tmp_path)
    assert run.retried and run.calls_per_attempt == {0: 2, 1: 4}
    assert run.notified.duplicated_ids == ("o-0", "o-1") and run.twice_from_killed_attempt
    assert run.lines() == ["ran on the Spark cluster: True",
                           "executors killed mid-task: True",
                           "the killed task ran again (a second attempt): True",
                           "delta table:   verdict: exactly-once (produced=4 lost=0 duplicated=0)",
                           "notifications: at-least-once (lost=0, duplicated: some)"]


def test_a_run_without_a_second_attempt_is_not_a_retry(tmp_path):
    run = run_where_the_first_attempt_died_after(0, tmp_path)
    run.calls = [(0, i) for _, i in run.calls]
    assert not run.retried


def test_a_trial_call_shows_an_unfinished_key_in_the_notebook_before_spark_runs():
    def unfinished(call):
        raise NotImplementedError("TODO")

    with pytest.raises(NotImplementedError):
        executors.kill_an_executor_mid_batch(None, None, key=unfinished)


def test_a_leader_kill_reports_the_election_and_both_ledgers():
    exact = ledger.reconcile(PRODUCED, PRODUCED)
    result = leaders.LeaderKill(produced=PRODUCED, killed=2, new_leader=3, in_topic=exact, table=exact)
    assert result.lines() == ["leader of partition 0 killed: True",
                              "a new leader was elected from the in-sync replicas: True",
                              "producer errors: none",
                              "in the topic: verdict: exactly-once (produced=4 lost=0 duplicated=0)",
                              "in the Delta table the stream wrote: verdict: exactly-once (produced=4 lost=0 duplicated=0)"]
    assert "a new leader was elected from the in-sync replicas: False" in \
        leaders.LeaderKill(killed=2, new_leader=2).lines()


def test_the_lessons_settings_are_the_safe_ones():
    assert leaders.SAFE_PRODUCER == {"acks": "all", "enable_idempotence": True}
    assert leaders.SAFE_TOPIC == {"replication_factor": 3, "min.insync.replicas": "2"}


@pytest.fixture
def both_clusters_up(monkeypatch):
    from deliverylab.stack import brokers, cluster

    monkeypatch.setattr(cluster, "up", lambda log: SimpleNamespace(alive=2))
    monkeypatch.setattr(brokers, "up", lambda log: SimpleNamespace(live={1, 2, 3}))
    for name in ("DELIVERYLAB_SPARK_MASTER", "DELIVERYLAB_BROKER"):
        monkeypatch.setenv(name, "")  # recorded, so the value use_the_clusters() sets is undone after the test
        monkeypatch.delenv(name)


def test_using_the_clusters_sets_the_two_settings(both_clusters_up, monkeypatch):
    import os

    from pyspark.sql import SparkSession

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    lines = clusters.use_the_clusters(log=lambda m: None)
    assert os.environ["DELIVERYLAB_SPARK_MASTER"] == "spark://127.0.0.1:7077"
    assert os.environ["DELIVERYLAB_BROKER"] == "127.0.0.1:9192,127.0.0.1:9202,127.0.0.1:9212"
    assert lines == ["spark     spark://127.0.0.1:7077: 2 workers alive",
                     "kafka     3 brokers (1, 2, 3), new topics get 3 replicas, min.insync.replicas=2"]


def test_a_kernel_with_a_local_session_is_told_to_restart(both_clusters_up, monkeypatch):
    from pyspark.sql import SparkSession

    local = SimpleNamespace(sparkContext=SimpleNamespace(master="local[2]"))
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: local))
    with pytest.raises(CourseError, match="Restart the kernel"):
        clusters.use_the_clusters(log=lambda m: None)


def test_clearing_a_run_removes_its_topic_and_folders_and_nothing_else(tmp_path, monkeypatch):
    from deliverylab.stack import kafka

    deleted = []
    monkeypatch.setattr(kafka, "delete_topics", lambda bootstrap, names: deleted.extend(names))
    folder = tmp_path / "lesson"
    lesson = SimpleNamespace(bootstrap="b:1", topic=lambda name: f"xo.ada.09.{name}",
                             table=lambda name: str(folder / "tables" / name),
                             checkpoint=lambda name: str(folder / "checkpoints" / name),
                             path=lambda *parts: str(folder.joinpath(*parts)))
    for made in ("tables/run", "checkpoints/run", "run/outbox", "tables/other"):
        (folder / made).mkdir(parents=True)
    assert executors.clear_run(lesson, "run") == "xo.ada.09.run"
    assert deleted == ["xo.ada.09.run"]
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) == ["checkpoints", "tables", "tables/other"]


def test_a_flush_that_cannot_finish_counts_as_a_failed_send_instead_of_waiting_for_ever():
    from kafka.errors import KafkaTimeoutError

    waited, failures = [], []

    class Stuck:  # a partition whose only copy died: kafka-python's flush() alone would never return
        def flush(self, timeout=None):
            waited.append(timeout)
            raise KafkaTimeoutError("Timeout after waiting for 45 secs.")

    leaders._flush_within(Stuck(), lambda error: failures.append(type(error).__name__))
    assert waited == [leaders.FLUSH_TIMEOUT_S] and failures == ["KafkaTimeoutError"]


def test_a_new_topic_s_settings_are_read_once_the_brokers_agree(monkeypatch):
    # the deleted topic's settings from a broker that has not caught up, then the new topic's
    answers = iter([{"min.insync.replicas": "2", "unclean.leader.election.enable": "true"},
                    {"min.insync.replicas": "2"}, {"min.insync.replicas": "2", "unclean.leader.election.enable": "true"},
                    {"min.insync.replicas": "2"}, {"min.insync.replicas": "2"}, {"min.insync.replicas": "2"}])
    monkeypatch.setattr(leaders.time, "sleep", lambda s: None)
    asked = []
    leaders.wait_for_own_config(lambda: asked.append(1) or next(answers), {"min.insync.replicas": "2"})
    assert len(asked) == 6  # three in a row after the last stale answer


def test_brokers_that_never_agree_end_in_one_line(monkeypatch):
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(leaders.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(leaders.time, "sleep", lambda s: None)
    with pytest.raises(leaders.CourseError, match="has not caught up. Run the cell again"):
        leaders.wait_for_own_config(lambda: {"unclean.leader.election.enable": "true"}, {})
