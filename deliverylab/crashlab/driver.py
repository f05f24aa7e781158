"""A crash-lab driver process: ``python -m deliverylab.crashlab.driver <home>``.

It builds its SparkSession (with the crash hook) first, says ``ready``, and then waits
for an assignment: which pipeline to run from which checkpoint. So the notebook can keep
one driver booted ahead of need (a *standby*, see drivers.py) and a restart after a crash
costs the recovery from the checkpoint, not a JVM start. It is still a new process with
an empty memory: everything it knows about the query comes from the checkpoint.

A driver whose pipeline is stopped cleanly may be asked to wait again (``stop`` says
"recycle"): it forgets that pipeline's files, says ``idle``, and can then run the *first* start
of another pipeline, never this one's again and never a restart (drivers.py). Each pipeline
gets a SparkSession of its own (``newSession``: its own settings, views and functions).

Once assigned, it holds the pipeline's lock (one driver per checkpoint), reports every
micro-batch to the pipeline's progress file, and runs until it is asked to stop, its
query fails, it is killed, or the notebook process that started it goes away. The files
it uses are named in files.py.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

from . import crashpoints, dbwrites, files, sinks, variants
from ..config import CourseError, settings
from ..stack import processes

#: Error text kept for the notebook: the message and its causes, without JVM stack frames.
ERROR_CHARS = 4000
#: A standby nobody assigns work to ends after this long, giving its memory back.
STANDBY_IDLE_S = 5 * 60
#: A driver runs at most this many pipelines, one after the other (drivers.py: a clean stop can hand it
#: to another pipeline's first start); then it ends, and a JVM that ran many queries gives its memory back.
MAX_PIPELINES = 6
POLL_S = 0.05


def short_error(text: str, max_lines: int = 40) -> str:
    """An error's text without stack frames, code lines or query plans, so its last lines say what went wrong."""
    text = str(text).split("=== Streaming Query ===")[0]  # Spark appends the query's plan
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if (not stripped or line.startswith("    ")  # Python traceback code lines
                or stripped.startswith(("at ", "... ", 'File "', "Suppressed:", "JVM stacktrace:",
                                        "Traceback (most recent call last)"))
                or set(stripped) <= set("^~ ")):
            continue
        kept.append(line.rstrip())
    return "\n".join(kept[-max_lines:])[-ERROR_CHARS:]


def write_error(home: files.DriverHome, text: str) -> None:
    home.error.write_text(short_error(text) + "\n")


def _progress_record(run: int, p: dict) -> dict:
    """One micro-batch of a StreamingQueryProgress, as the notebook reads it back."""
    source = (p.get("sources") or [{}])[0]
    state = p.get("stateOperators") or []
    return {
        "event": "progress", "run": run, "batch": p["batchId"], "rows": p.get("numInputRows", 0),
        "start_offset": source.get("startOffset"), "end_offset": source.get("endOffset"),
        "ms": (p.get("durationMs") or {}).get("triggerExecution"), "durations": p.get("durationMs"),
        "state_rows": sum(op.get("numRowsTotal", 0) for op in state) if state else None,
        "state_dropped": sum(op.get("numRowsDroppedByWatermark", 0) for op in state) if state else None,
        "watermark": (p.get("eventTime") or {}).get("watermark"), "timestamp": p.get("timestamp"),
    }


def _warm_up(spark, scratch: Path, assigned) -> float:
    """Run the code paths a recovering query needs once, on throw-away data in ``scratch``.

    A JVM's first Delta commit, Parquet write and streaming batch take seconds of class
    loading and compiling. A standby pays that before it is needed, so a restart costs the
    recovery from the checkpoint only. Nothing here touches a pipeline's checkpoint or sink.
    It stops between steps once ``assigned()`` says a pipeline is waiting: the pipeline's own
    first batch warms up whatever is left. Returns the seconds it took.
    """
    import shutil

    started = time.monotonic()

    def rows():
        return spark.range(4).selectExpr("CAST(id AS STRING) AS order_id", "CAST(id AS DECIMAL(10,2)) AS amount")

    def stream_once():
        stream = (spark.readStream.format("rate").option("rowsPerSecond", 1).load()
                  .selectExpr("CAST(value AS STRING) AS order_id", "CAST(value AS DECIMAL(10,2)) AS amount"))
        (stream.writeStream.format("delta").option("checkpointLocation", str(scratch / "checkpoint"))
         .trigger(availableNow=True).start(str(scratch / "stream")).awaitTermination())

    steps = [lambda: rows().write.format("delta").mode("append").save(str(scratch / "delta")),
             lambda: rows().write.mode("append").parquet(str(scratch / "parquet")),
             lambda: spark.read.format("delta").load(str(scratch / "delta")).count(),
             stream_once]
    for step in steps:
        if assigned():
            break
        step()
    shutil.rmtree(scratch, ignore_errors=True)
    return time.monotonic() - started


def _wait_for_assignment(home: files.DriverHome, watch: processes.ParentWatch) -> dict | None:
    deadline = time.monotonic() + STANDBY_IDLE_S
    while time.monotonic() < deadline and not watch.gone():
        spec = home.read_assignment()
        if spec is not None:
            return spec
        time.sleep(POLL_S)
    return None


def _dump_memory_table(spark, home: files.DriverHome, table: str) -> None:
    """Answer a dump request: the rows an in-memory sink holds right now, as JSON lines."""
    rows = spark.sql(f"SELECT order_id, CAST(amount AS STRING) AS amount FROM {table}").collect()
    files.write_atomically(home.dump, "".join(json.dumps({"order_id": r[0], "amount": r[1]}) + "\n" for r in rows))
    home.dump_request.unlink(missing_ok=True)


def run(home: files.DriverHome, watch: processes.ParentWatch) -> int:
    # set before Spark starts, so the JVM (and executors, through spark.executorEnv) see them
    os.environ[crashpoints.DRIVER_PID_ENV] = str(os.getpid())
    os.environ[crashpoints.CRASH_FILE_ENV] = str(home.crash)

    from ..stack.session import get_spark

    spark = get_spark("crashlab-driver", extra_conf=crashpoints.hook_conf(home.crash, os.getpid()), log=home.log)
    if home.read_assignment() is None and settings().standby_warm_up:  # a standby: nobody waits for it yet
        seconds = _warm_up(spark, home.path / "warm-up", lambda: home.read_assignment() is not None)
        print(f"standby warmed up in {seconds:.1f} s", flush=True)  # driver.log; tests look for it
    files.write_atomically(home.ready, f"{os.getpid()}\n")

    for served in range(1, MAX_PIPELINES + 1):
        spec = _wait_for_assignment(home, watch)
        if spec is None:
            return 0
        code = _run_pipeline(spark, home, watch, spec)
        if code != 0 or not home.asked_to_recycle() or served == MAX_PIPELINES or watch.gone():
            return code
        # stopped cleanly and asked to wait for another pipeline's first start (drivers.py)
        dbwrites.uninstall()
        spark.catalog.clearCache()
        home.clear_for_next_pipeline(served)
    return 0


def _run_pipeline(spark, home: files.DriverHome, watch: processes.ParentWatch, spec: dict) -> int:
    """One pipeline's query, in a SparkSession of its own (its settings, temporary views and functions
    are not the next pipeline's), holding the pipeline's lock."""
    session = spark.newSession()
    # the mid-write trap (Java, in the crash hook jar): a filter that keeps every row
    spark._jvm.deliverylab.crashhook.MidWriteGate.register(session._jsparkSession)
    folder = files.PipelineFolder(Path(spec["folder"]))
    try:
        with files.hold_lock(folder):
            return _run_query(session, home, watch, spec, folder)
    except files.LockHeld as held:
        write_error(home, f"Another driver (pid {held.args[0]}) is running pipeline {spec['name']!r} "
                          "on the same checkpoint, so this one did not start.")
        return 3


def _run_query(spark, home: files.DriverHome, watch: processes.ParentWatch, spec: dict,
               folder: files.PipelineFolder) -> int:
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StreamingQueryListener

    class Progress(StreamingQueryListener):
        def onQueryStarted(self, event):
            processes.append_jsonl(folder.progress, {"event": "started", "run": spec["run"], "id": str(event.id)})

        def onQueryProgress(self, event):
            processes.append_jsonl(folder.progress, _progress_record(spec["run"], json.loads(event.progress.json)))

        def onQueryIdle(self, event):
            pass

        def onQueryTerminated(self, event):
            pass

    listener = Progress()
    spark.streams.addListener(listener)
    variant = (variants.load_custom(spec["code"], spec["variant"], spec) if spec.get("code")
               else variants.variant(spec["variant"]))
    out = variants.Outputs(sink=spec["sink"], checkpoint=spec["checkpoint"], bootstrap=spec["bootstrap"],
                           app_id=spec["app_id"], options=spec.get("options") or {})
    sinks.sink(variant.sink_kind, spec["sink"], spec["bootstrap"]).prepare(spark, table_first=variant.table_first)
    starting = out.options.get("starting_offsets", variant.starting_offsets)  # a lesson may override it
    # Every batch gets a Spark partition 1 for the mid-write gate, even one whose records all
    # come from one topic partition (a producer's request can reach the broker partition by partition).
    orders = variants.read_orders(spark, spec["bootstrap"], spec["topic"], starting_offsets=starting,
                                  max_per_batch=spec.get("max_per_batch"),
                                  min_partitions=crashpoints.MID_WRITE_PARTITION + 1)
    if spec.get("code") and variant.sink_kind == "sqlite":
        # a learner's database writer: mid_sink_write fires between its row writes (dbwrites.py)
        dbwrites.install(home.crash, spec["checkpoint"])
    else:
        orders = orders.filter(F.call_function(crashpoints.MID_WRITE_GATE, F.col("order_id")))
    query = variant.start(orders, out)
    try:
        while True:
            if home.stop.exists() or watch.gone():
                # Remove the listener first: otherwise Spark delivers onQueryTerminated to a
                # Python process that is already exiting, and logs a py4j error for it.
                spark.streams.removeListener(listener)
                query.stop()
                return 0
            if home.dump_request.exists():
                _dump_memory_table(spark, home, home.dump_request.read_text().strip())
            if not query.isActive:
                error = query.exception()
                if error is not None:
                    write_error(home, str(error))
                    return 1
                if spec.get("code"):  # nobody asked it to stop: a learner's query that ends by itself
                    raise CourseError(QUERY_ENDED)
                return 0
            time.sleep(POLL_S * 2)
    finally:
        try:
            spark.streams.removeListener(listener)
        except Exception:  # noqa: BLE001 - already removed, or the JVM is gone
            pass


#: A learner's query ended with no error while nobody stopped it (it is kept out of a driver's exit 0).
QUERY_ENDED = ("Your query ended by itself after it had caught up, so it cannot be crashed, restarted or drained: "
               "a trigger such as availableNow=True or once=True makes a batch job of it. Leave the trigger out.")


def main(argv: list[str]) -> int:
    args, parent = processes.parent_pid_from(argv)
    home = files.DriverHome(Path(args[0]))
    try:
        code = run(home, processes.ParentWatch(parent))
    except Exception as exc:  # noqa: BLE001 - the notebook shows these lines as the driver's status
        traceback.print_exc()  # the whole story goes to driver.log
        write_error(home, "".join(traceback.format_exception_only(type(exc), exc)))
        code = 1
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # skip interpreter teardown: Spark's threads have nothing left to do
