"""A crash-lab pipeline's own driver process: ``python -m deliverylab.driver <run-folder>``.

The notebook (through ``crashlab.Pipeline``) starts this process in a process group of
its own, so killing the group kills a real Spark driver and its JVM while the notebook
keeps running. The run folder holds:

    spec.json        what to run (variant, topic, sink, checkpoint)
    crash            the armed crash point, if any (see crashpoints.py)
    crash.fired      the crash that fired: "<point> <batch>"
    progress.jsonl   one line per micro-batch progress report (from a StreamingQueryListener)
    stop             created by the notebook to ask for a clean stop
    error.txt        the error's last lines, if the query or the driver failed
    driver.log       everything Spark printed
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

#: Error text kept for the notebook: the message and its causes, without JVM stack frames.
ERROR_CHARS = 4000


def _append(path: Path, record: dict) -> None:
    with open(path, "a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")


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


def write_error(run: Path, text: str) -> None:
    (run / "error.txt").write_text(short_error(text) + "\n")


def main(run_dir: str) -> int:
    run = Path(run_dir)
    spec = json.loads((run / "spec.json").read_text())
    from .crashpoints import CRASH_FILE_ENV, DRIVER_PID_ENV

    # set before Spark starts, so the JVM and its Python workers inherit them
    os.environ[DRIVER_PID_ENV] = str(os.getpid())
    os.environ[CRASH_FILE_ENV] = str(run / "crash")

    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StreamingQueryListener

    from . import pipelines
    from .crashpoints import MID_WRITE_GATE
    from .session import get_spark

    spark = get_spark(f"pipeline-{spec['variant']}", crash_hook=True)
    progress_file = run / "progress.jsonl"

    class Progress(StreamingQueryListener):
        def onQueryStarted(self, event):
            _append(progress_file, {"event": "started", "run": spec["run"], "id": str(event.id)})

        def onQueryProgress(self, event):
            p = json.loads(event.progress.json)
            source = (p.get("sources") or [{}])[0]
            _append(progress_file, {
                "event": "progress", "run": spec["run"], "batch": p["batchId"],
                "rows": p.get("numInputRows", 0), "end_offset": source.get("endOffset"),
                "ms": (p.get("durationMs") or {}).get("triggerExecution"), "durations": p.get("durationMs"),
            })

        def onQueryIdle(self, event):
            pass

        def onQueryTerminated(self, event):
            pass

    listener = Progress()
    spark.streams.addListener(listener)
    variant = pipelines.variant(spec["variant"])
    out = pipelines.Outputs(sink=spec["sink"], checkpoint=spec["checkpoint"],
                            bootstrap=spec["bootstrap"], app_id=spec["app_id"])
    pipelines.prepare_sink(spark, variant, out)
    # the crash lab's mid-write trap (Java, in the crash hook jar): a filter that keeps every row
    spark._jvm.deliverylab.crashhook.MidWriteGate.register(spark._jsparkSession)
    orders = pipelines.read_orders(spark, spec["bootstrap"], spec["topic"],
                                   starting_offsets=variant.starting_offsets,
                                   max_per_batch=spec.get("max_per_batch"))
    orders = orders.filter(F.call_function(MID_WRITE_GATE, F.col("order_id")))
    query = variant.start(orders, out)
    try:
        while True:
            if (run / "stop").exists():
                # Remove the listener first: otherwise Spark delivers onQueryTerminated to a
                # Python process that is already exiting, and logs a py4j error for it.
                spark.streams.removeListener(listener)
                query.stop()
                return 0
            if not query.isActive:
                error = query.exception()
                if error is not None:
                    write_error(run, str(error))
                    return 1
                return 0
            time.sleep(0.1)
    finally:
        try:
            spark.streams.removeListener(listener)
        except Exception:  # noqa: BLE001 - already removed, or the JVM is gone
            pass


if __name__ == "__main__":
    try:
        code = main(sys.argv[1])
    except Exception as exc:  # noqa: BLE001 - the notebook shows these lines as the driver's status
        traceback.print_exc()  # the whole story goes to driver.log
        write_error(Path(sys.argv[1]), "".join(traceback.format_exception_only(type(exc), exc)))
        code = 1
    sys.stdout.flush()
    os._exit(code)  # skip interpreter teardown: Spark's threads have nothing left to do
