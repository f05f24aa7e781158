"""Lab 08's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Answers are passed as lambdas, so a check whose exercise is not done yet says SKIP.
"""
from __future__ import annotations

from typing import Callable

from ...crashlab.crashpoints import CRASH_NOW, CRASH_POINTS
from .audit import STREAMING_UPDATE
from .matrix import OUTCOMES, picks, runnable


#: The first check of exercise 2's chaos run: the others need a run that did not fail.
RAN = "your pipeline ran through your plan"


def check_plan(checks, plan: Callable) -> None:
    """Exercise 2: a chaos plan with every named crash point and at least one random kill."""
    checks.that("your plan has every named crash point", lambda: set(CRASH_POINTS) <= set(plan()),
                expected=", ".join(CRASH_POINTS), found=lambda: plan(),
                hint="A plan is a list of crash point names; deliverylab.crashlab.crashpoints.CRASH_POINTS names them.")
    checks.that("your plan has a random kill too", lambda: CRASH_NOW in plan(),
                expected=f"{CRASH_NOW!r} at least once", found=lambda: plan(),
                hint=f"A random kill is the point {CRASH_NOW!r}: the driver dies wherever it is.")


def check_chaos(checks, result: Callable) -> None:
    """Exercise 1 + 2: your pipeline through your plan, every crash fired where it was armed, nothing lost or doubled."""
    def fired_as_planned():
        crashes = result()["crashes"]
        return [c["point"] for c in crashes] == list(result()["plan"]) and all(c["by_sigkill"] for c in crashes)

    checks.that(RAN, lambda: result().get("failure") is None, expected="no error", found=lambda: result()["failure"],
                hint="Your function or its query failed: the line above is the error. Fix it, run its cell and "
                     "the chaos cell again (the query needs .option('checkpointLocation', out.checkpoint)).")
    checks.that("every crash of your plan killed the driver", fired_as_planned,
                expected="one SIGKILL per point of the plan", found=lambda: [c["point"] for c in result()["crashes"]],
                hint="Run the chaos cell with plan=my_plan and keep_pipe=True.", depends_on=RAN)
    checks.that("no order lost", lambda: result()["ledger"]["lost"] == 0,
                expected="0 lost", found=lambda: f"{result()['ledger']['lost']} lost",
                hint="Does your query keep its progress in out.checkpoint and read the topic from 'earliest'?",
                depends_on=RAN)
    checks.that("no order written twice", lambda: result()["ledger"]["duplicated"] == 0,
                expected="0 duplicated", found=lambda: f"{result()['ledger']['duplicated']} duplicated",
                hint="A replayed batch was written again. Which sink remembers the batches it has committed "
                     "(or which writer options make Delta skip a batch it has seen)?", depends_on=RAN)


def check_audit(checks, my_batch_ids: Callable, versions: Callable, with_data: Callable) -> None:
    """Exercise 3: the batch id of every version of your table, read from its history. The table has versions
    of two queries (the lab redeployed the pipeline on a new checkpoint), so a version is not its batch id."""
    real = lambda: [v.batch for v in versions()]  # noqa: E731 - read lazily, like the answers
    checks.that("every version of your table is a streaming write", lambda: all(v.operation == STREAMING_UPDATE
                                                                                for v in versions()),
                expected=f"operation {STREAMING_UPDATE!r} everywhere",
                found=lambda: sorted({v.operation for v in versions()}),
                hint="Only Delta's streaming sink (writeStream.format('delta')) records the batch id in the history.")
    checks.that("the batch id of every version, oldest first", lambda: list(my_batch_ids()) == real(),
                expected="the epochId of each version, oldest first",
                found=lambda: f"{list(my_batch_ids())}{_what_it_is(list(my_batch_ids()), versions())}",
                hint="history() lists the newest version first, and puts the batch id in operationParameters "
                     "under 'epochId' (a string).")
    pairs = lambda: [(v.query, v.batch) for v in versions()]  # noqa: E731
    checks.that("no query's batch twice in the history", lambda: len(set(pairs())) == len(pairs()),
                expected="each (query id, batch id) once", found=lambda: real(),
                hint="A batch id twice for one query means a replay was committed again: look at your sink.")
    last_query = lambda: {v.batch for v in versions() if v.query == versions()[-1].query}  # noqa: E731
    checks.that("every batch with data is in the history", lambda: with_data() <= last_query(),
                expected="the checkpoint's committed batches with data",
                found=lambda: sorted(with_data() - last_query()),
                hint="A committed batch missing from the table lost its orders.")


def _what_it_is(answer: list, versions) -> str:
    """A note for an answer that is the versions themselves, the right ids newest first, or the ids as text."""
    if answer == [v.version for v in versions]:
        return " (these are the version numbers: with two queries, a version is not its batch id)"
    if answer == [v.batch for v in reversed(versions)]:
        return " (the right ids, newest first)"
    if answer == [str(v.batch) for v in versions]:
        return " (the right ids, as text)"
    return ""


def check_predictions(checks, predictions: Callable, rows: Callable) -> None:
    """Exercise 4: a prediction for every variant, and the ones the lab ran match what was observed."""
    def missing():
        return [v for v in runnable() if picks(predictions()).get(v, "?") == "?"]

    checks.that("a prediction for every variant", lambda: not missing(),
                expected=f"{len(runnable())} variants", found=lambda: f"no prediction for {', '.join(missing())}",
                hint="Your dict needs one key per name in matrix.runnable().")
    checks.that("every prediction is a verdict", lambda: set(picks(predictions()).values()) <= set(OUTCOMES),
                expected=" | ".join(OUTCOMES), found=lambda: sorted(set(picks(predictions()).values()) - set(OUTCOMES)),
                hint="Spell each prediction as one of matrix.OUTCOMES.")
    checks.that("your predictions match the variants the lab ran",
                lambda: all(picks(predictions()).get(r.variant) == r.observed for r in rows()),
                expected="predicted == observed", found=lambda: {r.variant: f"predicted {picks(predictions()).get(r.variant)}, "
                                                                 f"observed {r.observed}" for r in rows()
                                                                 if picks(predictions()).get(r.variant) != r.observed},
                hint="For each, ask: what happens to a batch written but not committed when the driver dies, "
                     "and where does the restart begin?")
