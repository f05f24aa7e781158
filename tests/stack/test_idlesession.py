"""An idle lesson's kernel gives its Spark session back, and the next cell that uses Spark starts a new one
(stack/idlesession.py): pure rules first, then a real kernel whose JVM exits and comes back."""
from __future__ import annotations

import os
import queue
import time

import pytest

from deliverylab.stack import idlesession


def spark_type(name: str, module: str = "pyspark.sql.dataframe"):
    return type(name, (), {"__module__": module})


def test_a_cell_uses_spark_when_it_names_a_spark_object_or_calls_get_spark():
    DataFrame, Session = spark_type("DataFrame"), spark_type("SparkSession", "pyspark.sql.session")
    names = {"spark": Session(), "orders": DataFrame(), "lesson": object(), "n": 3}
    assert idlesession.needs_spark("spark.range(3).count()", names)
    assert idlesession.needs_spark("orders.show()", names)
    assert idlesession.needs_spark("s = deliverylab.get_spark()", {})
    assert not idlesession.needs_spark("print(n + 1)", names)
    assert not idlesession.needs_spark("lesson.complete()", names)
    assert not idlesession.needs_spark("sparkle = 1  # spark_orders", names)  # a word is not a name
    assert not idlesession.needs_spark("DataFrame = 1", {"DataFrame": spark_type("Other")()})


def test_stale_names_are_the_old_session_s_dataframes_and_queries():
    DataFrame, Query = spark_type("DataFrame"), spark_type("StreamingQuery", "pyspark.sql.streaming.query")
    old, new = object(), object()
    made_before, made_after, query = DataFrame(), DataFrame(), Query()
    made_before.sparkSession, made_after.sparkSession = old, new
    names = {"orders": made_before, "fresh": made_after, "q": query, "_hidden": DataFrame(), "n": 1,
             "spark": spark_type("SparkSession", "pyspark.sql.session")()}
    assert idlesession.stale_names(names, old) == ["orders", "q"]


def test_the_restart_line_says_why_how_much_and_what_to_run_again():
    line = idlesession.restart_line(10, 0.74, ["orders", "q"])
    assert "stopped after 10 idle minutes, giving back 0.7 GB" in line
    assert "orders, q: made by the stopped session; run the cells that made them again" in line
    assert "\n" not in idlesession.restart_line(10, None, [])
    assert "a, b, c, d, e, f, ..." in idlesession.restart_line(10, None, list("abcdefgh"))


@pytest.mark.parametrize("value, minutes", [("", 10.0), ("2.5", 2.5), ("0", 0.0), ("soon", 10.0)])
def test_idle_minutes_come_from_the_environment(monkeypatch, value, minutes):
    monkeypatch.setenv("DELIVERYLAB_IDLE_RELEASE_MINUTES", value)
    assert idlesession.idle_minutes() == minutes


def eventually(check, seconds: float = 180) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.5)
    return False


class Kernel:
    """A real notebook kernel: run a cell, get its text output."""

    def __init__(self, env):
        from jupyter_client.manager import start_new_kernel

        self.manager, self.client = start_new_kernel(kernel_name="python3", env=env)

    def run(self, cell: str) -> str:
        out = []

        def keep(msg):
            content = msg["content"]
            if msg["msg_type"] == "stream":
                out.append(content["text"])
            elif msg["msg_type"] == "error":
                out.append("ERROR " + content["ename"] + ": " + content["evalue"])
        try:
            self.client.execute_interactive(cell, timeout=300, output_hook=keep)
        except queue.Empty:
            pytest.fail(f"the kernel went quiet on {cell!r}")
        return "".join(out)

    def close(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.mark.stack
@pytest.mark.parametrize("start", ["deliverylab.get_spark('tests-idle')",  # a notebook's own start (status line)
                                   "deliverylab.stack.session.get_spark('tests-idle')"])  # a course function's
def test_an_idle_kernel_s_jvm_exits_and_the_next_spark_cell_starts_a_new_one(start):
    env = {**os.environ, "DELIVERYLAB_IDLE_RELEASE_MINUTES": "0.05"}  # 3 s: the kernel then goes idle
    kernel = Kernel(env)
    try:
        out = kernel.run(f"import deliverylab, deliverylab.stack.session, pyspark\nspark = {start}\n"
                         "orders = spark.range(3)\nfrom pyspark import SparkContext\n"
                         "import os\nprint(os.getpid(), SparkContext._gateway.proc.pid)")
        kernel_pid, jvm = map(int, out.strip().splitlines()[-1].split())
        assert eventually(lambda: not os.path.exists(f"/proc/{jvm}")), "the idle kernel's JVM never exited"
        assert kernel.run("print(1 + 1)").strip() == "2"  # a cell with no Spark starts nothing
        out = kernel.run("print(spark.range(5).count())")
        assert "Spark: this lesson's session was stopped after 0.05 idle minutes" in out
        assert "orders: made by the stopped session" in out
        assert out.strip().endswith("5"), out
        assert "ERROR" not in out
        new_jvm = int(kernel.run("print(SparkContext._gateway.proc.pid)").strip())
        assert new_jvm != jvm and os.path.exists(f"/proc/{new_jvm}")
        # a streaming query at work keeps the session: the kernel's log says it kept it
        log = deliverylab_state() / "logs" / "idle-session.log"
        kernel.run("q = spark.readStream.format('rate').load().writeStream.format('noop').start()")
        assert eventually(lambda: f"kernel {kernel_pid}: kept the Spark session: 1 streaming query"
                          in (log.read_text() if log.exists() else ""))
        assert os.path.exists(f"/proc/{new_jvm}")
        assert kernel.run("q.stop(); print(q.isActive)").strip() == "False"
    finally:
        kernel.close()


def deliverylab_state():
    from deliverylab.config import settings

    return settings().state



def alive(pid: int) -> bool:
    """A process that has not ended (a zombie its parent has not reaped yet counts as ended)."""
    try:
        return "\nState:\tZ" not in open(f"/proc/{pid}/status").read()
    except OSError:
        return False


@pytest.mark.stack
def test_an_idle_kernel_s_pipeline_stops_and_its_next_move_starts_it_again():
    kernel = Kernel({**os.environ, "DELIVERYLAB_IDLE_RELEASE_MINUTES": "0.05"})
    try:
        out = kernel.run("import deliverylab\nfrom deliverylab import crashlab\n"
                         "lesson = deliverylab.setup('test-idle-pipeline', quiet=True)\n"
                         "pipe = crashlab.Pipeline(lesson, 'at_least_once', max_per_batch=200).start()\n"
                         "pipe.produce(50); pipe.drain(); print(pipe.pid)")
        driver = int(out.strip().splitlines()[-1])
        assert eventually(lambda: not alive(driver)), "the idle kernel's pipeline driver never ended"
        out = kernel.run("pipe.produce(50); pipe.drain(); print(pipe.running, pipe.ledger().verdict_line())")
        # started again from its checkpoint by its next move: every order once
        assert out.strip().endswith("True verdict: exactly-once (produced=100 lost=0 duplicated=0)"), out
    finally:
        kernel.close()
