"""The status line of a long cell: in a terminal, nowhere, and in a real notebook kernel."""
import io
import queue

import pytest

from deliverylab import statusline
from deliverylab.stack import runner


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Pipe(io.StringIO):
    def isatty(self):
        return False


@pytest.fixture
def stderr(monkeypatch):
    def use(kind):
        stream = kind()
        monkeypatch.setattr("sys.stderr", stream)
        return stream

    yield use
    statusline._close_line()


def shown(stream) -> list[str]:
    """The texts the terminal showed, in order (each write starts with CLEAR)."""
    return [part.rstrip("\r") for part in stream.getvalue().split(statusline.CLEAR) if part.strip("\r")]


def test_a_terminal_task_counts_its_work_and_clears_its_line_at_the_end(stderr):
    term = stderr(Terminal)
    with statusline.task("guarantee matrix", total=2) as line:
        line.step("delta_txn: crash armed")
        statusline.say("delta_txn: catching up, 40 records not yet committed")
        line.done("delta_txn: exactly-once")
    texts = shown(term)
    assert texts[0].startswith("guarantee matrix · 0 of 2 done · starting")
    assert texts[1].startswith("guarantee matrix · 0 of 2 done · delta_txn: crash armed")
    assert texts[2].startswith("guarantee matrix · 0 of 2 done · delta_txn: catching up, 40 records")
    assert texts[3].startswith("guarantee matrix · 1 of 2 done · delta_txn: exactly-once")
    assert term.getvalue().endswith(statusline.CLEAR)  # nothing left on the line
    assert statusline._line is None


def test_a_task_inside_another_keeps_the_outer_title_and_count(stderr):
    term = stderr(Terminal)
    with statusline.task("guarantee matrix", total=3) as outer:
        with statusline.task("chaos run of matrix-delta_txn", total=1) as inner:
            inner.step("matrix-delta_txn: starting")
            inner.done()
        outer.done("delta_txn: exactly-once")
    texts = shown(term)
    assert not any("chaos run of" in t for t in texts)
    assert any(t.startswith("guarantee matrix · 0 of 3 done · matrix-delta_txn: starting") for t in texts)
    assert texts[-1].startswith("guarantee matrix · 1 of 3 done · delta_txn: exactly-once")


def test_nothing_is_written_where_no_line_can_show(stderr):
    pipe = stderr(Pipe)
    with statusline.task("guarantee matrix", total=1) as line:
        line.step("a step")
        statusline.say("a message")
        line.done()
    statusline.say("outside any task")
    assert pipe.getvalue() == ""


def test_a_terminal_shows_no_line_for_a_message_outside_a_task(stderr):
    term = stderr(Terminal)
    statusline.say("at_least_once: starting a driver (run 1)")
    assert term.getvalue() == ""


def test_in_a_notebook_kernel_the_line_is_a_widget_nbval_does_not_compare_and_it_closes_with_the_cell():
    """A real kernel: the line is displayed with the widget's view only (no text/plain, which nbval
    would compare), its text arrives as widget updates, and the widget is closed when the cell ends,
    which JupyterLab saves as a hidden output (no 'model not found' when the notebook is reopened)."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        code = ("from deliverylab import statusline\n"
                "with statusline.task('guarantee matrix', total=2) as line:\n"
                "    statusline.say('delta_txn: crash armed at after_sink_write')\n"
                "    import time; time.sleep(2.3)  # the clock ticks while nothing else changes\n"
                "    line.done('delta_txn: exactly-once')\n"
                "print('the cell printed this')")
        msg_id = client.execute(code)
        messages = []
        while True:
            try:
                msg = client.get_iopub_msg(timeout=60)
            except queue.Empty:
                pytest.fail(f"the kernel went quiet; messages so far: {[m['msg_type'] for m in messages]}")
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            messages.append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        displays = [m["content"] for m in messages if m["msg_type"] == "display_data"]
        assert [sorted(d["data"]) for d in displays] == [["application/vnd.jupyter.widget-view+json"]]
        assert displays[0]["metadata"] == {runner.STATUS_LINE: True}  # executed and rendered copies drop it
        model_id = displays[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        values = [m["content"]["data"]["state"].get("value", "") for m in messages
                  if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == model_id]
        assert any("guarantee matrix · 0 of 2 done · delta_txn: crash armed" in v for v in values)
        assert any("delta_txn: crash armed at after_sink_write · 2 s" in v for v in values)
        assert any("1 of 2 done · delta_txn: exactly-once" in v for v in values)
        assert any("guarantee matrix finished, 1 of 2 done" in v for v in values)
        closes = [m for m in messages if m["msg_type"] == "comm_close" and m["content"]["comm_id"] == model_id]
        assert closes, "the status line's widget was not closed when the cell ended"
        # the display became the line's last text: a saved notebook shows it without a kernel
        updates = [m["content"] for m in messages if m["msg_type"] == "update_display_data"]
        assert [sorted(u["data"]) for u in updates] == [["text/plain"]]
        assert updates[0]["data"]["text/plain"].startswith("✓ guarantee matrix finished, 1 of 2 done")
        assert updates[0]["metadata"] == {runner.STATUS_LINE: True}
        assert updates[0]["transient"]["display_id"] == displays[0]["transient"]["display_id"]
        streams = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
        assert streams == "the cell printed this\n"  # nothing of the line in the compared output
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_a_widget_button_opens_no_line_only_a_cell_does():
    class Kernel:
        def __init__(self, msg_type):
            self.msg_type = msg_type

        def get_parent(self):
            return {"header": {"msg_type": self.msg_type}}

    class Shell:
        def __init__(self, msg_type):
            self.kernel = Kernel(msg_type)

    assert statusline._in_a_cell(Shell("execute_request"))
    assert not statusline._in_a_cell(Shell("comm_msg"))  # a button's click


def test_a_long_query_wait_says_which_batch_the_query_has_finished(monkeypatch):
    from deliverylab import streams

    said = []
    monkeypatch.setattr(statusline, "say", said.append)

    class Query:
        def __init__(self):
            self.polls = 0

        def awaitTermination(self, timeout):
            self.polls += 1
            return self.polls > 3

        @property
        def lastProgress(self):
            return None if self.polls < 2 else {"batchId": self.polls - 2}

    assert streams.await_termination(Query(), "trial query") is True
    assert said == ["trial query: starting its first batch", "trial query: batch 0 done", "trial query: batch 1 done"]

    class Endless(Query):
        def awaitTermination(self, timeout):
            return False

    assert streams.await_termination(Endless(), "trial query", timeout_s=0) is False


def test_executed_and_rendered_copies_keep_no_status_line():
    line = {"output_type": "display_data", "metadata": {runner.STATUS_LINE: True},
            "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "abc"}}}
    printed = {"output_type": "stream", "name": "stdout", "text": "verdict: exactly-once\n"}
    assert runner.without_status_lines([line, printed]) == [printed]


def test_a_message_that_stands_still_says_why(stderr, monkeypatch):
    stderr(Terminal)
    monkeypatch.setattr(statusline, "STALE_S", 0.0)
    monkeypatch.setattr(statusline.os, "getloadavg", lambda: (3.9, 3.5, 3.0))
    monkeypatch.setattr(statusline.os, "cpu_count", lambda: 2)
    with statusline.task("guarantee matrix", total=1):
        statusline.say("delta_txn: catching up, 40 records not yet committed")
        busy = statusline._line.text()
        statusline.say("delta_txn: catching up, 40 records not yet committed", why="the driver waits for its batch")
        own = statusline._line.text()
    assert "unchanged for 0 s: the machine is busy (load 3.9 on 2 cores)" in busy
    assert own.endswith("unchanged for 0 s: the driver waits for its batch")
    monkeypatch.setattr(statusline.os, "getloadavg", lambda: (0.4, 0.4, 0.4))
    assert "not busy (load 0.4 on 2 cores)" in statusline.machine_load()


def test_the_stale_clock_restarts_only_when_the_message_changes(stderr):
    stderr(Terminal)
    with statusline.task("t"):
        statusline.say("a")
        first = statusline._line.changed
        statusline.say("a")
        assert statusline._line.changed == first
        statusline.say("b")
        assert statusline._line.changed > first


def _frames_through(modules: list[str], innermost):
    """Call ``innermost(frame)`` from the innermost of a chain of methods that live in ``modules`` (outermost
    first), as a cell's stack looks from the cell watcher; return what it returned."""
    call = None
    for module in reversed(modules):
        space = {"__name__": module, "inner": call or innermost, "sys": __import__("sys")}
        name = module.split(".")[-1].capitalize()
        body = "inner(sys._getframe())" if call is None else "inner()"
        exec(f"class {name}:\n    def work(self):\n        return {body}\n", space)
        call = space[name]().work
    return call()


def test_the_cell_watcher_names_the_spark_call_a_cell_is_in_and_what_spark_does(monkeypatch):
    monkeypatch.setattr(statusline, "spark_activity", lambda: "Spark job 3 'Delta: VACUUM': 1 of 2 tasks done")
    said = _frames_through(["deliverylab.streams", "pyspark.sql.readwriter", "pyspark.errors.captured",
                            "py4j.java_gateway"], statusline.kernel_activity)
    # the call the course (or the cell) made into pyspark, not pyspark's own inner calls
    assert said == "waiting for Spark: Readwriter.work() · Spark job 3 'Delta: VACUUM': 1 of 2 tasks done"
    monkeypatch.setattr(statusline, "spark_activity", lambda: None)
    said = _frames_through(["deliverylab.lesson"], statusline.kernel_activity)
    assert said == "in Lesson.work()"
    assert _frames_through(["__main__"], statusline.kernel_activity) is None  # the learner's own code: nothing said
    said = _frames_through(["pyspark.sql.readwriter"], statusline.kernel_activity)
    assert said == f"waiting for Spark: Readwriter.work() · {statusline.NO_JOB}"


def test_a_kernel_cell_that_runs_long_gets_a_line_from_the_watcher_and_it_closes_with_the_cell():
    """A real kernel: watch_cells opens a line under a cell that runs past WATCH_AFTER_S with no line of its own
    (from the watcher's thread), says what describe() says, and closes it when the cell ends."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        client.execute_interactive("from deliverylab import statusline\n"
                                   "statusline.watch_cells(lambda frame: 'waiting for a nap', after_s=0.5)",
                                   timeout=60)
        messages = []
        reply = client.execute_interactive("import time; time.sleep(4); print('done')", timeout=60,
                                           output_hook=messages.append)
        assert reply["content"]["status"] == "ok"
        displays = [m["content"] for m in messages if m["msg_type"] == "display_data"]
        assert [sorted(d["data"]) for d in displays] == [["application/vnd.jupyter.widget-view+json"]]
        updates = [m["content"] for m in messages if m["msg_type"] == "update_display_data"]
        assert updates and updates[0]["data"]["text/plain"].startswith("✓ waiting for a nap · ")
        quick = []
        client.execute_interactive("print('quick')", timeout=60, output_hook=quick.append)
        assert not [m for m in quick if m["msg_type"] == "display_data"]  # a short cell gets no line
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
