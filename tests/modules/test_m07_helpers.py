"""Module 07's helpers that need no broker: notification counts, Spark's error line, the poison-pill file."""
import pytest

from deliverylab.config import CourseError
from deliverylab.modules.m07 import kernel, notifications, quarantine, restarts


def test_a_replayed_batch_notified_twice_is_counted():
    sent = [("-", 0, 0), ("-", 1, 200), ("-", 2, 200), ("-", 2, 200), ("-", 3, 200)]
    got = notifications.summarise(sent, produced=600)
    assert (got.repeated_batches, got.orders_notified, got.verdict) == (1, 800, "duplicated")
    assert got.lines() == ["batches notified more than once: 1",
                           "orders notified = orders produced: False (more notified)"]


def test_keyed_notifications_match_the_orders():
    got = notifications.summarise([("q", 0, 0), ("q", 1, 200), ("q", 2, 100)], produced=300)
    assert got.verdict == "exactly-once"
    assert got.lines()[-1] == "orders notified = orders produced: True"


def test_the_same_batch_id_in_two_queries_is_not_a_repeat():
    got = notifications.summarise([("q1", 0, 10), ("q2", 0, 10)], produced=10)
    assert got.repeated_batches == 0 and got.verdict == "duplicated"


def test_missing_notifications_are_a_loss_and_a_missing_file_is_a_course_error(tmp_path):
    assert notifications.summarise([("q", 0, 0)], produced=10).verdict == "lost"
    with pytest.raises(CourseError, match="start the pipeline"):
        notifications.rows(str(tmp_path / "none.db"))


def test_first_line_keeps_the_cause_without_the_query_ids():
    error = ("[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: assertion failed: There are [1] "
             "sources in the checkpoint offsets and now there are [2] sources requested by the query. Cannot continue. "
             "SQLSTATE: XXKST\n=== Streaming Query ===\nIdentifier: ...")
    assert kernel.first_line(error) == ("There are [1] sources in the checkpoint offsets and now there are [2] "
                                        "sources requested by the query. Cannot continue.")
    loss = ("[STREAM_FAILED] Query [id = a, runId = b] terminated with exception: Some data may have been lost "
            "because they are not available in Kafka any more;\neither the data was aged out")
    assert kernel.first_line(loss) == "Some data may have been lost because they are not available in Kafka any more;"


def test_kafkas_data_loss_sentence_is_found_when_a_task_reports_it():
    class Captured(Exception):
        def __init__(self, text, cause=None):
            super().__init__(text)
            self._cause = cause

    inner = Captured("Cannot fetch offset 0 (GroupId: g, TopicPartition: t-0). " + kernel.KAFKA_DATA_LOSS + " either")
    wrapped = Captured("[STREAM_FAILED] Query [id = a, runId = b] terminated with exception: [TASK_WRITE_FAILED] "
                       "Task failed while writing rows to file:/x.", Captured("Job aborted", inner))
    assert kernel.first_line(wrapped) == kernel.KAFKA_DATA_LOSS


def test_the_poison_pill_file_keeps_its_empty_message():
    lines = quarantine.poison_lines()
    assert "" in lines and len(lines) == 26


def test_routed_counts_add_up():
    routed = quarantine.Routed(produced=3, good_ids=["o-1"], quarantined=[("x", "not valid JSON"), ("", "empty message")])
    assert routed.lines() == ["produced=3 good=1 quarantined=2", "produced = good + quarantined: True"]
    assert routed.reasons == {"empty message": 1, "not valid JSON": 1}


def test_a_restart_needs_a_known_starting_point():
    with pytest.raises(CourseError, match="earliest, latest"):
        restarts.delete_checkpoint_and_restart(object(), "beginning")
