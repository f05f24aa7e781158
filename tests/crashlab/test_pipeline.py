"""The crash lab's supervisor and panel on a real driver process: errors, replay marks, buttons."""
from __future__ import annotations

from pathlib import Path

import pytest

from deliverylab import CourseError, crashlab
from deliverylab.stack import kafka

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def lesson():
    from deliverylab import setup

    return setup("test-crashlab", quiet=True)


def test_pipelines_of_one_lesson_get_their_own_topics(lesson):
    a = crashlab.Pipeline(lesson, "at_least_once")
    b = crashlab.Pipeline(lesson, "delta_txn")
    assert a.topic != b.topic and a.topic.startswith(lesson.topic_prefix)
    assert a.status_line() == "at_least_once: not started, no batch yet"
    with pytest.raises(CourseError, match="never started"):
        a.restart()
    with pytest.raises(CourseError, match="not running"):
        a.crash("after_commit")


def test_unknown_variant_lists_the_pipelines(lesson):
    with pytest.raises(CourseError, match="at_least_once"):
        crashlab.Pipeline(lesson, "at_least_twice")


def test_panel_crash_restart_and_replay_marks(lesson):
    from deliverylab import charts
    from deliverylab.crashlab.panel import CrashPanel

    pipe = crashlab.Pipeline(lesson, "at_least_once", name="panel", max_per_batch=200).start()
    try:
        pipe.produce(300)
        pipe.drain()

        # clear errors on misuse, while it runs
        with pytest.raises(CourseError, match="is running; there is nothing to restart"):
            pipe.restart()
        with pytest.raises(CourseError, match="already running"):
            pipe.start()
        with pytest.raises(CourseError) as err:
            pipe.crash("after_sink")
        for point in ("before_sink_write", "mid_sink_write", "after_sink_write", "after_commit", "now"):
            assert point in str(err.value)
        assert pipe.running

        panel = CrashPanel(pipe, orders=200)
        assert "running" in panel.status.value
        assert list(panel.point.options)[-1] == "now"
        bundle = panel._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle

        # the button and the Python twin are the same method: click the button
        panel.point.value = "after_sink_write"
        panel.crash_button.click()
        crash = pipe.crashes[-1]
        assert crash.point == "after_sink_write" and crash.by_sigkill and crash.returncode == -9
        assert not pipe.running
        st = pipe.status()
        assert st["state"] == "crashed (SIGKILL)" and st["last_batch"] == crash.batch
        assert st["offsets_written"] and not st["commit_written"]
        assert any("driver killed at after_sink_write" in m for m in panel.messages)
        assert any("will re-run on restart" in m for m in panel.messages)
        assert f"commits/{crash.batch} missing" in panel.status.value

        # a crash needs a running driver: the button shows the error instead of raising
        panel.crash_button.click()
        assert "not running" in panel.messages[-1]

        panel.restart_button.click()
        assert pipe.running and "restarted: run 2" in panel.messages[-1]
        pipe.drain()
        line = panel.refresh()
        assert "running" in line and "rows in sink" in line

        # replay marks: the crashed attempt wrote the batch, the restart wrote it again
        marks = [b for b in pipe.batches() if b["batch_id"] == crash.batch]
        assert [(b["run"], b["replay"], b["crashed"]) for b in marks] == [(1, False, True), (2, True, False)]
        assert not any(b["replay"] for b in pipe.batches() if b["batch_id"] != crash.batch)
        assert pipe.crash_marks() == [{"batch_id": crash.batch, "point": "after_sink_write"}]
        charts.batch_timeline(pipe.batches(), pipe.crash_marks())

        view = panel.before_after()
        assert "before crash" in view and "after restart" in view
        assert f"commits/{crash.batch} missing" in view
        assert "offsets" in str(panel.show_inspector())

        # "now": both processes of the driver die at once
        now = panel.crash("now")
        assert now.point == "now" and now.by_sigkill
        panel.restart()
        pipe.drain()
        pipe.stop()
        assert pipe.status()["state"] == "stopped"
        # the panel follows a stop it did not make itself (as after lesson.cleanup()), and
        # offers only what works now: no crash, a restart
        assert "stopped" in panel.status.value and "press Restart" in panel.status.value
        assert panel.crash_button.disabled and not panel.restart_button.disabled

        panel.restart_button.click()
        assert pipe.running and "running" in panel.status.value and not panel.crash_button.disabled
        pipe.stop()

        ledger = pipe.ledger()
        assert ledger.lost == 0
        batch_ids = set(pipe.batch_orders(crash.batch, run=1))
        assert set(ledger.duplicated_ids) >= batch_ids  # the after_sink_write batch, twice
        charts.duplicate_count_chart([ledger])
        # a clean stop leaves no py4j listener error in the log
        assert "Error while sending a command" not in pipe.driver.home.log.read_text()
    finally:
        pipe.stop()


def test_the_lessons_end_stops_a_pipeline_no_panel_shows_and_the_next_move_restarts_it(lesson):
    """lesson.complete() frees the drivers of finished demos (a panel's pipeline stays); a learner who then
    runs one of their cells again finds the pipeline started again from its checkpoint, not an error."""
    pipe = crashlab.Pipeline(lesson, "at_least_once", name="released", max_per_batch=100).start()
    try:
        pipe.produce(50)
        pipe.drain()
        lesson.complete()
        assert not pipe.running and pipe.status()["state"] == "stopped"
        pipe.produce(50)  # the cell run again
        assert pipe.running and pipe.starts == 2
        pipe.drain()
        done = pipe.committed_offsets()
        assert all(done.get(p, -1) >= end for p, end in kafka.end_offsets(lesson.bootstrap, pipe.topic).items())
    finally:
        pipe.stop()


def test_a_failing_driver_shows_its_error(lesson):
    pipe = crashlab.Pipeline(lesson, "at_least_once", name="broken", max_per_batch=100)
    Path(pipe.sink).parent.mkdir(parents=True, exist_ok=True)
    Path(pipe.sink).write_text("a file where the sink folder should be\n")
    try:
        with pytest.raises(CourseError) as err:
            # a new query writes its (empty) batch 0 before start() returns, so the failure
            # may surface already there; otherwise with the first orders
            pipe.start()
            pipe.produce(50)
            pipe.drain(timeout_s=90)
        assert "stopped with an error" in str(err.value)
        st = pipe.status()
        assert st["state"].startswith("failed (exit 1)")
        assert "Parent path is not a directory" in st["error"]  # Hadoop's own words, in the status
        assert not any(ln.strip().startswith("at ") for ln in st["error"].splitlines())  # no stack frames
        assert "Logical Plan" not in st["error"]
        line = pipe.status_line()
        assert "failed" in line and st["error"] in line
        assert pipe.driver.home.error.exists()
        with pytest.raises(CourseError, match="not running"):
            pipe.crash("after_commit")
    finally:
        pipe.stop()


def test_a_driver_that_fails_before_its_query_starts(lesson):
    pipe = crashlab.Pipeline(lesson, "sqlite_upsert", name="nodb")
    Path(pipe.sink).mkdir(parents=True)  # a folder where the database file should be
    try:
        with pytest.raises(CourseError) as err:
            pipe.start()
        assert "unable to open database file" in str(err.value)
        st = pipe.status()
        assert st["state"] == "failed (exit 1)"
        assert "sqlite3.OperationalError: unable to open database file" in st["error"]
        assert "Traceback" not in st["error"]
    finally:
        pipe.stop()


def test_mid_sink_write_fires_in_a_batch_read_from_one_topic_partition(lesson):
    """A producer's request can reach the broker partition by partition, so a batch may read one
    topic partition only. The driver's minPartitions=2 still gives it a Spark partition 1, where
    the mid-write gate fires (without it this batch had one task, and the crash never came)."""
    from kafka import KafkaProducer

    from deliverylab.orders import encode, generate_orders

    pipe = crashlab.Pipeline(lesson, "at_least_once", name="one-partition").start()
    try:
        pipe.produce(20)
        pipe.drain()
        pipe.arm("mid_sink_write")
        orders = generate_orders(60, start=len(pipe.produced))
        producer = KafkaProducer(bootstrap_servers=lesson.bootstrap, acks="all")
        for order in orders:
            producer.send(pipe.topic, key=order["order_id"].encode(), value=encode(order), partition=0)
        producer.close()
        pipe.produced.extend(orders)
        crash = pipe.wait_for_crash("mid_sink_write", timeout_s=60)
        assert crash.point == "mid_sink_write" and crash.by_sigkill
        assert set(pipe.batch_orders(crash.batch, crash.run)) <= {o["order_id"] for o in orders}
        pipe.restart()
        pipe.drain()
        assert pipe.ledger().lost == 0
    finally:
        pipe.stop()
