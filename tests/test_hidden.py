"""Hidden runs (checks/hidden.py): seeds, runs built once, and the FAIL lines of an answer copied from the run shown."""
from __future__ import annotations

import random

import pytest

from deliverylab.checks import Checks, hidden, todo
from deliverylab.config import CourseError


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path / "state"))
    monkeypatch.delenv(hidden.SEED_ENV, raising=False)


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def hidden_orders(rng: random.Random) -> list[int]:
    return [rng.randint(1, 9) for _ in range(rng.randint(4, 40))]


def orders_runs(exercise="lab:count", shown=(3, 4, 5)):
    """A toy exercise: count the orders of a run. The run shown has three; a hidden one 4 to 40."""
    return hidden.Runs(exercise, shown=lambda: list(shown), hidden=hidden_orders)


def count_judge(answer, orders):
    return None if answer(orders) == len(orders) else (f"{len(orders)} orders", f"{answer(orders)}")


def test_an_exercise_keeps_its_seed_in_a_kernel_and_the_variable_fixes_every_seed(monkeypatch):
    first = hidden.seed_for("lab:a")
    assert hidden.seed_for("lab:a") == first
    assert len({hidden.seed_for(f"lab:{n}") for n in range(20)}) > 1  # drawn per exercise
    monkeypatch.setenv(hidden.SEED_ENV, "4711")
    assert hidden.seed_for("lab:a") == hidden.seed_for("lab:b") == 4711
    monkeypatch.setenv(hidden.SEED_ENV, "soon")
    with pytest.raises(CourseError, match="a seed is a whole number"):
        hidden.seed_for("lab:a")


def test_a_hidden_run_is_the_same_for_one_seed_and_is_built_once(monkeypatch):
    monkeypatch.setenv(hidden.SEED_ENV, "123")
    built = []

    def make(rng: random.Random):
        built.append(1)
        return [rng.random() for _ in range(3)]

    runs = hidden.Runs("lab:x", hidden=make, count=2)
    values = [run.value() for run in runs]
    assert [run.value() for run in runs] == values and len(built) == 2  # kept
    assert values == [make(random.Random(123)), make(random.Random(124))]  # seeds 123 and 124
    assert [run.seed for run in runs] == [123, 124] and runs.shown is None


def test_an_experiment_that_fails_runs_once_and_every_check_sees_its_error():
    tries = []

    def failing(rng):
        tries.append(1)
        raise RuntimeError("the query ended by itself")

    runs = hidden.Runs("lab:y", hidden=failing)
    for _ in range(3):
        with pytest.raises(RuntimeError, match="ended by itself"):
            runs.hidden_runs()[0].value()
    assert tries == [1]


def test_a_right_function_passes_in_one_line_whatever_the_seed(capsys, monkeypatch):
    for seed in ("1", "2", "99999"):
        monkeypatch.setenv(hidden.SEED_ENV, seed)
        Checks("lab", record=False).on_runs("count counts the orders", lambda: len, orders_runs(), count_judge)
        assert lines(capsys) == ["PASS  count counts the orders"]


def test_a_number_copied_from_the_run_shown_fails_on_the_hidden_run_with_its_seed(capsys, monkeypatch):
    monkeypatch.setenv(hidden.SEED_ENV, "4242")
    expected = len(hidden_orders(random.Random(4242)))
    Checks("lab", record=False).on_runs("count counts the orders", lambda: (lambda orders: 3), orders_runs(),
                                        count_judge, hint="Count what you are given.")
    assert lines(capsys) == [
        "FAIL  count counts the orders",
        f"  on:       a hidden run (seed 4242; `%env {hidden.SEED_ENV}=4242` repeats it)",
        f"  expected: {expected} orders",
        "  found:    3",
        f"  note:     {hidden.COPIED}",
        "  hint:     Count what you are given.",
    ]


def test_wrong_on_the_run_shown_says_so_without_the_copied_note(capsys):
    Checks("lab", record=False).on_runs("count counts the orders", lambda: (lambda orders: sum(orders)), orders_runs(),
                                        count_judge)
    shown = lines(capsys)
    assert shown[:4] == ["FAIL  count counts the orders", "  on:       the run above", "  expected: 3 orders",
                         "  found:    12"]
    assert not any(line.startswith("  note:") for line in shown)


def test_an_answer_that_raises_names_the_run_and_its_error_and_a_todo_is_a_skip(capsys):
    def broken(orders):
        return orders["count"]

    checks = Checks("lab", record=False)
    checks.on_runs("count counts the orders", lambda: broken, orders_runs(), count_judge)
    assert lines(capsys)[:3] == ["FAIL  count counts the orders", "  on:       the run above",
                                 "  found:    it raised TypeError: list indices must be integers or slices, not str"]

    def unfinished(orders):
        return todo("count the orders")

    checks.on_runs("count counts the orders", lambda: unfinished, orders_runs(), count_judge)
    assert lines(capsys) == ["SKIP  count counts the orders (an earlier step is not done yet: count the orders)"]
