"""Helpers for the course "Exactly Once, For Real".

Notebooks call this package in a line or two; the logic lives here, grouped by concern.

The course and its lessons
    course       the module list, lesson-name parsing, quiz-bank paths (one place)
    config       where state lives, ports, learner id; CourseError
    lesson       deliverylab.setup("NN-name"): per-lesson topics, folders, reset, cleanup
    orders       the seeded order events and their producer
    streams      waiting for a streaming query, so Run All never races a stream
    sparkerrors  the error class at the start of a Spark or Delta error message ([STREAM_FAILED] ...)
    statusline   one line under a long cell that says what it is doing (a widget; stderr in a terminal)

Reading what Spark, Delta and Kafka leave behind (no Spark needed)
    checkpoint   the one reader of offsets/, commits/, sources/, metadata, _spark_metadata
    deltalog     a Delta table's _delta_log and data files (orphans, txn versions)
    ledger       reconcile produced against delivered: lost, duplicated, wrong amounts, revenue, verdict;
                 a keyed sink against each order's final state (several events per order)
    rows         an order row as the ledger compares it (id checked, amount in exact cents)
    sinkrows     delivered rows read back from a Delta table, Parquet folder, SQLite table, Kafka topic
    inspector    text views of a checkpoint and a Delta log, before and after a crash
    charts       the course's one chart style

Labs, quizzes and progress
    labs         labs generated from solutions          checks/   checks with hints, todo(), hidden runs
    quiz         quizzes and predictions (ipywidgets)    progress  the learner's progress store
    todos        an unfinished exercise in one line (a todo() left in a function, a name not set yet)

The machine (stack/: imports no course code)
    stack/       java, jars (+ ivy/), broker, kafka clients, session (+ classarchive), processes, jupyter
                 (+ workcopy: the learner's copies in my-work/),
                 runner, nbcapture (keeps what nbval executed, for the browser test) + nbtimings,
                 cputime (CPU seconds of a process tree, for the test run's table),
                 flaky (a proxy that loses produce replies), cluster (a local Spark standalone
                 cluster: master + 2 workers), brokers (a three-broker Kafka cluster),
                 classbroker (a room's broker with logins and ACLs) + classauth (its roster, passwords,
                 join tokens, ACL list and client login options), loginprobe (is a login refused?),
                 loginhint (a client built without the login, said in one line),
                 classrun (a command run as a learner logged in to a class broker of its own),
                 locks (one holder at a time, across processes)

The crash lab (crashlab/)
    crashlab/    variants (the pipelines, one table), sinks, crashpoints (+ java/ hook),
                 pipeline + record, drivers (standby drivers), driver (the process), files,
                 attempts, chaos, panel, dbwrites (mid_sink_write inside a learner's SQLite writer)

Each module's own helpers (modules/)
    modules/m01/ consumers (the code lesson 01 shows), process (the consumer process),
                 harness (run, crash, count), lab (checks)
    modules/m02/ groups (consumer groups vs the checkpoint), feed (a socket's far end),
                 ranges (a batch's range as Spark reported it), lab (checks)
    modules/m03/ queries (a query's checkpoint folder), charts (missing revenue), lab (checks)
    modules/m04/ retries (producer retries, copies), duplicates (source vs replay), watermarks,
                 pitfall (event-time cases), charts (dedup state), trial (a dedupe() run), lab (checks)
    modules/m05/ merges (MERGE demos in the kernel), scenarios (crash and replay, a new
                 checkpoint), lab (checks)
    modules/m06/ producers (a lost produce reply), relay (consume-transform-produce in one
                 transaction, its process), harness (run, crash, reconcile), lab (checks)
    modules/m07/ notifications (a side effect in foreachBatch), restarts (a deleted checkpoint),
                 kernel (availableNow runs: retention, query changes), keys (a random MERGE key),
                 quarantine (poison pills), lab (checks)
    modules/m08/ matrix (every variant through one chaos plan), price (throughput and latency
                 per variant), audit (Delta history as the audit trail), lab (checks)
    modules/m09/ clusters (the kernel onto both clusters), executors (an executor killed mid-task, the
                 notification Outbox), leaders (a partition leader killed mid-stream, acks and
                 min.insync.replicas), lab (checks)
    modules/m10/ tables (an Iceberg table read from its folder without a JVM: snapshots, ancestors,
                 stamps, rows), runs (the lesson's crashes and replays, expiry, the catalog-cache trap),
                 scenarios, hidden_runs, lab (checks: a foreachBatch writer, an expiry plan)

Workshops, and the course to read without running (workshop/)
    workshop/    events (results to each learner's board topic), feed (reading it), presence (hello, twin ids),
                 board (the instructor's live table), join (workshop.ini), button (Reset lesson),
                 site (make site: lessons as HTML)

Commands: doctor (environment check), bench (timings), lesson_bench (each lesson's Run All: time, slowest
cell, what its kernel holds afterwards), __main__ (python -m deliverylab),
running (what the course runs, by notebook kernel, with its memory: stack status),
cluster_smoke (one Kafka->Delta batch on the Spark cluster), cluster_bench (the cluster figures),
testrun (make test's phases, and the table of wall and CPU seconds it ends with).
"""
from .config import CourseError

__all__ = ["CourseError", "setup", "get_spark"]


def setup(name: str, *, reset: bool = True, quiet: bool = False):
    """``lesson = deliverylab.setup("02-anatomy")``: the first cell of every notebook.

    Broker up, the lesson's own topics and folders, its state reset, a five-line summary
    (see lesson.py). For a lesson that crashes Spark drivers, a standby driver also starts
    booting now, so the lesson's first pipeline starts in a second or two (crashlab/drivers.py).
    In JupyterLab a "Reset lesson" button follows the summary (workshop/button.py).
    """
    from . import statusline
    from .course import LAB_SUFFIX, uses_crash_lab
    from .lesson import setup as prepare

    statusline.watch_cells(statusline.kernel_activity)  # in a notebook: a long cell (this one too) says what it waits for
    _require_its_kernel(name)
    lesson = prepare(name, reset=reset, quiet=quiet)
    from .todos import explain_errors

    # a lab: after an unfinished TODO, the next cells say so in one line; on a class broker with logins, a
    # Kafka client built without the login says so too
    explain_errors(names=name.endswith(LAB_SUFFIX))
    if uses_crash_lab(name):
        from .crashlab import drivers

        drivers.warm_up()
        lesson.on_complete(drivers.release_standbys)  # a restart after the last cell boots a driver then
    if not quiet:
        from .workshop.button import show_reset_button

        show_reset_button(lesson)
    return lesson


def _require_its_kernel(name: str) -> None:
    """A lesson opened on the other kernel (module 10's on the main one, or the reverse) stops here, in one line."""
    from .course import ICEBERG_KERNEL, ICEBERG_KERNEL_DISPLAY_NAME, TEST_PREFIX, kernel_name
    from .stack.session import with_iceberg

    if name.startswith(TEST_PREFIX) or (kernel_name(name) == ICEBERG_KERNEL) == with_iceberg():
        return
    wanted = ICEBERG_KERNEL_DISPLAY_NAME if kernel_name(name) == ICEBERG_KERNEL else "Python 3 (ipykernel)"
    raise CourseError(f"{name} runs on the kernel \"{wanted}\", and this notebook runs on another: pick it with "
                      "Kernel > Change Kernel..., then run this cell again (`make setup` builds both kernels).")


def get_spark(app_name: str = "exactly-once-for-real"):
    """The course's SparkSession (built once per kernel; in a notebook its start says each step on a status line)."""
    from .statusline import spark_session

    return spark_session(app_name)
