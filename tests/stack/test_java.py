"""Finding a usable Java: versions read, and messages that say how to fix a wrong one."""
import os
import stat

import pytest

from deliverylab.config import CourseError
from deliverylab.stack import java as jvm


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


def test_a_path_option_survives_being_split_at_spaces():
    # Spark splits spark.driver.extraJavaOptions at spaces, honouring double quotes (as a shell does)
    import shlex

    plain = jvm.path_option("-Dderby.system.home", "/home/ada/eo/.state/derby")
    spaced = jvm.path_option("-XX:SharedArchiveFile", "/home/ada/My Courses/eo/x.jsa")
    assert plain == "-Dderby.system.home=/home/ada/eo/.state/derby"
    assert shlex.split(f"{plain} {spaced} -XX:TieredStopAtLevel=1") == [
        plain, "-XX:SharedArchiveFile=/home/ada/My Courses/eo/x.jsa", "-XX:TieredStopAtLevel=1"]


@pytest.mark.parametrize("text,version", [
    ('openjdk version "25.0.2" 2026-01-20', (25, 0, 2)),
    ('openjdk version "21" 2023-09-19', (21,)),
    ('no version here', ()),
])
def test_full_java_versions_are_read(text, version):
    assert jvm.parse_java_version(text) == version


@pytest.mark.parametrize("version,warning", [
    ("17.0.15", None),
    ("21.0.8", None),
    ("25.0.3", None),
    ("25.0.2", "Spark 4.2 deprecates Java 25 before 25.0.3"),
    ("26", "Spark 4.2 supports Java 17, 21 or 25"),
])
def test_doctor_names_the_java_versions_spark_supports(monkeypatch, tmp_path, version, warning):
    from deliverylab import doctor

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(_fake_java(tmp_path, version)) + os.pathsep + os.environ["PATH"])
    jvm.version_text.cache_clear()
    try:
        finding = doctor.check_java()
    finally:
        jvm.version_text.cache_clear()
    assert finding.ok
    if warning:
        assert warning in finding.detail
    else:
        assert "warning" not in finding.detail
