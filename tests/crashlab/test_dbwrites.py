"""The database trap fires mid_sink_write between a writer's row writes, whatever the writer's shape.

Each writer runs in a process of its own, as in a driver, and the trap really SIGKILLs it.
"""
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from deliverylab.crashlab import crashpoints, dbwrites

WRITERS = {
    "one_transaction": """
        db = sqlite3.connect(DB)
        with db:
            db.executemany("INSERT INTO orders VALUES (?)", ROWS)
    """,
    "commit_each_row": """
        for row in ROWS:
            db = sqlite3.connect(DB, isolation_level=None)  # autocommit
            db.execute("INSERT INTO orders VALUES (?)", row)
            db.close()
    """,
    "reads_and_transactions_only": """
        db = sqlite3.connect(DB, isolation_level=None)
        for _ in range(20):
            db.execute("SELECT count(*) FROM orders").fetchone()
            db.execute("BEGIN")
            db.execute("COMMIT")
    """,
}


@pytest.fixture
def driver(tmp_path):
    """Run a writer in a process of its own while the checkpoint runs batch 3; returns its exit code."""
    (tmp_path / "ckpt" / "offsets").mkdir(parents=True)
    for n in range(4):
        (tmp_path / "ckpt" / "offsets" / str(n)).write_text("v1\n")
    crash_file, db_path = tmp_path / "crash", tmp_path / "sink.db"
    with sqlite3.connect(db_path) as db:
        db.execute("CREATE TABLE orders (order_id TEXT PRIMARY KEY)")

    def run(writer, prefix="o"):
        script = (f"import sqlite3\nfrom deliverylab.crashlab import dbwrites\n"
                  f"dbwrites.install({str(crash_file)!r}, {str(tmp_path / 'ckpt')!r})\n"
                  f"DB = {str(db_path)!r}\nROWS = [('{prefix}-%d' % n,) for n in range(20)]\n"
                  + textwrap.dedent(WRITERS[writer]))
        env = {**os.environ, crashpoints.CRASH_FILE_ENV: str(crash_file)}
        return subprocess.run([sys.executable, "-c", script], env=env, start_new_session=True, timeout=60).returncode

    return run, crash_file, db_path


def rows_in(db_path):
    db = sqlite3.connect(db_path)
    try:
        return db.execute("SELECT count(*) FROM orders").fetchone()[0]
    finally:
        db.close()


@pytest.mark.parametrize("writer,rows_left", [("one_transaction", 0), ("commit_each_row", dbwrites.ROWS_BEFORE_CRASH)])
def test_the_crash_lands_between_row_writes(driver, writer, rows_left):
    run, crash_file, db_path = driver
    crashpoints.arm(crash_file, "mid_sink_write")
    assert run(writer) == -signal.SIGKILL
    assert crashpoints.fired(crash_file) == ("mid_sink_write", 3)
    assert crashpoints.armed(crash_file) is None  # disarmed: the restarted driver writes normally
    assert rows_in(db_path) == rows_left  # one transaction rolled back; rows committed one by one stay


def test_nothing_fires_when_nothing_or_another_batch_or_point_is_armed(driver):
    run, crash_file, db_path = driver
    assert run("one_transaction", "o") == 0
    crashpoints.arm(crash_file, "mid_sink_write", batch=7)
    assert run("one_transaction", "p") == 0
    crashpoints.arm(crash_file, "after_sink_write")
    assert run("one_transaction", "q") == 0
    assert rows_in(db_path) == 60 and crashpoints.fired(crash_file) is None


def test_reads_and_transaction_statements_are_not_counted(driver):
    run, crash_file, db_path = driver
    crashpoints.arm(crash_file, "mid_sink_write", batch=3)
    assert run("reads_and_transactions_only") == 0
    assert crashpoints.fired(crash_file) is None


def test_uninstall_gives_sqlite_its_own_connect_back(tmp_path):
    """A driver that goes on to another pipeline after a clean stop (drivers.py) uninstalls the trap."""
    real = sqlite3.connect
    try:
        dbwrites.install(tmp_path / "crash", tmp_path / "ckpt")
        dbwrites.install(tmp_path / "crash", tmp_path / "ckpt")  # twice: still one layer
        assert sqlite3.connect is not real and sqlite3.connect.deliverylab_real_connect is real
        dbwrites.uninstall()
        assert sqlite3.connect is real
        dbwrites.uninstall()  # nothing installed: nothing changes
        assert sqlite3.connect is real
    finally:
        sqlite3.connect = real
