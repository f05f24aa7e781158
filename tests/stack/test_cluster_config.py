"""Settings that move the course onto a cluster, and the cluster's commands, without starting a JVM."""
import socket

import pytest

from deliverylab import config
from deliverylab.config import CourseError
from deliverylab.stack import cluster, java, session


def test_the_spark_master_is_local_by_default(monkeypatch):
    monkeypatch.delenv("DELIVERYLAB_SPARK_MASTER", raising=False)
    s = config.settings()
    assert s.spark_master == "local[2]" and not s.on_cluster
    conf = session.spark_conf()
    assert conf["spark.master"] == "local[2]"
    assert "spark.executor.memory" not in conf and "spark.cores.max" not in conf
    # one JVM, which has the course's jars on its class path: no copy of them for executors
    assert "spark.jars" not in conf and "delta-spark" in conf["spark.driver.extraClassPath"]


def test_the_spark_master_comes_from_the_environment_and_sizes_the_executors(monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_SPARK_MASTER", "spark://127.0.0.1:7077")
    s = config.settings()
    assert s.spark_master == "spark://127.0.0.1:7077" and s.on_cluster
    conf = session.spark_conf("x", extra={"spark.executorEnv.X": "1"})
    assert conf["spark.master"] == "spark://127.0.0.1:7077"
    assert conf["spark.executor.memory"] == "512m" and conf["spark.cores.max"] == "1"
    assert conf["spark.executorEnv.X"] == "1"  # a crash-lab driver's own settings still reach the executors
    assert conf["spark.jars"].split(",") == conf["spark.driver.extraClassPath"].split(":")  # the executors' copy


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4,3]", "spark://127.0.0.1:7077",
                                    "spark://m1:7077,m2:7077"])
def test_usable_masters_are_accepted(master):
    assert config.parse_spark_master(master) == master


@pytest.mark.parametrize("master", ["yarn", "local[0]", "spark://", "spark://127.0.0.1", "spark://h:70000", "locale"])
def test_a_bad_master_says_what_to_give(monkeypatch, master):
    monkeypatch.setenv("DELIVERYLAB_SPARK_MASTER", master)
    with pytest.raises(CourseError, match=r"DELIVERYLAB_SPARK_MASTER is .*spark://127.0.0.1:7077.*cluster up"):
        config.settings()


def test_an_empty_master_setting_means_the_default(monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_SPARK_MASTER", "  ")
    assert config.settings().spark_master == "local[2]"


def test_the_shared_broker_setting_takes_a_cluster_bootstrap_list(monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_BROKER", "127.0.0.1:9192, 127.0.0.1:9202,127.0.0.1:9212")
    s = config.settings()
    assert s.bootstrap == "127.0.0.1:9192,127.0.0.1:9202,127.0.0.1:9212" and s.broker_host == "127.0.0.1"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_master_that_does_not_answer_is_named_with_the_command_that_starts_it(monkeypatch):
    port = _closed_port()
    monkeypatch.setenv("DELIVERYLAB_CLUSTER_PORT", str(port))
    monkeypatch.setenv("DELIVERYLAB_SPARK_MASTER", f"spark://127.0.0.1:{port}")
    with pytest.raises(CourseError) as err:
        cluster.require_master()
    assert f"spark://127.0.0.1:{port}" in str(err.value) and "python -m deliverylab cluster up" in str(err.value)


def test_another_clusters_master_that_does_not_answer_is_named_too(monkeypatch):
    port = _closed_port()
    monkeypatch.setenv("DELIVERYLAB_SPARK_MASTER", f"spark://127.0.0.1:{port}")
    with pytest.raises(CourseError, match=f"spark://127.0.0.1:{port}.*does not answer.*unset DELIVERYLAB_SPARK_MASTER"):
        cluster.require_master()


def test_local_mode_needs_no_master(monkeypatch):
    monkeypatch.delenv("DELIVERYLAB_SPARK_MASTER", raising=False)
    cluster.require_master()  # nothing to probe


def test_the_daemons_are_loopback_only_and_small(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    s = config.settings()
    master = cluster._master_cmd(s)
    assert master[0].endswith("bin/spark-class") and cluster.MASTER_CLASS in master
    assert master[master.index("--host") + 1] == "127.0.0.1"
    assert master[master.index("--port") + 1] == "7077" and master[master.index("--webui-port") + 1] == "8180"
    worker = cluster._worker_cmd(s, 2)
    assert worker[2] == "spark://127.0.0.1:7077" and worker[worker.index("--host") + 1] == "127.0.0.1"
    assert worker[worker.index("--memory") + 1] == "1g" and worker[worker.index("--webui-port") + 1] == "8182"
    assert str(tmp_path / "cluster" / "work" / "worker-2") in worker
    env = cluster._daemon_env(s)
    assert env["SPARK_LOCAL_IP"] == env["SPARK_MASTER_HOST"] == "127.0.0.1"
    assert env["SPARK_DAEMON_MEMORY"] == "256m"


def test_cluster_ports_can_be_moved(monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_CLUSTER_PORT", "17077")
    monkeypatch.setenv("DELIVERYLAB_CLUSTER_UI_PORT", "18180")
    assert cluster.master_url() == "spark://127.0.0.1:17077" and cluster.ui_port() == 18180


def test_too_little_memory_is_said_before_starting(monkeypatch):
    monkeypatch.setattr(cluster, "available_mb", lambda: 900)
    with pytest.raises(CourseError, match="needs about 2816 MB of free memory.*has 900 MB available"):
        cluster.check_memory()


def test_a_taken_port_is_reported_with_the_fix(monkeypatch, tmp_path):
    with socket.socket() as other_program:
        other_program.bind(("127.0.0.1", 0))
        other_program.listen()
        port = other_program.getsockname()[1]
        monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
        monkeypatch.setenv("DELIVERYLAB_CLUSTER_PORT", str(port))
        with pytest.raises(CourseError) as err:
            cluster.up(log=lambda m: None)
    assert f"Port {port}" in str(err.value) and "DELIVERYLAB_CLUSTER_PORT" in str(err.value)


def test_nothing_runs_in_an_empty_state_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    st = cluster.status()
    assert not st.running and not st.ready and st.line().startswith("spark cluster: stopped")
    assert cluster.down(log=lambda m: None) is False
    with pytest.raises(CourseError, match="worker 1 is not running.*cluster up"):
        cluster.kill_worker(1, log=lambda m: None)
    with pytest.raises(CourseError, match="no worker 3"):
        cluster.kill_worker(3, log=lambda m: None)


def test_a_stale_pid_file_is_not_taken_for_a_daemon(monkeypatch, tmp_path):
    import os

    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    s = config.settings()
    cluster.paths(s)["dir"].mkdir(parents=True)
    cluster.paths(s)["master.pid"].write_text(f"{os.getpid()}\n")  # alive, but not a Spark master
    assert cluster._our_pid(s, "master") is None


def test_alive_workers_are_counted_from_the_masters_json():
    state = {"status": "ALIVE", "workers": [{"state": "ALIVE"}, {"state": "DEAD"}, {"state": "ALIVE"}]}
    assert cluster.alive_workers(state) == 2 and cluster.alive_workers(None) == 0


def test_the_cli_knows_the_cluster_command():
    from deliverylab.__main__ import PASS_THROUGH

    assert "cluster" in PASS_THROUGH
    with pytest.raises(SystemExit):
        cluster.main(["kill-worker"])  # the worker's number is required


def test_killing_the_executors_of_an_unknown_application_kills_nothing():
    assert cluster.kill_executors("app-19700101000000-0000", log=lambda m: None) == []


def kernel_and_driver_confs() -> list[dict[str, str]]:
    """The Spark conf of a notebook's JVM and of a crash-lab driver's."""
    from deliverylab.crashlab import crashpoints

    return [session.spark_conf(),
            session.spark_conf("crashlab-driver", extra=crashpoints.hook_conf("/tmp/crash", 1))]


def test_every_spark_jvm_of_the_course_stops_its_jit_at_the_quick_tier():
    for conf in kernel_and_driver_confs():
        options = conf["spark.driver.extraJavaOptions"].split()
        assert all(flag in options for flag in java.QUICK_JIT_FLAGS), options
    assert "-XX:TieredStopAtLevel=1" in java.QUICK_JIT_FLAGS
    assert java.QUICK_JIT in cluster.app_conf()["spark.executor.extraJavaOptions"]


def test_an_idle_query_asks_its_source_for_new_data_a_few_times_a_second_not_a_hundred():
    conf = session.spark_conf()
    assert conf["spark.sql.streaming.pollingDelay"] == session.POLLING_DELAY == "250ms"


def test_kernels_and_drivers_run_queries_interpreted_with_one_shuffle_partition():
    for conf in kernel_and_driver_confs():
        assert conf["spark.sql.shuffle.partitions"] == session.SHUFFLE_PARTITIONS == "1"
        assert conf["spark.sql.codegen.wholeStage"] == "false"
        assert conf["spark.sql.codegen.factoryMode"] == "NO_CODEGEN"


def test_kernels_and_drivers_list_a_table_s_files_with_two_tasks():
    for conf in kernel_and_driver_confs():
        assert conf["spark.sql.sources.parallelPartitionDiscovery.parallelism"] == session.LISTING_PARALLELISM == "2"
