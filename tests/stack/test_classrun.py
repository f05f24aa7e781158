"""stack/classrun.py without a broker: the environment make test's lessons 01, 04 and 06 run in as ada. The run
itself (a class broker started, ada's token joined, the lessons under nbval, the broker stopped) is make test's."""
from __future__ import annotations

import os

import pytest

from deliverylab import config
from deliverylab.stack import classbroker, classrun


def test_a_command_is_needed():
    with pytest.raises(SystemExit):
        classrun.main(["--learner", "ada", "--"])


def test_the_learner_sees_the_class_broker_of_her_workshop_file_and_the_course_broker_nowhere(tmp_path, monkeypatch):
    workshop = tmp_path / "workshop.ini"
    workshop.write_text("[workshop]\nbroker = 127.0.0.1:19300\nlearner = ada\npassword = pw\n")
    callers = {"PATH": "/usr/bin", "DELIVERYLAB_BROKER": "127.0.0.1:9", "DELIVERYLAB_LEARNER": "me",
               "DELIVERYLAB_KAFKA_PASSWORD": "the-callers-own", "DELIVERYLAB_WORKSHOP_FILE": "/elsewhere.ini"}
    env = classrun.learner_env(callers, 19300, workshop)
    assert env["PATH"] == "/usr/bin" and "DELIVERYLAB_BROKER" not in env and "DELIVERYLAB_LEARNER" not in env
    for name in [n for n in os.environ if n.startswith("DELIVERYLAB_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    s = config.settings()
    assert (s.bootstrap, s.learner, s.kafka_login.username, s.kafka_login.password) == ("127.0.0.1:19300", "ada", "ada", "pw")
    nowhere = s.kafka_port, s.controller_port
    assert nowhere == (19300 + classrun.NOWHERE, 19300 + classrun.NOWHERE + 1)
    assert not set(nowhere) & {*classbroker.Ports(19300).bound(), classbroker.Ports(19300).flaky_proxy}
