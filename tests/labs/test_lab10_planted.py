"""Lab 10 with planted answers, run for real on module 10's kernel (Spark 4.1 + Iceberg): right answers written
differently pass; each wrong one ends in FAIL with a hint.

Every answer is handed to the lab's own calls (the cells' scenarios and checks), so it meets the real broker, real
Iceberg tables and the notebook's Spark, on the run shown and on the check's hidden run (exercise 1: a redeploy on
the same table with a new checkpoint in the same folder, a crash right after the first commit in a batch drawn from
the seed, other writers' commits before the restart, a rollback past a batch before its replay; exercise 2: other
writers and another streaming query committing after the sink). Wrong answers of four kinds: a value copied from
the demo (kind 1: exercise 2's retain_last counted on the run shown), a rule right only on the demo's data (kind 2:
the newest snapshot only, a stamp unique within one checkpoint, any streaming query's commit), and a mark the run
shown has no probe for (kind 3: the crash between two commits of one batch, which only the hidden run has). No
verdict here depends on a race: every crash is armed for a batch and a moment, not timed.

Run with the Iceberg venv's Python: ``.venv-iceberg/bin/python -m pytest tests/labs/test_lab10_planted.py``; on
the main kernel (Spark 4.2, no Iceberg runtime) the module is skipped."""
import pytest
from planted import assert_all_pass, assert_fails_with_a_hint

pyspark = pytest.importorskip("pyspark")
if not pyspark.__version__.startswith("4.1"):
    pytest.skip("lab 10 runs on module 10's kernel (.venv-iceberg: Spark 4.1 + Iceberg)", allow_module_level=True)

from deliverylab.checks import Checks  # noqa: E402
from deliverylab.modules.m10 import lab, scenarios  # noqa: E402

pytestmark = [pytest.mark.stack, pytest.mark.labs]


# Each answer is self-contained, as the lab asks: at each start the lab makes it again from its source.


def right_stamp(orders, out):
    def write(batch, batch_id):
        stamp = f"{out.query_id()}:{batch_id}"
        if batch.sparkSession.sql(
                f"SELECT count(*) FROM {out.table}.snapshots s JOIN {out.table}.history h USING (snapshot_id) "
                f"WHERE h.is_current_ancestor AND s.summary['course.batch'] = '{stamp}'").first()[0]:
            return
        batch.writeTo(out.table).option("snapshot-property.course.batch", stamp).append()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def stamp_walked_in_python(orders, out):  # right, another shape: the parents walked in Python, another key
    def write(batch, batch_id):
        spark = batch.sparkSession
        stamp = f"{out.query_id()}/{batch_id}"
        head = spark.sql(f"SELECT snapshot_id FROM {out.table}.refs WHERE name = 'main'").collect()
        by_id = {r.snapshot_id: r for r in spark.sql(f"SELECT snapshot_id, parent_id, summary FROM {out.table}.snapshots").collect()}
        snapshot = by_id.get(head[0].snapshot_id) if head else None
        while snapshot is not None:
            if snapshot.summary.get("writer.batch") == stamp:
                return
            snapshot = by_id.get(snapshot.parent_id)
        batch.writeTo(out.table).option("snapshot-property.writer.batch", stamp).append()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def merge_on_order_id(orders, out):  # right, another shape: the memory is the rows (insert-only MERGE on the key)
    def write(batch, batch_id):
        batch.dropDuplicates(["order_id"]).createOrReplaceTempView("incoming")
        batch.sparkSession.sql(f"MERGE INTO {out.table} t USING incoming s ON t.order_id = s.order_id "
                               "WHEN NOT MATCHED THEN INSERT *")

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def overwrite_the_batch(orders, out):  # right, another shape: each row names its query and batch; one overwrite
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if "batch_id" not in spark.table(out.table).columns:
        spark.sql(f"ALTER TABLE {out.table} ADD COLUMNS (query_id STRING, batch_id BIGINT)")
        # a query id is 36 characters; Iceberg keeps 16 of a string's bounds unless told to keep them whole, and
        # without whole bounds it cannot prove that a file holds only this batch: the overwrite would refuse it
        spark.sql(f"ALTER TABLE {out.table} SET TBLPROPERTIES ('write.metadata.metrics.column.query_id' = 'full')")

    def write(batch, batch_id):
        from pyspark.sql import functions as F

        query = out.query_id()
        (batch.withColumn("query_id", F.lit(query)).withColumn("batch_id", F.lit(batch_id).cast("bigint"))
         .writeTo(out.table).overwrite((F.col("query_id") == query) & (F.col("batch_id") == batch_id)))

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


# ---------------------------------------------------------------- exercise 1: wrong writers


def plain_append(orders, out):
    def write(batch, batch_id):
        batch.writeTo(out.table).append()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def _stamped_writer(stamp_expression: str, seen_query: str):
    """The source of a stamped writer like right_stamp, with another stamp or another check (planted mistakes)."""
    return f"""
def writer(orders, out):
    def write(batch, batch_id):
        import time, uuid
        stamp = {stamp_expression}
        if batch.sparkSession.sql({seen_query}).first()[0]:
            return
        batch.writeTo(out.table).option("snapshot-property.course.batch", stamp).append()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()
"""


ANCESTORS = ('f"SELECT count(*) FROM {out.table}.snapshots s JOIN {out.table}.history h USING (snapshot_id) '
             'WHERE h.is_current_ancestor AND s.summary[\'course.batch\'] = \'{stamp}\'"')
EVERY_LISTED = 'f"SELECT count(*) FROM {out.table}.snapshots WHERE summary[\'course.batch\'] = \'{stamp}\'"'
NEWEST_ONLY = ('f"SELECT count(*) FROM (SELECT summary FROM {out.table}.snapshots ORDER BY committed_at DESC LIMIT 1) '
               'WHERE summary[\'course.batch\'] = \'{stamp}\'"')


def planted(name: str, source: str):
    """A planted answer from its source, kept in a file of its own so the lab can read it back as a learner's."""
    import importlib.util
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source.replace("def writer(", f"def {name}(", 1))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


stamp_uuid = planted("stamp_uuid", _stamped_writer('f"{uuid.uuid4()}:{batch_id}"', ANCESTORS))  # new on every call
stamp_in_snapshots_table = planted("stamp_in_snapshots_table", _stamped_writer('f"{out.query_id()}:{batch_id}"',
                                                                               EVERY_LISTED))  # rolled-back ones too
stamp_in_newest_snapshot = planted("stamp_in_newest_snapshot",  # kind 2: right while this writer commits last
                                   _stamped_writer('f"{out.query_id()}:{batch_id}"', NEWEST_ONLY))
stamp_of_the_batch_only = planted("stamp_of_the_batch_only",  # kind 2: unique within one checkpoint only
                                  _stamped_writer("str(batch_id)", ANCESTORS))
stamp_of_the_checkpoint_path = planted("stamp_of_the_checkpoint_path",  # kind 2: a new checkpoint in the same folder
                                       _stamped_writer('f"{out.checkpoint}:{batch_id}"', ANCESTORS))


def stamp_from_the_start_time(orders, out):  # a stamp that changes with each start of the query
    import time

    started = time.time()

    def write(batch, batch_id):
        stamp = f"{started}:{batch_id}"
        if batch.sparkSession.sql(
                f"SELECT count(*) FROM {out.table}.snapshots s JOIN {out.table}.history h USING (snapshot_id) "
                f"WHERE h.is_current_ancestor AND s.summary['course.batch'] = '{stamp}'").first()[0]:
            return
        batch.writeTo(out.table).option("snapshot-property.course.batch", stamp).append()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def stamp_from_the_run_id(orders, out):  # query.runId: new at every start (query.id would be right)
    import time

    handle = []

    def write(batch, batch_id):
        while not handle:  # a batch can begin before start() has returned
            time.sleep(0.01)
        stamp = f"{handle[0].runId}:{batch_id}"
        if batch.sparkSession.sql(
                f"SELECT count(*) FROM {out.table}.snapshots s JOIN {out.table}.history h USING (snapshot_id) "
                f"WHERE h.is_current_ancestor AND s.summary['course.batch'] = '{stamp}'").first()[0]:
            return
        batch.writeTo(out.table).option("snapshot-property.course.batch", stamp).append()

    query = orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()
    handle.append(query)
    return query


DONE_BATCHES = set()


def remembers_in_python(orders, out):  # the batches done kept in the notebook's memory: a crash takes it
    def write(batch, batch_id):
        if batch_id in DONE_BATCHES:
            return
        batch.writeTo(out.table).append()
        DONE_BATCHES.add(batch_id)

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def stamp_in_a_later_commit(orders, out):  # the mark in a table property set after the data's commit
    def write(batch, batch_id):
        spark = batch.sparkSession
        stamp = f"{out.query_id()}:{batch_id}"
        props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {out.table}").collect()}
        if props.get("course.last-batch") == stamp:
            return
        batch.writeTo(out.table).append()
        spark.sql(f"ALTER TABLE {out.table} SET TBLPROPERTIES ('course.last-batch' = '{stamp}')")

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def stamp_in_a_table_of_its_own(orders, out):  # a control table written after the data
    def write(batch, batch_id):
        spark = batch.sparkSession
        stamps = out.table.rsplit(".", 1)[0] + ".`stamps`"
        spark.sql(f"CREATE TABLE IF NOT EXISTS {stamps} (stamp STRING) USING iceberg")
        stamp = f"{out.query_id()}:{batch_id}"
        if spark.sql(f"SELECT count(*) FROM {stamps} WHERE stamp = '{stamp}'").first()[0]:
            return
        batch.writeTo(out.table).append()
        spark.sql(f"INSERT INTO {stamps} VALUES ('{stamp}')")

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def stamp_before_the_data(orders, out):  # the mark first, then the rows: a crash between them loses the batch
    def write(batch, batch_id):
        spark = batch.sparkSession
        stamp = f"{out.query_id()}:{batch_id}"
        props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {out.table}").collect()}
        if props.get("course.batch") == stamp:
            return
        spark.sql(f"ALTER TABLE {out.table} SET TBLPROPERTIES ('course.batch' = '{stamp}')")
        batch.writeTo(out.table).append()

    return orders.writeStream.foreachBatch(write).option("checkpointLocation", out.checkpoint).start()


def run_exercise_1(lesson, writer):
    run = scenarios.crash_and_replay(lesson, writer)  # as the lab's cell
    checks = Checks("10-iceberg-lab", record=False)
    lab.check_exactly_once_writer(checks, lambda: run)
    return checks


@pytest.mark.parametrize("writer", [right_stamp, stamp_walked_in_python, merge_on_order_id, overwrite_the_batch])
def test_exercise_1_passes_right_writers(lesson, writer):
    assert_all_pass(run_exercise_1(lesson, writer))


@pytest.mark.parametrize("writer", [plain_append, remembers_in_python, stamp_uuid, stamp_from_the_start_time,
                                    stamp_from_the_run_id, stamp_in_a_later_commit, stamp_in_a_table_of_its_own,
                                    stamp_before_the_data,
                                    stamp_in_snapshots_table, stamp_in_newest_snapshot, stamp_of_the_batch_only,
                                    stamp_of_the_checkpoint_path])
def test_exercise_1_fails_a_planted_mistake(lesson, writer):
    checks = run_exercise_1(lesson, writer)
    assert_fails_with_a_hint(checks)
    print("\n".join(line for r in checks.results for line in r.lines))


# ---------------------------------------------------------------- exercise 2: maintenance plans

NOW = "date_format(current_timestamp() + INTERVAL 1 SECOND, 'yyyy-MM-dd HH:mm:ss.SSS')"


def right_plan(spark, table, checkpoint):
    from deliverylab.checkpoint import query_id

    last = spark.sql(f"SELECT max(unix_millis(s.committed_at)) FROM {table}.snapshots s JOIN {table}.history h "
                     f"USING (snapshot_id) WHERE h.is_current_ancestor AND "
                     f"s.summary['spark.sql.streaming.queryId'] = '{query_id(checkpoint)}'").first()[0]
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP_MILLIS({last}))")


def retain_up_to_the_sink(spark, table, checkpoint):  # right, another shape: count the ancestors down to it
    from deliverylab.checkpoint import query_id

    query = query_id(checkpoint)
    head = spark.sql(f"SELECT snapshot_id FROM {table}.refs WHERE name = 'main'").first()[0]
    by_id = {r.snapshot_id: r for r in spark.sql(f"SELECT snapshot_id, parent_id, summary FROM {table}.snapshots").collect()}
    keep, snapshot = 1, by_id[head]
    while snapshot.summary.get("spark.sql.streaming.queryId") != query:
        keep, snapshot = keep + 1, by_id[snapshot.parent_id]
    now = spark.sql(f"SELECT {NOW}").first()[0]
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP '{now}', "
              f"retain_last => {keep})")


def timestamp_literal(spark, table, checkpoint):  # right, another shape: the commit time as a literal (UTC session)
    from deliverylab.checkpoint import query_id

    rows = spark.sql(f"SELECT s.committed_at FROM {table}.snapshots s JOIN {table}.history h USING (snapshot_id) "
                     f"WHERE h.is_current_ancestor AND s.summary['spark.sql.streaming.queryId'] = "
                     f"'{query_id(checkpoint)}' ORDER BY s.committed_at DESC LIMIT 1").collect()
    when = spark.sql(f"SELECT date_format(timestamp_millis({int(rows[0].committed_at.timestamp() * 1000)}), "
                     "'yyyy-MM-dd HH:mm:ss.SSS')").first()[0]
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP '{when}')")


def keep_the_newest_only(spark, table, checkpoint):  # retain_last => 1 after another writer's commit
    now = spark.sql(f"SELECT {NOW}").first()[0]
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP '{now}', "
              "retain_last => 1)")


def keep_two_as_above(spark, table, checkpoint):  # kind 1: one foreign commit above, so keep two
    now = spark.sql(f"SELECT {NOW}").first()[0]
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP '{now}', "
              "retain_last => 2)")


def newest_of_any_stream(spark, table, checkpoint):  # kind 2: any streaming query's commit, not this query's
    last = spark.sql(f"SELECT max(unix_millis(s.committed_at)) FROM {table}.snapshots s JOIN {table}.history h "
                     f"USING (snapshot_id) WHERE h.is_current_ancestor AND "
                     "s.summary['spark.sql.streaming.queryId'] IS NOT NULL").first()[0]
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP_MILLIS({last}))")


def from_the_first_commit(spark, table, checkpoint):  # safe, but it never expires any of the query's snapshots
    from deliverylab.checkpoint import query_id

    first = spark.sql(f"SELECT min(unix_millis(committed_at)) FROM {table}.snapshots "
                      f"WHERE summary['spark.sql.streaming.queryId'] = '{query_id(checkpoint)}'").first()[0]
    spark.sql(f"CALL iceberg.system.expire_snapshots(table => '{table}', older_than => TIMESTAMP_MILLIS({first}))")


def run_exercise_2(lesson, plan):
    run = scenarios.expire_and_replay(lesson, plan)  # as the lab's cell
    checks = Checks("10-iceberg-lab", record=False)
    lab.check_maintenance_plan(checks, lambda: run)
    return checks


@pytest.mark.parametrize("plan", [right_plan, retain_up_to_the_sink, timestamp_literal])
def test_exercise_2_passes_right_plans(lesson, plan):
    assert_all_pass(run_exercise_2(lesson, plan))


@pytest.mark.parametrize("plan", [keep_the_newest_only, keep_two_as_above, newest_of_any_stream,
                                  from_the_first_commit])
def test_exercise_2_fails_a_planted_mistake(lesson, plan):
    checks = run_exercise_2(lesson, plan)
    assert_fails_with_a_hint(checks)
    print("\n".join(line for r in checks.results for line in r.lines))
