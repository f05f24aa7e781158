"""The capstone's matrix with module 10's Iceberg rows: their drivers run the Iceberg venv's Python from the main
kernel (crashlab/drivers.py), and the ledger reads their tables with that venv's pyiceberg (crashlab/sinks.py).

Pure tests (no broker, no Spark) and one run of ``iceberg_sink`` through the matrix from this venv (stack).
"""
from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from deliverylab.config import CourseError
from deliverylab.crashlab import drivers, sinks, variants
from deliverylab.modules.m08 import matrix
from deliverylab.stack import kernels
from deliverylab.stack.session import with_iceberg

ICEBERG = sorted(variants.ICEBERG_VARIANTS)
main_kernel_only = pytest.mark.skipif(with_iceberg(), reason="the main kernel's view (pyspark 4.2, no Iceberg)")
needs_iceberg_venv = pytest.mark.skipif(not kernels.iceberg_python().exists(), reason="no .venv-iceberg (make setup)")


@main_kernel_only
def test_an_iceberg_pipelines_drivers_run_the_iceberg_venvs_python_and_others_this_one():
    assert drivers.python_for(variants.ICEBERG_VARIANTS["iceberg_sink"]) == str(kernels.iceberg_python())
    assert drivers.python_for(variants.VARIANTS["delta_sink"]) == sys.executable
    assert drivers.python_for(variants.custom(lambda orders, out: None, sink_kind="iceberg")) == \
        str(kernels.iceberg_python())


@main_kernel_only
def test_each_python_has_a_pool_of_its_own():
    iceberg = str(kernels.iceberg_python())
    main = drivers.pool()
    assert main.python == sys.executable and drivers.pool(sys.executable) is main
    other = drivers.pool(iceberg)
    assert other is not main and other.python == iceberg and other.root == main.root / "iceberg"
    assert drivers.pool(iceberg) is other and drivers.pool() is main


@main_kernel_only
@needs_iceberg_venv
def test_the_main_kernel_names_an_iceberg_variant_whose_drivers_run_the_iceberg_venv():
    chosen = variants.variant("iceberg_sink")  # a notebook cell of lesson 08, or the matrix
    assert chosen is variants.ICEBERG_VARIANTS["iceberg_sink"]
    assert drivers.python_for(chosen) == str(kernels.iceberg_python())


@main_kernel_only
def test_without_the_iceberg_venv_one_line_says_make_setup(monkeypatch, tmp_path):
    monkeypatch.setattr(kernels, "iceberg_python", lambda root=None: tmp_path / "no-venv" / "bin" / "python")
    assert not set(ICEBERG) & set(matrix.runnable())
    assert set(matrix.runnable()) | set(matrix.left_out()) == set(variants.VARIANTS)
    with pytest.raises(CourseError) as err:
        matrix.run(None, ["iceberg_sink"])  # refused before anything starts (no lesson needed)
    assert "make setup" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(CourseError, match="make setup"):
        sinks._in_iceberg_python("rows", tmp_path)
    with pytest.raises(CourseError, match="make setup"):
        variants.variant("iceberg_sink")


@main_kernel_only
def test_the_matrix_knows_the_iceberg_rows_and_runs_them_where_the_venv_exists(monkeypatch):
    assert set(ICEBERG) <= set(matrix.VARIANTS) and not set(ICEBERG) & set(variants.VARIANTS)
    monkeypatch.setattr(drivers, "iceberg_available", lambda: True)
    assert matrix.runnable()[-len(ICEBERG):] == list(variants.ICEBERG_VARIANTS)
    assert set(matrix.runnable()) | set(matrix.left_out()) == set(matrix.VARIANTS)
    assert not set(ICEBERG) & set(matrix.SAMPLE)  # make test's sample: no Iceberg driver (CPU)
    assert matrix.label("iceberg_sink") == "iceberg_sink (Spark 4.1 + Iceberg)" and matrix.label("delta_sink") == "delta_sink"


def test_the_table_marks_an_iceberg_row():
    rows = [matrix.MatrixRow(n, matrix.VARIANTS[n].guarantee, matrix.VARIANTS[n].guarantee, 40, 0, 0)
            for n in ("delta_sink", "iceberg_append")]
    text = str(matrix.table(rows, {"iceberg_append": "at-least-once"}))
    assert "iceberg_append (Spark 4.1 + Iceberg)" in text and "delta_sink (Spark" not in text
    assert "at-least-once" in str(matrix.verdict_lines(rows))


#: Run by the Iceberg venv's Python: a table in the Hadoop layout with two commits (order 1, then 1 and 2).
WRITE_A_TABLE = """
import sys
from decimal import Decimal
from pathlib import Path
import pyarrow as pa
from pyiceberg.catalog.noop import NoopCatalog
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.serializers import ToOutputFile
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import update_table_metadata
from pyiceberg.types import DecimalType, LongType, NestedField

folder, io = sys.argv[1], PyArrowFileIO()
def write(version, metadata):
    path = f"{folder}/metadata/v{version}.metadata.json"
    ToOutputFile.table_metadata(metadata, io.new_output(path))
    return path
class Folder(NoopCatalog):
    def commit_table(self, table, requirements, updates):
        new = update_table_metadata(table.metadata, updates, metadata_location=table.metadata_location)
        version = int(table.metadata_location.rsplit("/v", 1)[1].split(".")[0]) + 1
        return CommitTableResponse(metadata=new, metadata_location=write(version, new))
schema = Schema(NestedField(1, "order_id", LongType(), required=False),
                NestedField(2, "amount", DecimalType(10, 2), required=False))
metadata = new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, f"file:{folder}", {})
table = Table(("db", "t"), metadata, write(1, metadata), io, Folder("folder"))
arrow = pa.schema([("order_id", pa.int64()), ("amount", pa.decimal128(10, 2))])
for ids in ([1], [1, 2]):
    table.append(pa.Table.from_pylist([{"order_id": i, "amount": Decimal("19.99")} for i in ids], arrow))
"""


@needs_iceberg_venv
def test_an_iceberg_table_is_read_by_the_iceberg_venvs_python_where_pyiceberg_is_missing(tmp_path, monkeypatch):
    folder = tmp_path / "orders"
    subprocess.run([str(kernels.iceberg_python()), "-c", WRITE_A_TABLE, str(folder)], check=True, timeout=300)
    monkeypatch.setattr(sinks, "_has_pyiceberg", lambda: False)  # as on the main kernel, in either venv
    assert sorted(sinks.read_iceberg(folder)) == [(1, Decimal("19.99")), (1, Decimal("19.99")), (2, Decimal("19.99"))]
    files = sinks.IcebergTable(str(folder), "").files()
    assert files["committed"] == 2 and files["leftovers"] == []
    assert json.loads(json.dumps(sinks._in_iceberg_python("rows", folder)))  # plain JSON: ids and amounts as text


@pytest.fixture(scope="module")
def lesson():
    from deliverylab import setup

    lesson = setup("test-m08-iceberg", quiet=True)
    yield lesson
    lesson.cleanup()


@pytest.mark.stack
@main_kernel_only
@needs_iceberg_venv
def test_the_matrix_runs_iceberg_sink_from_the_main_kernel_exactly_once(lesson):
    """Few orders (20: a first batch, the crashed one, the downtime orders): the row's verdict, not its counts."""
    [row] = matrix.run(lesson, ["iceberg_sink"], orders=20, workers=1)
    assert (row.variant, row.expected, row.observed) == ("iceberg_sink", "exactly-once", "exactly-once")
    assert row.produced > 0 and row.pipe.crashes and all(c.by_sigkill for c in row.pipe.crashes)
    assert Path(row.pipe.driver.home.path).parent.name == "iceberg"  # the Iceberg venv's pool ran it
    assert not drivers.pool(str(kernels.iceberg_python()))._ready  # its standbys ended with the run
