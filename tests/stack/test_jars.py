import pytest

from deliverylab.stack import jars


@pytest.mark.parametrize("name,artifact", [
    ("kafka-clients-3.9.0.jar", "kafka-clients"),
    ("scala-library-2.13.16.jar", "scala-library"),
    ("delta-spark_4.2_2.13-4.4.0.jar", "delta-spark_4.2_2.13"),
    ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-sql-kafka-0-10_2.13"),
    ("zstd-jni-1.5.6-10.jar", "zstd-jni"),
])
def test_artifact_names_drop_the_version(name, artifact):
    assert jars.artifact_name(name) == artifact


def test_spark_connector_versions_match_the_installed_pyspark_and_delta():
    import importlib.metadata as md

    ivy = (jars.IVY_DIR / "spark-connectors.ivy.xml").read_text()
    assert f'name="spark-sql-kafka-0-10_2.13" rev="{md.version("pyspark")}"' in ivy
    spark_minor = ".".join(md.version("pyspark").split(".")[:2])  # Delta's jar is built per Spark minor
    assert f'name="delta-spark_{spark_minor}_2.13" rev="{md.version("delta-spark")}"' in ivy


def test_resolved_spark_classpath_has_one_copy_of_each_library():
    shipped = {jars.artifact_name(p.name) for p in jars.pyspark_jars_dir().glob("*.jar")}
    resolved = [p.name for p in jars.jars("spark")]
    assert any(n.startswith("spark-sql-kafka-0-10") for n in resolved)
    assert any(n.startswith("delta-spark") for n in resolved)
    assert jars.CRASH_HOOK_JAR in resolved
    assert not {jars.artifact_name(n) for n in resolved} & shipped


def test_missing_jars_say_to_run_setup(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    with pytest.raises(Exception, match="make setup"):
        jars.jars("kafka")


def test_setup_resolves_both_classpaths_side_by_side(monkeypatch, tmp_path):
    import threading

    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    both_running = threading.Barrier(2, timeout=5)  # broken (an error) unless both wait here at once
    seen = []

    def fake_ensure(kind, log=print):
        both_running.wait()
        seen.append(kind)

    monkeypatch.setattr(jars, "ensure", fake_ensure)
    jars.ensure_all(log=lambda *_: None)
    assert sorted(seen) == ["kafka", "spark"]


def test_a_failed_broker_resolution_fails_setup(monkeypatch, tmp_path):
    from deliverylab import CourseError

    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))

    def fake_ensure(kind, log=print):
        if kind == "kafka":
            raise CourseError("Could not resolve the jars in kafka-broker.ivy.xml")

    monkeypatch.setattr(jars, "ensure", fake_ensure)
    with pytest.raises(CourseError, match="kafka-broker"):
        jars.ensure_all(log=lambda *_: None)
