"""stack/classrun.py: a command run as a learner who joined a class broker of its own (make test's lessons 01,
04 and 06 as ada), for real: the command sees the class broker and the learner's login and nothing of the
caller's broker settings, and the broker is stopped and its folder gone afterwards, whatever the command did."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from deliverylab.stack import broker, classbroker, classrun

SHOW_SETTINGS = ("from deliverylab.config import settings; s = settings(); "
                 "print('seen:', s.shared_broker, s.learner, s.kafka_login.username, bool(s.kafka_login.password), s.kafka_port); "
                 "raise SystemExit(3)")


def test_a_command_is_needed():
    with pytest.raises(SystemExit):
        classrun.main(["--learner", "ada", "--"])


@pytest.mark.stack
def test_the_command_runs_as_the_learner_on_a_class_broker_that_is_stopped_afterwards():
    callers = {"DELIVERYLAB_BROKER": "127.0.0.1:9", "DELIVERYLAB_KAFKA_PASSWORD": "the-callers-own"}
    run = subprocess.run([sys.executable, "-m", "deliverylab.stack.classrun", "--learner", "cleo", "--",
                          sys.executable, "-c", SHOW_SETTINGS],
                         capture_output=True, text=True, timeout=180, env={**os.environ, **callers})
    assert run.returncode == 3, run.stdout + run.stderr  # the command's own status
    seen = next(line for line in run.stdout.splitlines() if line.startswith("seen: "))
    address, learner, user, has_password, own_broker_port = seen.split()[1:]
    assert learner == user == "cleo" and has_password == "True"
    port = int(address.rsplit(":", 1)[1])
    assert classrun.PORT_FIRST <= port < classrun.PORT_LAST
    assert int(own_broker_port) == port + classrun.NOWHERE != 9092  # the course's own broker: nowhere
    assert all(broker.port_is_free(p) for p in classbroker.Ports(port).bound())  # stopped
    assert not list(Path(tempfile.gettempdir()).glob("classrun-*/class.txt"))  # and its folder removed
