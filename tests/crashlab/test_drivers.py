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


def test_a_standby_is_ready_before_it_is_needed(lesson):
    drivers.warm_up()
    standby = drivers.pool()._ready[0]
    deadline = time.monotonic() + 60
    while not standby.warm and time.monotonic() < deadline:
        time.sleep(0.1)
    assert standby.warm and standby.running
    pipe = crashlab.Pipeline(lesson, "at_least_once", name="quick")
    started = time.monotonic()
    pipe.start()
    try:
        assert pipe.pid == standby.pid  # the standby became this pipeline's driver
        assert time.monotonic() - started < 15
    finally:
        pipe.stop()


def test_drivers_end_when_the_notebook_process_ends(lesson):
    code = ("import deliverylab, os; from deliverylab import crashlab\n"
            "lesson = deliverylab.setup('test-drivers-orphan', quiet=True)\n"
            "pipe = crashlab.Pipeline(lesson, 'at_least_once').start()\n"
            "print(pipe.pid, flush=True)\n"
            "os._exit(0)\n")  # no cleanup at all: as when a kernel is killed
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    pid = int(out.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 15
    while processes.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes.alive(pid), "the driver outlived the notebook that started it"
