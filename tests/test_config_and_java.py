import os
import stat

import pytest

from deliverylab import config, jvm
from deliverylab.config import CourseError


def test_learner_id_comes_from_the_environment_and_is_made_safe(monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_LEARNER", "Ada Lovelace!")
    s = config.settings()
    assert s.learner == "ada-lovelace"
    assert s.learner_prefix() == "xo.ada-lovelace."


def test_a_bad_port_setting_says_what_to_do(monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_KAFKA_PORT", "ninety")
    with pytest.raises(CourseError, match="DELIVERYLAB_KAFKA_PORT='ninety' is not a usable port"):
        config.settings()


def test_state_folder_can_be_moved(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    s = config.settings()
    assert s.state == tmp_path and s.jars == tmp_path / "jars"


@pytest.mark.parametrize("text,major", [
    ('openjdk version "17.0.15" 2025-04-15', 17),
    ('java version "1.8.0_392"', 8),
    ('openjdk version "21" 2023-09-19', 21),
    ('openjdk version "11.0.2" 2019-01-15', 11),
])
def test_java_versions_are_read(text, major):
    assert jvm.parse_java_major(text) == major


def _fake_java(folder, version):
    java = folder / "java"
    java.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2019-01-15\' >&2\n')
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return folder


def test_java_11_on_the_path_gets_a_message_with_the_fix(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(_fake_java(tmp_path, "11.0.2")) + os.pathsep + os.environ["PATH"])
    with pytest.raises(CourseError) as err:
        jvm.require_java()
    assert "Java 11" in str(err.value) and "Java 17 or newer" in str(err.value) and "JAVA_HOME" in str(err.value)


def test_missing_java_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CourseError, match="No `java` found on PATH"):
        jvm.require_java()
