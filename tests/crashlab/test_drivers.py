"""Driver processes: one per checkpoint, a standby booted ahead, none left behind by a notebook that ends."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from deliverylab import CourseError, crashlab
from deliverylab.crashlab import drivers
from deliverylab.stack import processes

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def lesson():
    from deliverylab import setup

    lesson = setup("test-drivers", quiet=True)
    yield lesson
    lesson.cleanup()


def test_a_second_driver_on_a_running_pipeline_is_refused(lesson):
    first = crashlab.Pipeline(lesson, "delta_sink").start()
    try:
        again = crashlab.Pipeline(lesson, "delta_sink")  # the same cell, run a second time
        with pytest.raises(CourseError) as err:
            again.start()
        message = str(err.value)
        assert f"driver pid {first.pid}" in message and "lesson.cleanup()" in message
        assert not again.running and first.running
        first.stop()
        again.start()  # once the first one has stopped, the new object may run it
        assert again.running
    finally:
        lesson.cleanup()


def test_a_driver_stopped_cleanly_runs_another_pipelines_first_start_never_a_restart(lesson):
    """Pipeline.stop() hands the warm driver to the next pipeline's first start (drivers.py): it runs that
    pipeline in a SparkSession of its own, with nothing of the first one (not even a crash armed for it).
    A restart, and the stopped pipeline's own next start, always get a process that never ran them."""
    first = crashlab.Pipeline(lesson, "at_least_once", name="first", max_per_batch=100).start()
    second = crashlab.Pipeline(lesson, "delta_sink", name="second", max_per_batch=100)
    try:
        first.produce(30)
        first.drain()
        warm = first.pid
        first.arm("after_sink_write")  # armed for its next batch, which never comes: it is stopped first
        first.stop()
        assert (first.running, first.pid, first.status()["state"]) == (False, None, "stopped")
        second.start()
        assert second.pid == warm
        second.produce(40)
        second.drain()  # the crash armed for the first pipeline did not fire here
        assert second.running and second.ledger().verdict == "exactly-once"
        second.crash("after_sink_write", orders=20)
        second.restart()
        second.drain()
        assert second.pid != warm and second.ledger().verdict == "exactly-once"
        first.restart()  # its own restart, on its checkpoint: a process that never ran it
        assert first.pid not in (warm, second.pid)
        first.drain()
        assert first.ledger().verdict == "exactly-once"  # no crash: nothing replayed
    finally:
        lesson.cleanup()
        drivers.pool().shutdown()


def _wait_until_warm(pool, standby) -> None:
    assert pool.wait_until_ready(timeout_s=300)
    assert standby.warm and standby.running, standby.error_tail()


def test_a_standby_skips_its_warm_up_when_the_setting_says_so_and_keeps_its_scratch_at_home(monkeypatch, tmp_path):
    # the warm-up itself (setting "1", the learner's default) is checked by
    # test_a_standby_is_ready_before_it_is_needed, on the standby a pipeline then takes
    monkeypatch.setenv("DELIVERYLAB_STANDBY_WARM_UP", "0")  # a driver reads it when it starts
    pool = drivers.DriverPool(tmp_path / "pool", standby=1)
    pool.fill()
    try:
        standby = pool._ready[0]
        _wait_until_warm(pool, standby)
        assert "standby warmed up in" not in standby.home.log.read_text()
        assert not (standby.home.path / "warm-up").exists()
        # its temporary files stay in its home, not in /tmp: a SIGKILLed JVM cannot delete
        # its scratch folders and unpacked native libraries
        scratch = [p.name for p in standby.home.tmp.iterdir()]
        assert any(name.startswith("blockmgr-") for name in scratch), scratch  # Spark's, under java.io.tmpdir
    finally:
        pool.shutdown()


def test_a_standby_assigned_a_pipeline_skips_what_is_left_of_its_warm_up(tmp_path):
    from deliverylab.crashlab import driver

    # no step may run: with no SparkSession (None), any step would raise
    assert driver._warm_up(None, tmp_path / "warm-up", assigned=lambda: True) < 1


def test_a_standby_is_ready_before_it_is_needed(lesson, monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_STANDBY_WARM_UP", "1")  # the learner's default
    drivers.pool().shutdown()  # standbys started by earlier tests had other settings
    drivers.warm_up()
    standby = drivers.pool()._ready[0]
    _wait_until_warm(drivers.pool(), standby)
    assert "standby warmed up in" in standby.home.log.read_text()
    assert not (standby.home.path / "warm-up").exists()  # the warm-up's scratch data is gone
    pipe = crashlab.Pipeline(lesson, "at_least_once", name="quick")
    pipe.start()
    try:
        assert pipe.pid == standby.pid  # the standby became this pipeline's driver: no JVM to boot
        assert drivers.pool()._ready == []  # taking a standby boots no other: a restart may never come
        pipe.arm("after_sink_write")  # a crash is what a restart follows: the next standby boots now
        assert [d.running for d in drivers.pool()._ready] == [True]
    finally:
        pipe.stop()
        drivers.pool().shutdown()


def test_drivers_end_when_the_notebook_process_ends(lesson):
    code = ("import deliverylab, os; from deliverylab import crashlab\n"
            "lesson = deliverylab.setup('test-drivers-orphan', quiet=True)\n"
            "pipe = crashlab.Pipeline(lesson, 'at_least_once').start()\n"
            "print(pipe.pid, flush=True)\n"
            "os._exit(0)\n")  # no cleanup at all: as when a kernel is killed
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    pid = int(out.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 180  # a generous limit: the driver stops its query first
    while processes.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes.alive(pid), "the driver outlived the notebook that started it"
