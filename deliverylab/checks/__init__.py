"""Checks for lab notebooks: short, stable PASS / FAIL / SKIP lines with a hint.

A lab notebook creates one ``Checks`` object and calls it after each exercise::

    from deliverylab.checks import Checks, todo
    checks = Checks("01-three-guarantees-lab")

    checks.equal("the at-most-once consumer lost orders", lambda: result.lost > 0, True,
                 hint="Look at when the consumer commits its offset.")
    checks.is_type("the stream is running", lambda: query, "StreamingQuery")
    checks.that("nothing was written twice", lambda: result.duplicated == 0,
                expected="0 duplicated orders", found=lambda: f"{result.duplicated} duplicated",
                depends_on="the at-most-once consumer lost orders")
    checks.summary()

Each call prints exactly one line when the check passes (``PASS  <description>``).
A failure adds ``expected:``, ``found:`` and ``hint:`` lines; the hint says where to
look, never the answer.

Pass the value to check as a lambda. The check then computes it itself, so a check
that runs after an unfinished TODO prints ``SKIP ... (an earlier step is not done
yet: ...)`` instead of a traceback. A check with ``depends_on`` is skipped while the
check it depends on has not passed.

``todo(text)`` is what a generated lab puts where the learner's code goes; it raises
``LabTodo``, which Jupyter shows as one friendly line instead of a traceback.

Nothing here imports Spark: types are recognised by name (see ``is_type``).

A check is only as good as the wrong answers it rejects, so a lab's checks judge the learner's
code on runs the learner has not seen as well as the one shown (``hidden``: scenarios drawn from
a seed, and ``Checks.on_runs``): a number copied from a printout, or an answer right only on the
demo's data, passes the shown run and fails a hidden one, with the seed in its FAIL line.

    hidden   hidden runs: seeds, scenarios built from them, experiments run once per run
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

GENERIC_TODO = "write the code for this step"

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"

#: Advice for the type mix-ups learners make most often: (expected, found) -> fix.
TYPE_FIXES: dict[tuple[str, str], str] = {
    ("StreamingQuery", "DataFrame"): (
        "a DataFrame only describes the data. Start it with .writeStream ... .start() "
        "and pass the StreamingQuery that start() returns."
    ),
    ("StreamingQuery", "DataStreamWriter"): (
        "the writer has not started yet. Call .start() on it and pass what start() returns."
    ),
    ("DataFrame", "StreamingQuery"): (
        "a StreamingQuery is the running job, not its data. Read what it wrote "
        "(for example spark.read.format('delta').load(path)) and pass that DataFrame."
    ),
    ("DataFrame", "DataStreamWriter"): (
        "pass the DataFrame itself, before .writeStream was called on it."
    ),
    ("DataFrame", "list"): "collect() turned the DataFrame into a list of rows; pass the DataFrame itself.",
    ("int", "DataFrame"): "call .count() on the DataFrame to get a number.",
}


# --------------------------------------------------------------------------- todo()


def todo_message(text: str) -> str:
    """The friendly message a learner sees for an unfinished TODO."""
    return (
        f"TODO not done yet: {text.rstrip('. ')}. "
        "Replace the todo(...) line with your code, then run this cell again."
    )


class LabTodo(Exception):
    """Raised by ``todo()``: this exercise still waits for the learner's code."""

    def __init__(self, text: str = GENERIC_TODO):
        self.text = (text or "").strip() or GENERIC_TODO
        super().__init__(todo_message(self.text))

    def _render_traceback_(self) -> list[str]:
        """IPython shows these lines instead of a traceback."""
        return [str(self)]


def todo(text: str = GENERIC_TODO) -> Any:
    """Stand-in for the learner's code in a lab. Always raises ``LabTodo``."""
    raise LabTodo(text)


# --------------------------------------------------------------------------- helpers


class _Skipped(Exception):
    """Internal: the value a check needs could not be computed yet."""


def _is_todo_error(error: BaseException) -> bool:
    """LabTodo itself, or an error that carries its message (e.g. from inside a Spark job)."""
    return isinstance(error, LabTodo) or "TODO not done yet" in str(error)


def todo_text(error: BaseException | str) -> str:
    """The TODO's own words from a LabTodo, or from any error (or text) that carries its message."""
    if isinstance(error, LabTodo):
        return error.text
    message = str(error)
    start = message.index("TODO not done yet: ") + len("TODO not done yet: ")
    return message[start:].split(". Replace the todo(", 1)[0].splitlines()[0]


def _resolve(value: Any) -> Any:
    """Compute a lazily given value. Raises _Skipped or re-raises other errors."""
    if not callable(value):
        return value
    try:
        return value()
    except NameError as error:
        name = f"`{error.name}`" if getattr(error, "name", None) else "a value it needs"
        raise _Skipped(f"{name} is not set yet: run the cells above first, or finish the TODO that sets it") from None
    except Exception as error:
        if _is_todo_error(error):
            raise _Skipped(f"an earlier step is not done yet: {todo_text(error)}") from None
        raise


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _show(value: Any) -> str:
    """A short, readable rendering of a value for a FAIL message."""
    try:
        return _short(repr(value))
    except Exception:  # a repr that fails must not hide the check's result
        return f"<{type(value).__name__}>"


def type_names(value: Any) -> list[str]:
    """Class names of a value and its bases: short names and module-qualified names."""
    names: list[str] = []
    for cls in type(value).__mro__:
        names += [cls.__name__, f"{cls.__module__}.{cls.__qualname__}"]
    return names


def _matches_type_name(value: Any, wanted: str) -> bool:
    """Match ``"StreamingQuery"`` or ``"pyspark.sql.streaming.StreamingQuery"`` by name.

    A dotted name also matches a class defined in a submodule of that package, since
    pyspark re-exports classes (``pyspark.sql.streaming.query.StreamingQuery``).
    """
    if "." not in wanted:
        return wanted in type_names(value)
    package, _, name = wanted.rpartition(".")
    for cls in type(value).__mro__:
        module = cls.__module__
        if cls.__name__ == name and (module == package or module.startswith(package + ".")):
            return True
    return False


def _type_label(expected: type | str | tuple) -> str:
    if isinstance(expected, tuple):
        return " or ".join(_type_label(item) for item in expected)
    if isinstance(expected, str):
        return expected.rpartition(".")[2]
    return expected.__name__


def _with_article(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _is_instance(value: Any, expected: type | str | tuple) -> bool:
    if isinstance(expected, tuple):
        return any(_is_instance(value, item) for item in expected)
    if isinstance(expected, str):
        return _matches_type_name(value, expected)
    return isinstance(value, expected)


def type_fix(expected: type | str | tuple, value: Any) -> str | None:
    """Advice for a known mix-up, e.g. a DataFrame passed where a StreamingQuery belongs."""
    wanted = [_type_label(item) for item in (expected if isinstance(expected, tuple) else (expected,))]
    found = [cls.__name__ for cls in type(value).__mro__]
    for name in wanted:
        for found_name in found:
            if (name, found_name) in TYPE_FIXES:
                return TYPE_FIXES[(name, found_name)]
    return None


def _as_bool(value: Any) -> bool | None:
    """True/False for real booleans (numpy's too); None for anything else."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    return None


# --------------------------------------------------------------------------- results


@dataclass
class CheckResult:
    """What one check found. ``lines`` is exactly what was printed."""

    key: str
    description: str
    status: str
    lines: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == PASS


@dataclass
class _Verdict:
    """Internal: outcome of comparing a computed value with what was expected."""

    passed: bool
    details: list[tuple[str, str]] = field(default_factory=list)  # (label, text) lines


# --------------------------------------------------------------------------- Checks


class Checks:
    """The checks of one lab notebook. See the module docstring for an example."""

    def __init__(self, module: str, *, record: bool = True):
        self.module = module
        self.record = record
        self._results: dict[str, CheckResult] = {}

    # ---- public checks

    def equal(
        self,
        description: str,
        actual: Any,
        expected: Any,
        *,
        hint: str | None = None,
        depends_on: str | Iterable[str] | None = None,
        id: str | None = None,
    ) -> None:
        """Pass when ``actual == expected``. ``actual`` may be a lambda (recommended)."""

        def verdict(value: Any) -> _Verdict:
            try:
                same = bool(value == expected)
            except Exception:  # e.g. a Spark Column, which refuses to become a bool
                same = False
            if same:
                return _Verdict(True)
            found = _show(value)
            if type(value) is not type(expected) and not _both_numbers(value, expected):
                found += f" ({_with_article(type(value).__name__)})"
            details = [("expected", _show(expected)), ("found", found)]
            fix = type_fix(type(expected), value) if type(value) is not type(expected) else None
            if fix:
                details.append(("fix", fix))
            return _Verdict(False, details)

        self._check(description, actual, verdict, hint=hint, depends_on=depends_on, id=id)

    def that(
        self,
        description: str,
        condition: Any,
        *,
        expected: Any = None,
        found: Any = None,
        hint: str | None = None,
        depends_on: str | Iterable[str] | None = None,
        id: str | None = None,
    ) -> None:
        """Pass when ``condition`` is True. ``expected`` and ``found`` describe a failure;
        either may be a lambda, computed only when the check fails."""

        def verdict(value: Any) -> _Verdict:
            truth = _as_bool(value)
            if truth is None:
                return _Verdict(False, [
                    ("expected", "True or False"),
                    ("found", f"{_with_article(type(value).__name__)}: {_show(value)}"),
                    ("fix", "the condition should compare something, for example df.count() == 3."),
                ])
            if truth:
                return _Verdict(True)
            details = []
            if expected is not None:
                details.append(("expected", _describe_found(expected)))
            if found is not None:
                details.append(("found", _describe_found(found)))
            return _Verdict(False, details)

        self._check(description, condition, verdict, hint=hint, depends_on=depends_on, id=id)

    def is_type(
        self,
        description: str,
        value: Any,
        expected_type: type | str | tuple,
        *,
        hint: str | None = None,
        depends_on: str | Iterable[str] | None = None,
        id: str | None = None,
    ) -> None:
        """Pass when ``value`` is an instance of ``expected_type``.

        ``expected_type`` may be a class, a class name such as ``"StreamingQuery"`` (no
        Spark import needed), or a tuple of either. A known mix-up gets a ``fix:`` line.
        Like every check, a callable ``value`` is called first: to check a function
        itself, pass ``lambda: the_function``.
        """

        def verdict(obj: Any) -> _Verdict:
            if _is_instance(obj, expected_type):
                return _Verdict(True)
            details = [
                ("expected", _with_article(_type_label(expected_type))),
                ("found", _with_article(type(obj).__name__)),
            ]
            fix = type_fix(expected_type, obj)
            if fix:
                details.append(("fix", fix))
            return _Verdict(False, details)

        self._check(description, value, verdict, hint=hint, depends_on=depends_on, id=id)

    def on_runs(self, description: str, answer: Any, runs, judge: Callable[[Any, Any], Any], *,
                hint: str | None = None, depends_on: str | Iterable[str] | None = None, id: str | None = None) -> None:
        """Pass when ``judge(answer, run)`` finds nothing wrong on every run of ``runs`` (a ``hidden.Runs``: the
        run shown and hidden ones). ``judge`` returns None, or ``(expected, found)`` for the run it fails on."""
        from . import hidden

        def verdict(value: Any) -> _Verdict:
            try:
                details = hidden.judge_runs(value, runs, judge)
            except Exception as error:  # an unfinished TODO met inside a run: this check waits for it
                if _is_todo_error(error):
                    raise _Skipped(f"an earlier step is not done yet: {todo_text(error)}") from None
                raise
            return _Verdict(details is None, details or [])

        self._check(description, answer, verdict, hint=hint, depends_on=depends_on, id=id)

    # ---- results

    @property
    def results(self) -> list[CheckResult]:
        """The latest result of every check, in the order they first ran."""
        return list(self._results.values())

    def result(self, key: str) -> CheckResult | None:
        """The latest result of a check, found by id or description."""
        if key in self._results:
            return self._results[key]
        return next((r for r in self._results.values() if r.description == key), None)

    def counts(self) -> dict[str, int]:
        """How many checks passed, failed and were skipped."""
        statuses = [result.status for result in self._results.values()]
        return {status: statuses.count(status) for status in (PASS, FAIL, SKIP)}

    def summary(self) -> None:
        """Print one line with the totals; point at the first check to look at."""
        counts = self.counts()
        total = len(self._results)
        print(f"checks passed {counts[PASS]} of {total} ({counts[FAIL]} failed, {counts[SKIP]} skipped)")
        first_open = next((r for r in self._results.values() if not r.passed), None)
        if first_open is not None:
            print(f"first to look at: {first_open.description}")
        elif total and self.record:
            self._record("record_lab_complete", self.module)

    # ---- machinery

    def _check(
        self,
        description: str,
        value: Any,
        verdict: Callable[[Any], _Verdict],
        *,
        hint: str | None,
        depends_on: str | Iterable[str] | None,
        id: str | None,
    ) -> None:
        if not isinstance(description, str) or not description.strip():
            raise TypeError("a check needs a description: a short sentence saying what should be true")
        key = id or description
        result = self._evaluate(key, description, value, verdict, hint, _as_list(depends_on))
        self._results[key] = result
        print("\n".join(result.lines))
        if result.passed and self.record:
            self._record("record_check", self.module, description)
        if self.record:
            from ..workshop import events  # the class board, in shared-broker mode only

            events.check_result(self.module, description, result.status)

    def _evaluate(self, key, description, value, verdict, hint, depends_on) -> CheckResult:
        missing = self._unmet_dependency(depends_on)
        if missing:
            return CheckResult(key, description, SKIP, [f"SKIP  {description} (needs: {missing})"])
        try:
            outcome = verdict(_resolve(value))
        except _Skipped as reason:
            return CheckResult(key, description, SKIP, [f"SKIP  {description} ({reason})"])
        except Exception as error:
            lines = [f"FAIL  {description} (raised {type(error).__name__}: {_short(str(error))})"]
            return CheckResult(key, description, FAIL, lines + _detail_lines([], _login_hint(error) or hint))
        if outcome.passed:
            return CheckResult(key, description, PASS, [f"PASS  {description}"])
        lines = [f"FAIL  {description}"] + _detail_lines(outcome.details, hint)
        return CheckResult(key, description, FAIL, lines)

    def _unmet_dependency(self, depends_on: list[str]) -> str | None:
        """The first dependency that has not passed, described for a SKIP line."""
        for name in depends_on:
            earlier = self.result(name)
            if earlier is None:
                return f"{name}, which has not run yet; run the cells above first"
            if not earlier.passed:
                return earlier.description
        return None

    def _record(self, function: str, *args: str) -> None:
        """Save progress; a broken progress file must never break a lab."""
        try:
            from .. import progress

            getattr(progress, function)(*args)
        except Exception as error:  # noqa: BLE001 - reported, never raised
            warnings.warn(f"could not save progress ({error}); your checks still count here", stacklevel=3)


def _login_hint(error: BaseException) -> str | None:
    """On a class broker with logins, the line for a Kafka client built without the login (stack/loginhint.py)."""
    from ..config import settings
    from ..stack import loginhint

    return loginhint.hint(error, settings().kafka_login)


def _as_list(depends_on: str | Iterable[str] | None) -> list[str]:
    if depends_on is None:
        return []
    if isinstance(depends_on, str):
        return [depends_on]
    return list(depends_on)


def _both_numbers(a: Any, b: Any) -> bool:
    numbers = (int, float)
    return isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool)


def _describe_found(found: Any) -> str:
    """``expected`` or ``found`` of ``that()``: text, a value, or a lambda computed only now."""
    try:
        value = found() if callable(found) else found
    except Exception as error:
        return f"(could not be computed: {type(error).__name__}: {_short(str(error))})"
    return value if isinstance(value, str) else _show(value)


def _detail_lines(details: list[tuple[str, str]], hint: str | None) -> list[str]:
    if hint:
        details = details + [("hint", hint)]
    return [f"  {label + ':':<10}{text}" for label, text in details]
