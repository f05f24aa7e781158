"""checks.py: PASS / FAIL / SKIP lines, hints, dependencies, type mix-ups, todo()."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from deliverylab import progress
from deliverylab.checks import Checks, LabTodo, todo


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("DELIVERYLAB_LEARNER", "tester")


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def fake_type(name: str, module: str):
    return type(name, (), {"__module__": module})


def test_a_pass_prints_exactly_one_line(capsys):
    checks = Checks("01-three-guarantees-lab")
    checks.equal("three orders arrived", lambda: 1 + 2, 3)
    assert lines(capsys) == ["PASS  three orders arrived"]
    assert checks.result("three orders arrived").passed


def test_a_failure_shows_expected_found_and_hint(capsys):
    checks = Checks("01-three-guarantees-lab")
    checks.equal("no order was lost", lambda: 2, 0, hint="Look at when the offset is committed.")
    assert lines(capsys) == [
        "FAIL  no order was lost",
        "  expected: 0",
        "  found:    2",
        "  hint:     Look at when the offset is committed.",
    ]


def test_a_kafka_read_without_the_class_brokers_login_fails_with_the_login_as_its_hint(capsys, monkeypatch):
    """A lab's Spark read built without .options(**lesson.spark_login), counted by the check on a class broker."""
    from deliverylab.stack import kafka

    monkeypatch.setenv("DELIVERYLAB_BROKER", "192.168.1.20:9092")
    monkeypatch.setenv("DELIVERYLAB_KAFKA_PASSWORD", "pw")
    monkeypatch.setattr(kafka, "answers", lambda broker, login=None, **_: login is not None)

    def count():
        raise RuntimeError("An error occurred while calling o68.count. TimeoutException: Timed out waiting for a "
                           "node assignment. Call: listNodes")
    Checks("m", record=False).equal("committed_df holds 200 orders", count, 200, hint="Read committed only.")
    shown = lines(capsys)
    assert shown[0].startswith("FAIL  committed_df holds 200 orders (raised RuntimeError: An error occurred")
    assert shown[1].startswith("  hint:     The class broker at 192.168.1.20:9092 answers your login, but this client")
    monkeypatch.delenv("DELIVERYLAB_BROKER")  # the course's own broker: the check's own hint
    Checks("m", record=False).equal("committed_df holds 200 orders", count, 200, hint="Read committed only.")
    assert lines(capsys)[1] == "  hint:     Read committed only."


def test_a_value_of_another_type_is_named(capsys):
    Checks("m", record=False).equal("count is 3", "3", 3)
    assert "  found:    '3' (a str)" in lines(capsys)


def test_an_unfinished_todo_skips_instead_of_crashing(capsys):
    checks = Checks("m", record=False)
    checks.equal("lost orders found", lambda: todo("find the lost orders"), [2])
    assert lines(capsys) == ["SKIP  lost orders found (an earlier step is not done yet: find the lost orders)"]
    assert checks.result("lost orders found").status == "SKIP"


def test_a_todo_wrapped_by_another_error_is_still_recognised(capsys):
    def spark_job():
        raise RuntimeError("StreamingQueryException: " + str(LabTodo("write the batch")) + "\n  at ...")

    Checks("m", record=False).that("the batch was written", spark_job)
    assert lines(capsys) == ["SKIP  the batch was written (an earlier step is not done yet: write the batch)"]


def test_an_undefined_name_skips_with_a_pointer(capsys):
    Checks("m", record=False).equal("lost is right", lambda: never_defined_name, 1)  # noqa: F821
    [line] = lines(capsys)
    assert line.startswith("SKIP  lost is right (`never_defined_name` is not set yet: run the cells above")


def test_any_other_error_fails_with_its_type_and_hint(capsys):
    Checks("m", record=False).equal("ratio", lambda: 1 / 0, 1, hint="Check the divisor.")
    assert lines(capsys) == [
        "FAIL  ratio (raised ZeroDivisionError: division by zero)",
        "  hint:     Check the divisor.",
    ]


def test_depends_on_a_failed_check_skips(capsys):
    checks = Checks("m", record=False)
    checks.equal("first", lambda: 1, 2)
    capsys.readouterr()
    checks.equal("second", lambda: 1, 1, depends_on="first")
    assert lines(capsys) == ["SKIP  second (needs: first)"]


def test_depends_on_by_id_runs_once_the_dependency_passes(capsys):
    checks = Checks("m", record=False)
    checks.equal("the stream started", lambda: True, True, id="started")
    checks.equal("it wrote rows", lambda: 5, 5, depends_on="started")
    assert lines(capsys) == ["PASS  the stream started", "PASS  it wrote rows"]


def test_depends_on_a_check_that_never_ran(capsys):
    Checks("m", record=False).that("second", True, depends_on="first")
    assert lines(capsys) == ["SKIP  second (needs: first, which has not run yet; run the cells above first)"]


def test_rerunning_a_check_replaces_its_result(capsys):
    checks = Checks("m", record=False)
    checks.equal("x", lambda: 1, 2)
    checks.equal("x", lambda: 2, 2)
    assert [r.status for r in checks.results] == ["PASS"]


def test_that_uses_expected_and_lazy_found(capsys):
    checks = Checks("m", record=False)
    checks.that("nothing duplicated", lambda: False, expected="0 duplicates", found=lambda: "2 duplicates")
    assert lines(capsys) == ["FAIL  nothing duplicated", "  expected: 0 duplicates", "  found:    2 duplicates"]


def test_that_rejects_a_condition_that_is_not_a_bool(capsys):
    DataFrame = fake_type("DataFrame", "pyspark.sql.dataframe")
    Checks("m", record=False).that("has rows", lambda: DataFrame())
    out = lines(capsys)
    assert out[0] == "FAIL  has rows"
    assert out[1] == "  expected: True or False"
    assert out[2].startswith("  found:    a DataFrame")


def test_is_type_names_the_expected_type_and_the_fix(capsys):
    DataFrame = fake_type("DataFrame", "pyspark.sql.dataframe")
    Checks("m", record=False).is_type("the query runs", lambda: DataFrame(), "StreamingQuery")
    out = lines(capsys)
    assert out[:3] == ["FAIL  the query runs", "  expected: a StreamingQuery", "  found:    a DataFrame"]
    assert out[3].startswith("  fix:      ") and ".start()" in out[3]


def test_is_type_matches_by_short_or_package_name(capsys):
    StreamingQuery = fake_type("StreamingQuery", "pyspark.sql.streaming.query")
    checks = Checks("m", record=False)
    checks.is_type("short name", StreamingQuery(), "StreamingQuery")
    checks.is_type("package name", StreamingQuery(), "pyspark.sql.streaming.StreamingQuery")
    checks.is_type("real type", 3, int)
    checks.is_type("wrong package", StreamingQuery(), "other.lib.StreamingQuery")
    assert [r.status for r in checks.results] == ["PASS", "PASS", "PASS", "FAIL"]


def test_equal_suggests_count_for_a_dataframe_given_for_a_number(capsys):
    DataFrame = fake_type("DataFrame", "pyspark.sql.dataframe")
    Checks("m", record=False).equal("three rows", lambda: DataFrame(), 3)
    assert any(line.startswith("  fix:      call .count()") for line in lines(capsys))


def test_summary_line_avoids_the_test_runner_shape(capsys):
    checks = Checks("m", record=False)
    checks.equal("a", lambda: 1, 1)
    checks.equal("b", lambda: 1, 2)
    checks.equal("c", lambda: todo("x"), 2)
    capsys.readouterr()
    checks.summary()
    out = lines(capsys)
    assert out == ["checks passed 1 of 3 (1 failed, 1 skipped)", "first to look at: b"]
    assert not any(re.search(r"\d+ passed, \d+ failed", line) for line in out)


def test_passed_checks_and_a_complete_lab_are_recorded():
    checks = Checks("01-three-guarantees-lab")
    checks.equal("a", lambda: 1, 1)
    checks.equal("b", lambda: 1, 2)
    checks.summary()
    assert progress.passed_checks("01-three-guarantees") == ["a"]
    assert not progress.lab_complete("01-three-guarantees")

    checks.equal("b", lambda: 2, 2)
    checks.summary()
    assert progress.lab_complete("01-three-guarantees")


def test_a_check_needs_a_description():
    with pytest.raises(TypeError, match="description"):
        Checks("m", record=False).equal("", 1, 1)


def test_todo_raises_a_friendly_error_with_a_one_line_traceback():
    with pytest.raises(LabTodo) as caught:
        todo("count the lost orders.")
    message = str(caught.value)
    assert message == ("TODO not done yet: count the lost orders. Replace the todo(...) line "
                       "with your code, then run this cell again.")
    assert caught.value._render_traceback_() == [message]


def test_importing_checks_does_not_import_spark():
    code = "import sys, deliverylab.checks; print('pyspark' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_an_unfinished_todo_is_found_in_a_functions_source_without_running_it():
    from deliverylab.checks import LabTodo, todo
    from deliverylab.todos import raise_if_todo, unfinished_todo

    def stub(orders, out):
        # TODO: write it
        todo("write each batch once")

    def nested(orders, out):
        def write(batch, batch_id):
            todo()
        return orders.writeStream.foreachBatch(write).start()

    def done(orders, out):
        return orders  # a comment may say todo("x") without calling it

    assert unfinished_todo(stub) == "write each batch once"
    assert unfinished_todo(nested) == "write the code for this step"
    assert unfinished_todo(done) is None
    assert unfinished_todo(print) is None  # no Python source: nothing to say
    with pytest.raises(LabTodo, match="TODO not done yet: write each batch once"):
        raise_if_todo(stub)
    raise_if_todo(done)


def test_an_expected_given_as_a_lambda_is_computed_not_printed_as_a_function():
    checks = Checks("01-three-guarantees-lab", record=False)
    checks.that("counts match", lambda: False, expected=lambda: f"{20} orders notified", found=lambda: "19",
                hint="look")
    lines = checks.results[-1].lines
    assert "  expected: 20 orders notified" in lines and not any("<function" in line for line in lines)


def test_a_lab_kernel_shows_one_line_for_a_name_nobody_set(monkeypatch):
    import sys
    import types

    from deliverylab.todos import explain_errors

    monkeypatch.delenv("DELIVERYLAB_BROKER", raising=False)  # the course's own broker: no login
    registered, shown = {}, []
    shell = types.SimpleNamespace(set_custom_exc=lambda kinds, handler: registered.update(kinds=kinds, handler=handler),
                                  _showtraceback=lambda etype, value, lines: shown.append(lines))
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    explain_errors(names=True)
    assert registered["kinds"] == (NameError,)
    try:
        my_plan  # noqa: F821 - the name an unfinished TODO would have set
    except NameError as error:
        lines = registered["handler"](shell, NameError, error, None)
    assert lines == ["NameError: `my_plan` is not defined. Is it set by a cell above that has not run yet "
                     "(or by a TODO not done yet), or is it misspelt?"]
    assert shown == [lines]  # shown, as IPython does not show what a custom handler returns


def test_in_a_real_kernel_the_unset_name_is_one_error_line_and_the_cell_fails():
    """IPython shows nothing a custom exception handler returns; the learner must still see the line."""
    from kernels import run_cells

    _, (reply, errors) = run_cells(["from deliverylab.todos import explain_errors; explain_errors()", "print(my_plan)"])
    assert reply["content"]["status"] == "error"  # Run All stops here
    assert [(e["ename"], e["traceback"]) for e in errors] == [
        ("NameError", ["NameError: `my_plan` is not defined. Is it set by a cell above that has not run yet "
                       "(or by a TODO not done yet), or is it misspelt?"])]
