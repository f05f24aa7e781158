"""Lab 03's checks, one function per exercise (the lab calls them; tests plant wrong answers).

Every answer is passed as a lambda, so a check whose exercise is not done yet says SKIP. Each exercise with a run
is judged on a hidden run too (checks/hidden.py):

* exercise 1: the exercise's cell calls ``lose_orders(pipe)`` through ``forced_race``: the pipeline it gets is a
  ``race.Racing``, which forces the race an answer can depend on both ways (how, from the exercise's seed): orders
  produced into a running driver are partly written and partly not even read when the function's next step
  comes. So a function that produces "while down" before the crash, kills a driver with orders in flight, or
  reads the sink before the driver has caught up fails every time, not on unlucky timing, and the orders produced
  while no driver ran are known without asking the learner. That run is the one the check judges: it needs no
  second crash and restart of its own (a new driver's boot, about as long as the cell);
* exercise 2: ``what_was_lost(produced, rows)`` is called on a sink it has not seen (``hidden_sink``): other
  orders, other gaps, and a few orders written twice, so figures typed in, the ids of exercise 1's
  ``while_down``, or the revenue difference (wrong once a row is duplicated) fail;
* exercise 3 runs the learner's query itself (``stop_and_restart``), so it runs the hidden variation only: other
  numbers of orders before, during and after the stop (never the lab's old 60, 40 and 30, so offsets typed in from
  that run do not fit), and the restart must run from the checkpoint folder the first start wrote;
* exercise 4 is a judgement on five named use cases, with no run: nothing a learner could copy is printed, and a
  hidden set of cases would need a rule instead of a judgement, so it has no hidden variation.
"""
from __future__ import annotations

import inspect
import itertools
import random
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from ... import ledger as ledgers
from ...checks import hidden
from ...config import CourseError
from .race import Racing

LAB = "03-at-most-once-lab"


def _function(checks, description: str, answer: Callable, signature: str, hint: str) -> str:
    checks.that(description, lambda: callable(answer()), expected=signature,
                found=lambda: f"{answer()!r} ({type(answer()).__name__})", hint=hint)
    return description


def _ids(orders) -> set:
    """Order ids from what a learner returned: orders (dicts with order_id) or ids."""
    return {o["order_id"] if isinstance(o, dict) else o for o in orders}


# --------------------------------------------------------------------------- exercise 1


def forced_race(lose_orders: Callable, pipe):
    """Exercise 1's cell: ``lose_orders(pipe)`` called through ``Racing`` (its splits drawn from the exercise's
    seed), returning what the function returned. What the check judges is kept on the pipeline (``pipe.forced_run``).

    The pipeline is drained first (if it runs), so the run starts where the last one ended. The sink is read before a
    driver held still is let go: a function that returned without draining is judged on what it left. Then the
    driver is let go and drained, so ``late`` names the orders that were only on their way when the function
    returned, and what the cell reads next no longer depends on timing either."""
    seed = hidden.seed_for(f"{LAB}:lose-orders")
    if pipe.running:
        pipe.drain()
    before = len(pipe.produced)
    racing = Racing(pipe, random.Random(seed))
    pipe.forced_run = None
    try:
        returned = lose_orders(racing)
        left_down = not pipe.running
        after = pipe.ledger()
    finally:
        racing.release()
    new, down = {o["order_id"] for o in pipe.produced[before:]}, _ids(racing.down)
    late: set = set()
    if pipe.running:
        try:
            pipe.drain()
            if (set(after.lost_ids) & new) - down:  # lost orders produced while a driver ran: late?
                late = (set(after.lost_ids) - set(pipe.ledger().lost_ids)) & new
        except CourseError:
            pass  # the learner's function left the driver unable to drain: judged on what it left
    elif left_down:  # started again, so running the cell again works as the first time
        try:
            pipe.restart()
        except CourseError:
            pass
    try:
        returned_ids = _ids(returned or [])
    except (TypeError, KeyError):
        returned_ids = None
    pipe.forced_run = SimpleNamespace(fn=lose_orders, seed=seed, returned=returned_ids, lost=set(after.lost_ids) & new,
                                      late=late, left_down=left_down, duplicated=set(after.duplicated_ids) & new,
                                      down=down, new=new, hidden=True)
    return returned


class _ForcedRun:
    """The run exercise 1's checks judge: the one its cell ran through ``forced_race``, named with its seed."""

    def __init__(self, lose_orders: Callable, pipe: Callable):
        self._fn, self._pipe, self._runs = lose_orders, pipe, None

    def _run(self):
        run = getattr(self._pipe(), "forced_run", None)
        if run is None or run.fn is not self._fn():
            raise CourseError("no finished run of this lose_orders to judge: run the exercise's cell (it calls "
                              "your function through lab.forced_race) until it ends without an error")
        if run.returned is None:
            raise CourseError("lose_orders returned something that is not a list of orders (or of order ids)")
        return run

    def __iter__(self):
        if self._runs is None:
            run = getattr(self._pipe(), "forced_run", None)
            self._runs = [hidden.Run("the run above", getattr(run, "seed", None) or hidden.seed_for(
                f"{LAB}:lose-orders"), self._run)]
        return iter(self._runs)


def check_loss_while_down(checks, lose_orders: Callable, pipe: Callable, while_down: Callable, amo: Callable) -> None:
    """Exercise 1: ``lose_orders(pipe)`` crashes the at-most-once pipeline, feeds it while it is down, restarts it
    and returns what it produced while it was down; judged on the run its cell made through ``forced_race``."""
    function = _function(checks, "lose_orders is a function of the pipeline", lose_orders,
                         "def lose_orders(pipe): ... return the orders produced while it was down",
                         "Define a function that takes the pipeline; the cell calls it.")
    checks.is_type("amo is a ledger", amo, "Ledger", hint="pipe.ledger() returns one.")
    checks.equal("the pipeline is the at_most_once variant", lambda: pipe().variant.name, "at_most_once",
                 hint="Check the second argument of crashlab.Pipeline(...).")
    checks.that("the pipeline was crashed, then restarted", lambda: bool(pipe().crashes) and pipe().starts >= 2,
                expected="at least one crash and a restart", found=lambda: f"{len(pipe().crashes)} crash(es), "
                f"{pipe().starts} start(s)", hint="pipe.crash('now'), then pipe.restart().",
                depends_on="amo is a ledger")
    produced_down = "orders were produced while the pipeline was down"
    checks.that(produced_down, lambda: len(_ids(while_down())) > 0,
                expected="the orders pipe.produce(...) returned between the crash and the restart",
                found=lambda: f"{len(_ids(while_down()))} orders",
                hint="Return what pipe.produce(150) returns, produced after the crash and before the restart.")
    runs = _ForcedRun(lose_orders, pipe)

    def judge_lost(fn, run):
        if run.lost == run.returned and (not run.hidden or (run.returned == run.down and not run.left_down)):
            return None
        parts = [f"{len(run.lost)} lost", f"{len(run.returned)} returned as produced while it was down"]
        if run.hidden and run.left_down:
            parts.append("the pipeline was still down when lose_orders returned: until a restart (which reads "
                         "from the end of the topic) skips them, those orders are only waiting, not lost")
        if run.returned - run.lost:
            parts.append(f"{len(run.returned - run.lost)} of those reached the sink")
        if run.lost - run.returned:
            parts.append(f"{len(run.lost - run.returned)} lost orders not among them")
        if run.hidden and run.returned - run.new:
            parts.append(f"{len(run.returned - run.new)} of the returned orders were not produced by this call at "
                         "all (a list kept from an earlier run?)")
        if run.hidden and (run.returned & run.new) - run.down:
            parts.append(f"{len((run.returned & run.new) - run.down)} of the returned orders were produced while a "
                         "driver ran")
        if run.hidden and run.late:
            parts.append(f"{len(run.late)} lost orders reached the sink only after lose_orders returned: the sink "
                         "was read before the driver had caught up")
        if run.hidden and run.lost - run.down - run.late:
            parts.append(f"{len(run.lost - run.down - run.late)} lost orders had been produced while a driver ran "
                         "and not written when it died")
        return "the orders produced between the crash and the restart, and exactly those lost", "; ".join(parts)

    checks.on_runs("exactly the orders produced while it was down are lost", lose_orders, runs, judge_lost,
                   depends_on=["amo is a ledger", produced_down, function],
                   hint="Produce them after the crash and before the restart, and drain before reconciling. What "
                        "does a new query with startingOffsets=latest read first, and what happens to orders a "
                        "driver has not written yet when it is killed?")
    checks.on_runs("nothing was written twice", lose_orders, runs,
                   lambda fn, run: None if not run.duplicated else ("0 duplicated", f"{len(run.duplicated)} duplicated"),
                   depends_on=["amo is a ledger", function],
                   hint="An at-most-once pipeline never replays a batch: which variant did you crash?")


# --------------------------------------------------------------------------- exercise 2


def _money(value) -> Decimal | None:
    try:
        return ledgers.to_amount(value)
    except CourseError:
        return None


def hidden_sink(rng: random.Random) -> SimpleNamespace:
    """Exercise 2's hidden run: orders of their own (ids far from the lab's), a sink that lost one or two runs of
    them (a batch in flight and the orders produced while the driver was down) and holds a few orders twice."""
    from ...orders import generate_orders

    produced = generate_orders(rng.randint(120, 300), seed=rng.randint(1, 10**6), start=rng.randint(10_000, 90_000))
    n, lost = len(produced), set()
    for _ in range(rng.randint(1, 2)):
        first = rng.randint(n // 8, n - n // 4)
        lost.update(range(first, min(n, first + rng.randint(5, n // 4))))
    kept = [i for i in range(n) if i not in lost]
    twice = rng.sample(kept, rng.randint(1, 5))
    rows = [(produced[i]["order_id"], produced[i]["amount"]) for i in kept + twice]
    rng.shuffle(rows)
    return SimpleNamespace(produced=produced, rows=ledgers.normalise_rows(rows))


def lost_and_missing(produced, rows) -> tuple[set, Decimal]:
    """The right answer, the long way: ids produced and not in the sink, and the sum of their amounts."""
    in_sink = {order_id for order_id, _ in ledgers.normalise_rows(rows)}
    lost = {o["order_id"] for o in produced} - in_sink
    return lost, sum((Decimal(o["amount"]) for o in produced if o["order_id"] in lost), Decimal("0.00"))


def check_missing_revenue(checks, what_was_lost: Callable, produced: Callable, rows: Callable) -> None:
    """Exercise 2: ``what_was_lost(produced, rows) -> (lost_ids, missing)``, on exercise 1's orders and sink and on
    ``hidden_sink``."""
    function = _function(checks, "what_was_lost is a function of the orders and the sink's rows", what_was_lost,
                         "def what_was_lost(produced, rows): ... return lost_ids, missing",
                         "Define a function that takes the two lists and returns the two answers; the cell calls it.")
    runs = hidden.Runs(f"{LAB}:missing-revenue", shown=lambda: SimpleNamespace(produced=produced(), rows=rows()),
                       hidden=hidden_sink)

    def pair(fn, run):
        answer = fn(run.produced, run.rows)
        if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
            raise ValueError(f"what_was_lost returned {answer!r}: return the two answers, lost_ids and missing")
        return answer

    def judge_ids(fn, run):
        lost_ids, right = pair(fn, run)[0], lost_and_missing(run.produced, run.rows)[0]
        found = set(lost_ids)
        return None if found == right else ("the produced ids minus the ids in rows",
                                            f"{len(found)} ids ({len(found - right)} that were not lost, "
                                            f"{len(right - found)} lost ones missing)")

    def judge_missing(fn, run):
        missing, right = pair(fn, run)[1], lost_and_missing(run.produced, run.rows)[1]
        return None if _money(missing) == right else ("a positive amount: the sum of the lost orders' amounts",
                                                      f"missing = {missing!r}")

    checks.on_runs("lost_ids holds the ids produced but not in the sink", what_was_lost, runs, judge_ids,
                   depends_on=function,
                   hint="Subtract in the right order: which ids did the producer send that the sink does not hold? "
                        "Work from the two lists the function is given.")
    checks.on_runs("missing is the revenue of those orders", what_was_lost, runs, judge_missing, depends_on=function,
                   hint="Add up the amount of each lost order (produced has every order's amount). A sink can hold "
                        "an order twice, so the gap between two revenue totals is not always the lost revenue.")


# --------------------------------------------------------------------------- exercise 3


@dataclass
class RestartResult:
    """What ``stop_and_restart`` saw: the ledger, which orders came while stopped, the checkpoint's use, and why
    the learner's query stopped before the check stopped it (one line; None when it did not)."""
    ledger: object
    while_down: list = field(default_factory=list)
    used_checkpoint: bool = False
    ended: str | None = None
    delivered: int = 0
    folders: tuple = ()  # the checkpoint folder Spark resolved at each start (None where it could not be read)


class _Ended(Exception):
    """Internal: the learner's query (or start_query itself) stopped the experiment; the one line says why."""


ENDED_BY_ITSELF = ("its query ended by itself, without an error, after the {which} (a trigger such as availableNow "
                   "or once reads what is there and stops), so the orders sent after that were never read")

_attempts = itertools.count(1)


#: The sizes the lab once showed (and ``stop_and_restart``'s defaults): a hidden run never uses them, so offsets
#: typed in from that run's printout never fit.
SHOWN_SIZES = {"before": 60, "while_down": 40, "after": 30}


def restart_sizes(rng: random.Random) -> dict:
    """How many orders ``stop_and_restart`` sends before the stop, while stopped, and after the restart."""
    ranges = {"before": (30, 90), "while_down": (15, 60), "after": (10, 40)}
    return {k: rng.choice([n for n in range(lo, hi + 1) if n != SHOWN_SIZES[k]]) for k, (lo, hi) in ranges.items()}


def _one_line(error: BaseException | str) -> str:
    """The line that names what went wrong: the learner's own exception from deep in a Spark message, if any."""
    from ...crashlab.record import failure_line

    text = str(error).strip()
    if not text:
        return type(error).__name__
    return failure_line(text)


def stop_and_restart(start_query: Callable, lesson, before: int = 60, while_down: int = 40, after: int = 30):
    """Run ``start_query(topic, checkpoint_dir, keep)`` on a new topic: orders, a clean stop, orders while
    stopped, a restart with the same arguments, more orders. Returns a :class:`RestartResult`; a query that
    fails or ends by itself, or a start_query that raises, ends the experiment with ``ended`` saying so."""
    from ...checks import _is_todo_error
    from ...orders import produce_orders
    from ...stack import kafka
    from ...stack.session import get_spark
    from ...streams import wait_for_batches

    get_spark()
    n = next(_attempts)
    topic, ckpt = lesson.topic(f"keeper-{n}"), lesson.checkpoint(f"keeper-{n}")
    kafka.ensure_topic(lesson.bootstrap, topic)
    received: list = []
    folders: list = []

    def keep(batch, batch_id):
        received.extend((r.order_id, r.amount) for r in _orders_of(batch).collect())

    def learners(step, which: str):
        try:
            return step()
        except Exception as error:  # the learner's code, or Spark refusing or failing their query
            if _is_todo_error(error):
                raise
            raise _Ended(f"{which}: {_one_line(error)}") from None

    def run(count: int, start: int, which: str) -> list[dict]:
        query = learners(lambda: start_query(topic, ckpt, keep), f"start_query raised at the {which}")
        if not (hasattr(query, "processAllAvailable") and hasattr(query, "stop")):
            raise _Ended(f"start_query returned {type(query).__name__}; it must return the StreamingQuery "
                         "that writeStream...start() gives")
        try:
            folders.append(_folder(query))
            learners(lambda: wait_for_batches(query, 1), f"its query failed at the {which}")  # its start is fixed
            sent = produce_orders(lesson.bootstrap, topic, count, start=start, progress=False)
            learners(query.processAllAvailable, f"its query failed at the {which}")
            if not query.isActive:
                error = query.exception()
                raise _Ended(f"its query failed at the {which}: {_one_line(error)}" if error is not None
                             else ENDED_BY_ITSELF.format(which=which))
        finally:
            query.stop()
        return sent

    used = False
    try:
        first = run(before, 0, "first start")
        used = _has_offsets(ckpt)
        down = produce_orders(lesson.bootstrap, topic, while_down, start=before, progress=False)
        second = run(after, before + while_down, "restart")
    except _Ended as ended:
        return RestartResult(None, [], used, ended=str(ended), delivered=len(received), folders=tuple(folders))
    return RestartResult(ledgers.reconcile(first + down + second, received, label="start_query"),
                         [o["order_id"] for o in down], used, delivered=len(received), folders=tuple(folders))


def _folder(query) -> str | None:
    """The checkpoint folder the query runs from, or None if it cannot be read."""
    from .queries import checkpoint_folder

    try:
        return str(Path(checkpoint_folder(query)).resolve())
    except (CourseError, OSError):
        return None


def _has_offsets(ckpt: str) -> bool:
    """Does the query keep its progress in ``ckpt``: an offsets/ folder there, or in a folder under it?"""
    root = Path(ckpt)
    return root.is_dir() and any(p.is_dir() for p in [root / "offsets", *root.rglob("offsets")])


def _orders_of(batch):
    """order_id and amount of a batch: the learner's parsed columns, or parsed here from Kafka's value."""
    if {"order_id", "amount"} <= set(batch.columns):
        return batch.select("order_id", "amount")
    if "value" in batch.columns:
        from pyspark.sql import functions as F

        from ...orders import ORDER_SCHEMA

        return (batch.select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"))
                .select("o.order_id", "o.amount"))
    raise CourseError(f"keep() got columns {batch.columns}: hand it the orders with order_id and amount "
                      "(or Kafka's value column).")


def check_keeps_place(checks, start_query: Callable, lesson=None, experiment: Callable | None = None) -> None:
    """Exercise 3: a query that neither loses what arrives while it is stopped nor reads anything twice.

    The check runs it itself, once, on a hidden run: ``experiment(start_query, **restart_sizes(rng))``, by default
    ``stop_and_restart`` on ``lesson``. Its result (or its error) is shared by the checks below."""
    experiment = experiment or (lambda f, **sizes: stop_and_restart(f, lesson, **sizes))
    signature = "start_query takes (topic, checkpoint_dir, keep)"
    checks.that(signature, lambda: callable(start_query()) and len(inspect.signature(start_query()).parameters) == 3,
                expected="a function of three arguments", found=lambda: repr(start_query()),
                hint="def start_query(topic, checkpoint_dir, keep): ... return the started query.")
    runs = hidden.Runs(f"{LAB}:keeper", hidden=lambda rng: experiment(start_query(), **restart_sizes(rng)))

    def judge_running(f, result):
        if result.ended:
            return "a query that reads until the check stops it", result.ended
        if not result.delivered:
            return "orders handed to keep", "keep received no order: does the query hand each batch to keep?"
        return None

    def judge_checkpoint(f, r):
        expected = "offsets/ in the checkpoint_dir the check passed (or in a folder under it), the same at both starts"
        if not r.used_checkpoint:
            return expected, "no offsets/ there: Spark kept its progress somewhere else, or nowhere"
        first, again = (list(r.folders) + [None, None])[:2]
        if first and again and first != again:
            tail = lambda p: "/".join(Path(p).parts[-2:])  # noqa: E731
            return expected, (f"the first start kept its progress in {tail(first)}/, the restart in {tail(again)}/: "
                              "the restart began a new query instead of carrying on")
        return None

    running = "its query reads until it is stopped and hands each batch to keep"
    checks.on_runs(running, start_query, runs, judge_running, depends_on=signature,
                   hint="Start it with .foreachBatch(keep) and no trigger that stops by itself; run it again on "
                        "its own to see the error, if it raised one.")
    checks.on_runs("its query keeps its progress in checkpoint_dir", start_query, runs, judge_checkpoint,
                   hint="Which writeStream option names the folder where a query keeps its progress, and does the "
                        "restart name the same folder as the first start?",
                   depends_on=running)
    checks.on_runs("no order produced while it was stopped is lost", start_query, runs,
                   lambda f, r: None if r.ledger.lost == 0 else (
                       "0 lost", f"{r.ledger.lost} lost ({len(set(r.ledger.lost_ids) & set(r.while_down))} of them "
                                 "produced while stopped)"),
                   hint="A restarted query must carry on from where it stopped, not from the end of the topic.",
                   depends_on=running)
    checks.on_runs("no order is delivered twice", start_query, runs,
                   lambda f, r: None if r.ledger.duplicated == 0 else ("0 duplicated", f"{r.ledger.duplicated} duplicated"),
                   hint="Reading from earliest is not enough on its own: what tells the restart which orders it "
                        "already handed to keep?",
                   depends_on=running)


# --------------------------------------------------------------------------- exercise 4

#: The use cases of exercise 4, by name.
USE_CASES = {
    "freezer_screen": "a wall screen showing the latest reading of each freezer thermometer, refreshed every second",
    "click_heatmap": "a heatmap of where visitors click, drawn from a sample of click events",
    "card_payments": "card payments to be settled with the bank",
    "credit_audit": "the audit trail of who changed a customer's credit limit",
    "invoiced_orders": "orders that become invoices and stock reservations",
}
#: Where losing a record now and then is a price one can choose to pay: the next reading replaces a lost
#: one, or a sample stays a sample. Everywhere else a lost record is wrong for good.
_ACCEPTABLE = {"freezer_screen", "click_heatmap"}


def check_acceptable(checks, acceptable: Callable) -> None:
    """Exercise 4: the names of the use cases where at-most-once is good enough."""
    checks.that("acceptable is a set of use-case names", lambda: isinstance(acceptable(), (set, frozenset, list, tuple))
                and set(acceptable()) <= set(USE_CASES),
                expected=f"a set of names from {', '.join(USE_CASES)}",
                found=lambda: repr(acceptable()),
                hint="A set of names, spelt exactly as the keys of lab.USE_CASES.")
    checks.that("no use case that can never lose a record is in it", lambda: not set(acceptable()) - _ACCEPTABLE,
                expected="only use cases where a lost record does no lasting harm",
                found=lambda: f"{len(set(acceptable()) - _ACCEPTABLE)} that cannot afford a loss",
                hint="Ask of each: if one record silently vanished, would money, a promise to someone or a record "
                     "you must keep be wrong for good?",
                depends_on="acceptable is a set of use-case names")
    checks.that("every use case that can afford a loss is in it", lambda: not _ACCEPTABLE - set(acceptable()),
                expected="every use case where the next record makes up for a lost one",
                found=lambda: f"{len(_ACCEPTABLE - set(acceptable()))} missing",
                hint="A reading that the next one replaces, or a sample that is a sample anyway, can afford a gap.",
                depends_on="acceptable is a set of use-case names")
