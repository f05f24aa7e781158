"""Lab 08's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Answers are passed as lambdas, so a check whose exercise is not done yet says SKIP. Each exercise is also judged on
a hidden run (checks/hidden.py; the runs themselves are built in hidden_runs.py): the plan function on the crash
points of a pipeline that names points of its own; the pipeline, kept from its chaos run, crashed once more right
after its sink committed a batch in which several orders share a customer and an event time; the audit function on
the history of another table (a log cleaned up, a redeploy and a second query writing at the same time); the
predictions on three variants drawn for the kernel, one of each group, instead of three the lab names.
"""
from __future__ import annotations

import random
from typing import Callable

from ...checks import hidden
from ...config import CourseError
from ...crashlab.crashpoints import CRASH_NOW, CRASH_POINTS
from . import hidden_runs
from .audit import STREAMING_UPDATE, Version
from .matrix import OUTCOMES, on_iceberg, picks, runnable

LAB = "08-capstone-lab"
#: The first check of exercise 1's chaos run: the others need a run that did not fail.
RAN = "your pipeline ran through your plan"


# --------------------------------------------------------------------------- exercise 2: the plan


def _plan(fn, points) -> list:
    plan = fn(dict(points))
    if isinstance(plan, str) or not all(isinstance(p, str) for p in (plan or [])):
        raise ValueError(f"chaos_plan returned {plan!r}: return a list of crash point names")
    return list(plan)


def check_plan(checks, plan: Callable) -> None:
    """Exercise 2: ``chaos_plan(points)``, every crash point of a pipeline and at least one random kill, on the
    course's named points and, hidden, on the points of a pipeline that names some of its own."""
    function = "chaos_plan is a function of a pipeline's crash points"
    checks.that(function, lambda: callable(plan()), expected="def chaos_plan(points): ... return [...]",
                found=lambda: f"{plan()!r} ({type(plan()).__name__})",
                hint="Define a function that takes the crash points (a dict: name -> what the point leaves behind) "
                     "and returns the plan, a list of names; the chaos cell calls it.")
    runs = hidden.Runs(f"{LAB}:plan", shown=lambda: dict(CRASH_POINTS), hidden=hidden_runs.points_of_a_pipeline)

    def every_point(fn, points):
        made = _plan(fn, points)
        missing = [p for p in points if p not in made]
        unknown = [p for p in made if p not in points and p != CRASH_NOW]
        if not missing and not unknown:
            return None
        return (f"each of {', '.join(points)}",
                "; ".join(part for part in (f"missing {missing}" if missing else "",
                                            f"not a crash point of this pipeline: {unknown}" if unknown else "") if part))

    def a_random_kill(fn, points):
        made = _plan(fn, points)
        return None if CRASH_NOW in made else (f"{CRASH_NOW!r} at least once", f"{made}")

    checks.on_runs("your plan has every crash point of the pipeline", plan, runs, every_point, depends_on=function,
                   hint="Build the plan from the points you are given: a pipeline may name crash points of its own "
                        "(variants.VARIANTS['control_table_after'].crash_points), and a plan must crash it there too.")
    checks.on_runs("your plan has a random kill too", plan, runs, a_random_kill, depends_on=function,
                   hint=f"A random kill is the point {CRASH_NOW!r}: the driver dies wherever it is.")


# --------------------------------------------------------------------------- exercise 1: the pipeline under chaos


def _counts(found) -> tuple[int, int]:
    """(lost, duplicated) of the chaos run's ledger dict or of a Ledger."""
    return (found["lost"], found["duplicated"]) if isinstance(found, dict) else (found.lost, found.duplicated)


def check_chaos(checks, result: Callable, crash_again: Callable | None = None) -> None:
    """Exercise 1 + 2: your pipeline through your plan, every crash fired where it was armed, nothing lost or
    doubled; then, hidden, the same pipeline crashed once more right after its sink committed a batch
    (``crash_again(rng)`` runs it; default: hidden_runs.crash_after_its_commit on the pipeline the run kept)."""
    exercise = f"{LAB}:chaos"
    seed = hidden.seed_for(exercise)

    def again(rng):
        done = result().setdefault("hidden_runs", {})  # a check cell run twice does not crash the pipeline twice
        if seed not in done:
            done[seed] = (crash_again or (lambda r: hidden_runs.crash_after_its_commit(result()["pipe"], r)))(rng)
        return done[seed]

    def fired_as_planned():
        crashes = result()["crashes"]
        return [c["point"] for c in crashes] == list(result()["plan"]) and all(c["by_sigkill"] for c in crashes)

    checks.that(RAN, lambda: result().get("failure") is None, expected="no error", found=lambda: result()["failure"],
                hint="Your function or its query failed: the line above is the error. Fix it, run its cell and "
                     "the chaos cell again (the query needs .option('checkpointLocation', out.checkpoint)).")
    checks.that("every crash of your plan killed the driver", fired_as_planned,
                expected="one SIGKILL per point of the plan", found=lambda: [c["point"] for c in result()["crashes"]],
                hint="Run the chaos cell with plan=my_plan and keep_pipe=True.", depends_on=RAN)
    runs = hidden.Runs(exercise, shown=lambda: result()["ledger"], hidden=again)
    checks.on_runs("no order lost", result, runs,
                   judge=lambda _, found: None if _counts(found)[0] == 0 else ("0 lost", f"{_counts(found)[0]} lost"),
                   hint="Does your query keep its progress in out.checkpoint, and write every order it reads (no "
                        "filter, no deduplication on fields that two orders can share)?", depends_on=RAN)
    checks.on_runs("no order written twice", result, runs,
                   judge=lambda _, found: None if _counts(found)[1] == 0 else
                   ("0 duplicated", f"{_counts(found)[1]} duplicated"),
                   hint="A replayed batch was written again. Which sink remembers the batches it has committed, in "
                        "the same commit as their data (or which writer options make Delta skip a batch it has "
                        "seen)? A marker written after the data leaves a moment where a kill repeats the batch.",
                   depends_on=RAN)


# --------------------------------------------------------------------------- exercise 3: the audit


class TableReader:
    """What the audit checks read from the learner's table, each read once: its history (the DataFrame, its rows as
    audit.Version), the checkpoint's committed batches with data, and hidden histories built in its schema."""

    def __init__(self, spark, pipe: Callable):
        self.spark, self.pipe = spark, pipe
        self._frame = self._versions = self._with_data = None

    def history(self):
        if self._frame is None:
            from delta.tables import DeltaTable

            self._frame = DeltaTable.forPath(self.spark, self.pipe().sink).history()
        return self._frame

    def versions(self) -> list[Version]:
        if self._versions is None:
            found = []
            for r in self.history().select("version", "operation", "operationParameters").collect():
                params = r.operationParameters or {}
                epoch = params.get("epochId")
                found.append(Version(r.version, r.operation, int(epoch) if epoch is not None else None,
                                     params.get("queryId")))
            self._versions = sorted(found, key=lambda v: v.version)
        return self._versions

    def with_data(self) -> set[int]:
        if self._with_data is None:
            from .audit import batches_with_data

            self._with_data = batches_with_data(self.pipe())
        return self._with_data

    def frame(self, rows: list[dict]):
        return hidden_runs.history_frame(self.spark, rows, like=self.history())


def check_audit(checks, batch_ids: Callable, pipe: Callable = None, spark=None, reader=None) -> None:
    """Exercise 3: ``batch_ids(history)``, the batch id of every version oldest first, called on the history of
    your table (two queries: the lab redeployed the pipeline on a new checkpoint, so a version is not its batch
    id) and on a hidden history; and what the history says about your pipeline. ``reader``: a TableReader (tests
    pass one of their own)."""
    reader = reader or TableReader(spark, pipe)
    versions = reader.versions
    streaming = "every version of your table is a streaming write"
    checks.that(streaming, lambda: all(v.operation == STREAMING_UPDATE for v in versions()),
                expected=f"operation {STREAMING_UPDATE!r} everywhere",
                found=lambda: sorted({v.operation for v in versions()}),
                hint="Only Delta's streaming sink (writeStream.format('delta')) records the batch id in the history.")
    function = "batch_ids is a function of a table's history"
    checks.that(function, lambda: callable(batch_ids()), expected="def batch_ids(history): ... return [...]",
                found=lambda: f"{batch_ids()!r} ({type(batch_ids()).__name__})",
                hint="Define a function that takes a history DataFrame and returns the list; the check calls it on "
                     "your table's history and on another table's.")

    def hidden_table(rng):
        rows = hidden_runs.history_rows(rng)
        return reader.frame(rows), hidden_runs.versions_of(rows)

    runs = hidden.Runs(f"{LAB}:audit", shown=lambda: (reader.history(), versions()), hidden=hidden_table)

    def judge(fn, run):
        frame, table = run
        answer, right = list(fn(frame)), [v.batch for v in table]
        return None if answer == right else ("the epochId of each version, oldest first",
                                             f"{answer}{_what_it_is(answer, table)}")

    checks.on_runs("the batch id of every version, oldest first", batch_ids, runs, judge,
                   depends_on=[streaming, function],
                   hint="history() lists the newest version first, and puts the batch id in operationParameters "
                        "under 'epochId' (a string); the version number is the order. Read them from the history "
                        "you are given: it may begin after older versions were cleaned up, and two queries may "
                        "write one table at the same time.")
    pairs = lambda: [(v.query, v.batch) for v in versions()]  # noqa: E731
    checks.that("no query's batch twice in the history", lambda: len(set(pairs())) == len(pairs()),
                expected="each (query id, batch id) once", found=lambda: [v.batch for v in versions()],
                hint="A batch id twice for one query means a replay was committed again: look at your sink.")
    last_query = lambda: {v.batch for v in versions() if v.query == versions()[-1].query}  # noqa: E731
    checks.that("every batch with data is in the history", lambda: reader.with_data() <= last_query(),
                expected="the checkpoint's committed batches with data",
                found=lambda: sorted(reader.with_data() - last_query()),
                hint="A committed batch missing from the table lost its orders.")


def _what_it_is(answer: list, versions) -> str:
    """A note for an answer that is the versions themselves, the right ids newest first, or the ids as text."""
    if answer == [v.version for v in versions]:
        return " (these are the version numbers: with two queries, a version is not its batch id)"
    if answer == [v.batch for v in reversed(versions)]:
        return " (the right ids, newest first)"
    if answer == [str(v.batch) for v in versions]:
        return " (the right ids, as text)"
    if sorted(answer, key=str) == sorted((v.batch for v in versions), key=str):
        return " (the right ids, in another order: the version number is the order)"
    return ""


# --------------------------------------------------------------------------- exercise 4: predictions


def predicted() -> list[str]:
    """The variants exercise 4 asks a prediction for: every runnable one but module 10's Iceberg rows (module 10,
    after this lab, is where they are taught; where the Iceberg venv exists the matrix runs them too)."""
    return [v for v in runnable() if not on_iceberg(v)]


def variants_to_run(predictions: Callable | None = None) -> list[str]:
    """The three variants the lab runs for this kernel (its exercise seed): one of each group of hidden_runs.

    ``predictions`` (``lambda: my_picks``): refuse, in one line, until every variant has a prediction, so the
    matrix is never run (and read) before the guesses are made, and an unfinished lab boots no drivers.
    """
    if predictions is not None:
        try:
            given = picks(predictions())
        except NameError:
            raise CourseError("Make your predictions first: run exercise 4's cell above (it sets my_picks); "
                              "the matrix runs once every variant has one.") from None
        missing = [v for v in predicted() if given.get(v, "?") == "?"]
        if missing:
            raise CourseError(f"Make your predictions first: my_picks has none for {', '.join(missing)}; "
                              "the matrix runs once every variant in matrix.runnable() (but module 10's Iceberg rows) "
                              "has one.")
    return hidden_runs.drawn_variants(random.Random(hidden.seed_for(f"{LAB}:predictions")))


def check_predictions(checks, predictions: Callable, rows: Callable) -> None:
    """Exercise 4: a prediction for every variant, and the ones the lab ran (drawn for this kernel) match what was
    observed."""
    def missing():
        return [v for v in predicted() if picks(predictions()).get(v, "?") == "?"]

    every = "a prediction for every variant"
    checks.that(every, lambda: not missing(),
                expected=f"{len(predicted())} variants", found=lambda: f"no prediction for {', '.join(missing())}",
                hint="Your dict needs one key per name in matrix.runnable(), module 10's Iceberg rows aside.")
    verdicts = "every prediction is a verdict"
    checks.that(verdicts, lambda: set(picks(predictions()).values()) <= set(OUTCOMES),
                expected=" | ".join(OUTCOMES), found=lambda: sorted(set(picks(predictions()).values()) - set(OUTCOMES)),
                hint="Spell each prediction as one of matrix.OUTCOMES.")
    runs = hidden.Runs(f"{LAB}:predictions", hidden=lambda rng: (list(rows()), hidden_runs.drawn_variants(rng)))

    def judge(given, run):
        ran, drawn = run
        if sorted(r.variant for r in ran) != sorted(drawn):
            return (f"rows of the variants lab.variants_to_run() drew: {', '.join(drawn)}",
                    f"rows of {', '.join(r.variant for r in ran) or 'no variant'}: run the cell as the lab has it")
        chosen = picks(given)
        wrong = {r.variant: f"predicted {chosen.get(r.variant)}, observed {r.observed}" for r in ran
                 if chosen.get(r.variant) != r.observed}
        return None if not wrong else ("predicted == observed", wrong)

    checks.on_runs("your predictions match the variants the lab ran", predictions, runs, judge,
                   hint="For each, ask: what happens to a batch written but not committed when the driver dies, "
                        "and where does the restart begin? Another kernel runs three other variants.")
