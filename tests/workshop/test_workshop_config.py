"""Shared-broker mode is one setting: DELIVERYLAB_BROKER, or a workshop.ini; the environment wins."""
import os

import pytest

from deliverylab import config
from deliverylab.config import CourseError


def test_without_the_setting_the_course_uses_its_own_broker():
    s = config.settings()
    assert not s.shared and s.bootstrap == "127.0.0.1:9092"
    assert (s.flaky_listener_port, s.flaky_proxy_port) == (9094, 9095)


def test_the_environment_points_the_course_at_a_shared_broker(monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_BROKER", " 192.168.1.20:9092 ")
    s = config.settings()
    assert s.shared and s.bootstrap == "192.168.1.20:9092" and s.shared_source == "DELIVERYLAB_BROKER"
    # the FLAKY listener is two ports above the shared broker's; the proxy stays on this machine
    assert (s.broker_host, s.flaky_listener_port, s.flaky_proxy_port) == ("192.168.1.20", 9094, 9095)


def test_a_workshop_file_does_the_same_and_names_the_learner(monkeypatch, tmp_path):
    monkeypatch.delenv("DELIVERYLAB_LEARNER")
    path = tmp_path / "workshop.ini"
    path.write_text("[workshop]\nbroker = class-pc:9192\nlearner = Ada L.\n")
    s = config.settings()
    assert s.bootstrap == "class-pc:9192" and s.learner == "ada-l"
    assert "workshop.ini" in s.shared_source and "workshop.ini" in s.learner_source


def test_the_environment_wins_over_the_file(monkeypatch, tmp_path):
    (tmp_path / "workshop.ini").write_text("[workshop]\nbroker = class-pc:9192\nlearner = ada\n")
    monkeypatch.setenv("DELIVERYLAB_BROKER", "other:9092")
    s = config.settings()
    assert s.bootstrap == "other:9092" and s.learner == os.environ["DELIVERYLAB_LEARNER"]


@pytest.mark.parametrize("bad", ["nonsense", "host:", ":9092", "host:99999", "host:port"])
def test_a_bad_address_says_how_to_write_one(monkeypatch, bad):
    monkeypatch.setenv("DELIVERYLAB_BROKER", bad)
    with pytest.raises(CourseError, match="host:port, for example 192.168.1.20:9092"):
        config.settings()


def test_a_misspelt_workshop_setting_is_named(tmp_path):
    (tmp_path / "workshop.ini").write_text("[workshop]\nbroker = a:1\nlerner = ada\n")
    with pytest.raises(CourseError, match="unknown settings \\['lerner'\\]"):
        config.settings()


def test_prefixes_a_learner_owns():
    s = config.settings()
    assert s.owns(s.learner_prefix()) and s.owns(s.lesson_prefix("02-anatomy"))
    assert s.lesson_prefix("02-anatomy") == f"xo.{s.learner}.02-anatomy."
    assert not s.owns("xo.") and not s.owns("xo.someone-else.") and not s.owns(config.CLASS_TOPIC)
    # no learner id can ever own the class board's topic: ids never contain "_"
    assert config.learner_id("_class") == "class" and config.CLASS_TOPIC.startswith("xo._")


def test_the_jars_folder_can_live_outside_the_state(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_JARS", str(tmp_path / "jars"))
    assert config.settings().jars == tmp_path / "jars"


def test_the_flaky_proxy_runs_here_and_forwards_to_the_shared_broker(monkeypatch):
    from deliverylab.stack import flaky

    monkeypatch.setenv("DELIVERYLAB_BROKER", "class-pc:9192")
    net = flaky.FlakyNetwork()  # not started: only where it would listen and forward
    assert net.bootstrap == "127.0.0.1:9195" and (net.broker_host, net.broker_port) == ("class-pc", 9194)
