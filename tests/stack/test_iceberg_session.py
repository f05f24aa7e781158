"""Module 10's kernel for real: its venv's Python builds the course's Spark 4.1 session, which writes and reads
an Iceberg table in the course's catalog and a Delta table; pyiceberg reads the Iceberg table without a JVM.

The session runs in a process of the Iceberg venv's Python (as the kernel and its crash-lab drivers do), with a
state folder of its own and this project's resolved jars and class archive (``DELIVERYLAB_JARS``).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from deliverylab.config import settings
from deliverylab.stack import jars, kernels

pytestmark = pytest.mark.stack

SCRIPT = r"""
import json, os, re, sys
from deliverylab.stack import jars, processes, session
spark = session.get_spark("iceberg-kernel-test")
import pyspark
rows = spark.range(3).selectExpr("CAST(id AS STRING) AS order_id", "CAST(id AS DECIMAL(10,2)) AS amount")
spark.sql("CREATE TABLE iceberg.`test-iceberg`.tables.orders (order_id STRING, amount DECIMAL(10,2)) USING iceberg")
rows.writeTo("iceberg.`test-iceberg`.tables.orders").option("snapshot-property.course.stamp", "batch-0").append()
delta = os.path.join(os.environ["DELIVERYLAB_STATE"], "delta-orders")
rows.write.format("delta").save(delta)
warehouse = str(session.iceberg_warehouse())
table = os.path.join(warehouse, "test-iceberg", "tables", "orders")
expired = spark.sql("CALL iceberg.system.expire_snapshots(table => '`test-iceberg`.tables.orders', "
                    "retain_last => 1)").collect()  # procedures take the catalog's names (no path tables)
summaries = [r.summary for r in spark.sql("SELECT summary FROM iceberg.`test-iceberg`.tables.orders.snapshots").collect()]
from pyiceberg.table import StaticTable
md = os.path.join(table, "metadata")
v = max(int(m[1]) for f in os.listdir(md) if (m := re.fullmatch(r"v(\d+)\.metadata\.json", f)))
static = StaticTable.from_metadata(f"{md}/v{v}.metadata.json")
child = processes.spawn("deliverylab.no_such_module", log=os.path.join(os.environ["DELIVERYLAB_STATE"], "child.log"))
child.wait()
print(json.dumps({
    "pyspark": pyspark.__version__, "python": sys.executable, "kind": jars.spark_kind(),
    "extensions": spark.conf.get("spark.sql.extensions"),
    "cache": spark.conf.get("spark.sql.catalog.iceberg.cache-enabled"), "warehouse": warehouse,
    "iceberg_rows": spark.table("iceberg.`test-iceberg`.tables.orders").count(),
    "path_rows": spark.read.format("iceberg").load(table).count(),
    "delta_rows": spark.read.format("delta").load(delta).count(),
    "stamps": [s.get("course.stamp") for s in summaries], "expire_rows": len(expired),
    "pyiceberg_rows": len(static.scan(selected_fields=("order_id",)).to_arrow()),
    "child_python": child.args[0], "pyspark_python": os.environ.get("PYSPARK_PYTHON"),
}))
"""


def test_the_iceberg_kernels_session_writes_iceberg_and_delta(tmp_path):
    python = kernels.iceberg_python()
    if not python.exists():
        pytest.skip(f"{kernels.ICEBERG_VENV} is not set up here: `make setup` builds it")
    if not jars.is_resolved("spark41"):
        pytest.skip("the spark41 jars are not resolved here: `make setup` resolves them")
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYTHONPATH")}
    env.update(DELIVERYLAB_STATE=str(tmp_path / "state"), DELIVERYLAB_JARS=str(settings().jars),
               DELIVERYLAB_LEARNER="ada", DELIVERYLAB_STANDBY_WARM_UP="0")
    (tmp_path / "state").mkdir()
    done = subprocess.run([str(python), "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["pyspark"] == kernels.pinned_pyspark() and seen["kind"] == "spark41"
    assert seen["python"] == str(python) == seen["child_python"] == seen["pyspark_python"]
    assert seen["extensions"].split(",") == ["io.delta.sql.DeltaSparkSessionExtension",
                                             "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"]
    assert seen["cache"] == "false"
    assert seen["warehouse"] == str(tmp_path / "state" / "lessons" / "ada")
    assert seen["iceberg_rows"] == seen["path_rows"] == seen["delta_rows"] == seen["pyiceberg_rows"] == 3
    assert seen["stamps"] == ["batch-0"] and seen["expire_rows"] == 1


def test_a_notebook_that_names_the_iceberg_kernel_runs_in_its_venv(tmp_path):
    """`deliverylab notebooks execute` (runner.run) starts the kernel the notebook names, from the main venv."""
    import nbformat

    from deliverylab.stack import runner

    python = kernels.iceberg_python()
    if kernels.installed_kernelspec() is None or not python.exists():
        pytest.skip("module 10's kernel is not set up here: `make setup` builds it")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import sys, pyspark; print(sys.executable, pyspark.__version__)")]
    nb.metadata["kernelspec"] = {"name": kernels.ICEBERG_KERNEL, "display_name": kernels.ICEBERG_DISPLAY_NAME}
    nbformat.write(nb, str(tmp_path / "nb.ipynb"))
    ran = runner.run(str(tmp_path / "nb.ipynb"), timeout_s=300)
    assert ran.cells[0].outputs[0]["text"].split() == [str(python), kernels.pinned_pyspark()]
