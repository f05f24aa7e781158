"""Module 10's rows of the crash lab (variants.ICEBERG_VARIANTS) and its "iceberg" sink kind, without Spark.

Running them is lesson 10's job (on the Iceberg kernel); here: they are in the one table where they can run and
nowhere else, they write the "iceberg" sink, and their code keeps the properties the lesson teaches.
"""
from __future__ import annotations

import inspect

import pytest

from deliverylab.crashlab import sinks, variants
from deliverylab.stack.session import with_iceberg


def test_iceberg_rows_join_the_table_only_on_the_iceberg_kernel():
    names = set(variants.ICEBERG_VARIANTS)
    assert names == {"iceberg_sink", "iceberg_append", "iceberg_stamped", "iceberg_merge"}
    assert {v.sink_kind for v in variants.ICEBERG_VARIANTS.values()} == {"iceberg"} and "iceberg" in sinks.SINKS
    if with_iceberg():
        assert names <= set(variants.VARIANTS)
    else:  # the main kernel's table is what it was; a lookup by name runs them on the Iceberg venv's drivers
        assert not names & set(variants.VARIANTS)


def test_the_guarantees_the_lesson_expects():
    expected = {name: v.guarantee for name, v in variants.ICEBERG_VARIANTS.items()}
    assert expected == {"iceberg_sink": "exactly-once", "iceberg_append": "at-least-once",
                        "iceberg_stamped": "exactly-once", "iceberg_merge": "exactly-once"}


def test_the_stamped_writer_checks_ancestors_and_stamps_the_data_commit():
    code = inspect.getsource(variants.iceberg_stamped)
    assert "is_current_ancestor" in code  # the snapshots table alone also lists snapshots off the main line
    assert 'option("snapshot-property.course.batch", stamp).append()' in code  # the stamp rides on the data's commit
    assert "query_id(out.checkpoint)" in code  # a stamp that is the same in every run of the checkpoint


def test_a_learners_pipeline_may_write_the_iceberg_sink():
    def mine(orders, out):
        return orders.writeStream.toTable(out.iceberg_table)

    assert variants.custom(mine, sink_kind="iceberg").sink_kind == "iceberg"


class FakeSpark:
    class conf:  # noqa: N801 - mimics spark.conf
        values: dict = {}

        @classmethod
        def get(cls, key, default=None):
            return cls.values.get(key, default)


def test_outputs_name_the_table_in_the_course_catalog(tmp_path, monkeypatch):
    FakeSpark.conf.values = {"spark.sql.catalog.iceberg.warehouse": str(tmp_path)}
    monkeypatch.setattr(sinks, "_active_spark", lambda: FakeSpark)
    out = variants.Outputs(sink=str(tmp_path / "10-iceberg" / "tables" / "orders"), checkpoint="c", bootstrap="b",
                           app_id="a")
    assert out.iceberg_table == "iceberg.`10-iceberg`.`tables`.`orders`"


def test_an_iceberg_sink_before_its_first_commit(tmp_path):
    sink = sinks.sink("iceberg", str(tmp_path / "t"), "b")
    assert not sink.exists() and sink.rows() == [] and sink.log_view() is None
    assert sink.files() == {"committed": 0, "leftovers": [], "note": ""}
