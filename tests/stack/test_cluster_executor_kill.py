"""An executor killed mid-task on the local Spark cluster: the master starts a new one, the task runs again."""
import subprocess
import sys
import time

import pytest

from deliverylab import config
from deliverylab.stack import cluster

pytestmark = [pytest.mark.stack, pytest.mark.cluster]

_JOB = """
import time
from deliverylab.stack.session import get_spark
spark = get_spark("executor-kill")
print("APP " + spark.sparkContext.applicationId, flush=True)
def slow(rows):
    time.sleep(6)
    return rows
print("RESULT " + repr(sorted(spark.sparkContext.parallelize(range(4), 2).mapPartitions(slow).collect())), flush=True)
spark.stop()
"""


def test_a_killed_executors_task_runs_again_on_a_new_executor(spark_cluster):
    env = dict(__import__("os").environ, DELIVERYLAB_SPARK_MASTER=cluster.master_url())
    job = subprocess.Popen([sys.executable, "-c", _JOB], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
    try:
        app = job.stdout.readline().split()[-1]
        assert app.startswith("app-")
        work = config.settings().state / "cluster" / "work"
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not any(
                "Running task" in f.read_text(errors="replace") for f in work.glob(f"*/{app}/*/stderr")):
            time.sleep(0.2)
        killed = cluster.kill_executors(app, log=lambda m: None)
        assert killed, "no executor of the application was running"
        result = job.stdout.read()
        assert job.wait(timeout=240) == 0
        assert "RESULT [0, 1, 2, 3]" in result  # the job finished: the lost tasks ran again
        assert len(list(work.glob(f"*/{app}/*"))) >= 2  # on a new executor the master started
    finally:
        job.kill()
