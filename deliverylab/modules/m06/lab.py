"""The checks of lab 06 (solutions/06-kafka-end-to-end-lab.ipynb), one function per exercise.

Every value reaches a check as a lambda, so an unfinished TODO prints SKIP instead of an
error. Rows are ``(order_id, amount)`` pairs, dicts or Spark Rows (the ledger's shapes);
a Spark DataFrame is collected first. tests/modules/test_m06_lab.py runs each check on
the right answer and on planted wrong ones.

Every reader the lab asks for is a function of a topic, and every reader check calls it on the topic the
learner watched and on a hidden topic (probes.py, checks/hidden.py) with the same probes for all of them:
an aborted transaction that nobody sent again (dropping repeats does not remove it), an aborted
transaction sent again and committed (repeats in the uncommitted view), one to three partitions and more
committed records than one poll() returns. Exercise 4's de-duplication meets a hidden topic a Kafka sink
left after other crashes (one batch twice, part of another twice, a few orders three times).
"""
from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Callable

from ... import ledger
from ...checks import hidden
from . import probes

LAB = "06-kafka-end-to-end-lab"
#: The hidden topic with aborted transactions is one per seed, shared by the three reader exercises.
ABORTS = f"{LAB}:aborted-transactions"
MID_TRANSACTION = ("after_send", "before_commit")


def _rows(value) -> list:
    """Rows of a DataFrame (collected) or of any iterable the ledger accepts."""
    if hasattr(value, "collect") and hasattr(value, "columns"):
        missing = [c for c in ("order_id", "amount") if c not in value.columns]
        if missing:
            raise ValueError(f"the DataFrame has columns {value.columns}; parse the JSON value into order columns "
                             "(order_id, amount, ...)")
        return value.select("order_id", "amount").collect()
    return list(value)


def _ids(value) -> Counter:
    return Counter(order_id for order_id, _ in ledger.normalise_rows(_rows(value)))


def _order_ids(orders) -> list:
    return [o["order_id"] if isinstance(o, dict) else o[0] for o in orders]


def _pairs(orders) -> list:
    return [(o["order_id"], o["amount"]) if isinstance(o, dict) else tuple(o[:2]) for o in orders]


class _Reads:
    """What a learner's reader returned for a topic, read once per check call (its error kept, too)."""

    def __init__(self):
        self._seen: dict = {}

    def __call__(self, reader: Callable, topic: str) -> list:
        key = (reader, topic)
        if key not in self._seen:
            try:
                self._seen[key] = (ledger.normalise_rows(_rows(reader(topic))), None)
            except Exception as error:  # noqa: BLE001 - raised again to every judge that asks
                self._seen[key] = (None, error)
        rows, error = self._seen[key]
        if error is not None:
            raise error
        return rows


def _hidden_aborts(lesson) -> Callable:
    return lambda rng: probes.topic_with_aborts(lesson, rng)


def judge_committed(read: Callable) -> Callable:
    """Judge: every committed order of the run's topic once, nothing lost, nothing twice."""
    def judge(reader, truth):
        found = ledger.reconcile(truth.committed, read(reader, truth.topic))
        if found.lost == 0 and found.duplicated == 0:
            return None
        return (f"each of the {found.produced} committed orders once",
                f"{found.delivered_once} once, {found.duplicated} more than once, {found.lost} missing")
    return judge


def judge_no_aborted(read: Callable) -> Callable:
    """Judge: no record of an aborted transaction that was never committed."""
    def judge(reader, truth):
        aborted = truth.aborted_only
        shown = sum(n for order_id, n in Counter(i for i, _ in read(reader, truth.topic)).items() if order_id in aborted)
        return None if shown == 0 else ("0 records of aborted transactions", f"{shown} of them")
    return judge


# --------------------------------------------------------------------------- exercise 1


def check_transaction_views(checks, committed_view, default_view, committed_orders, aborted_orders, refunds: str,
                            lesson) -> None:
    """Exercise 1: ``committed_view(topic)`` and ``default_view(topic)``, read the way a read_committed and a
    default consumer read; on the refunds topic the learner wrote (one committed, one aborted transaction) and
    on a hidden topic with more transactions, aborted ones first, and an aborted one sent again."""
    functions = "committed_view and default_view are functions of a topic"
    checks.that(functions, lambda: callable(committed_view()) and callable(default_view()),
                expected="def committed_view(topic): ... and def default_view(topic): ..., each returning rows",
                found=lambda: f"committed_view: {type(committed_view()).__name__}, "
                              f"default_view: {type(default_view()).__name__}",
                hint="Define two functions that take a topic and return its rows; call them, do not replace them "
                     "by what they return.")
    shown = probes.TopicTruth(refunds, _pairs(committed_orders), _pairs(committed_orders) + _pairs(aborted_orders),
                              label="exercise 1's refunds")
    runs = hidden.Runs(ABORTS, shown=lambda: shown, hidden=_hidden_aborts(lesson))
    read = _Reads()

    def everything(reader, truth):
        rows, written = Counter(i for i, _ in read(reader, truth.topic)), Counter(i for i, _ in truth.sent)
        if rows == written:
            return None
        try:
            same = rows == Counter(i for i, _ in read(committed_view(), truth.topic))
        except Exception:  # noqa: BLE001 - committed_view's own check says what is wrong with it
            same = False
        repeats = sum(n - 1 for n in written.values() if n > 1)
        return (f"all {sum(written.values())} records written, aborted ones"
                + (f" and {repeats} repeats" if repeats else "") + " included",
                f"{sum(rows.values())} records" + (", the same as committed_view" if same else ""))

    checks.on_runs("committed_view has every committed order, once", committed_view, runs, judge_committed(read),
                   hint="Was the first transaction committed, and does the reader start from the beginning of the "
                        "topic and read to its end, whatever its size and its number of partitions?",
                   depends_on=functions)
    checks.on_runs("committed_view has none of the aborted orders", committed_view, runs, judge_no_aborted(read),
                   hint="Which isolation_level hides records of aborted transactions? And was the second "
                        "transaction aborted?", depends_on=functions)
    checks.on_runs("default_view shows the aborted orders too", default_view, runs, everything,
                   hint="read_kafka_topic reads read_committed unless you pass isolation_level; a KafkaConsumer "
                        "given no isolation_level reads with another one. Which? A default consumer shows every "
                        "record written, repeats included. And were the aborted orders sent (flush) before "
                        "abort_transaction()?", depends_on=functions)


# --------------------------------------------------------------------------- exercise 2


def check_relay_crash(checks, report) -> None:
    """The relay was SIGKILLed inside a transaction, and that transaction left records behind.

    What is judged is the moment chosen: it is inside a transaction or it is not, in whichever transaction
    and batch size (the reader half of the exercise, check_accounting_reader, meets a hidden topic)."""
    def killed_mid_transaction():
        run = report().crash_run
        return run.killed_by_sigkill and (run.crashed_at or ("",))[0] in MID_TRANSACTION

    checks.that("the relay was killed by SIGKILL in the middle of a transaction", killed_mid_transaction,
                expected=f"killed at one of {', '.join(MID_TRANSACTION)}",
                found=lambda: report().crash_run.line(),
                hint="Look at m06.CRASH_MOMENTS: at which moments is a transaction still open?")
    checks.that("the open transaction left records in the output topic",
                lambda: report().uncommitted.duplicated > 0,
                expected="a read_uncommitted reader sees some orders twice",
                found=lambda: report().uncommitted.verdict_line(),
                hint="Did the killed transaction send anything before the crash? Compare the crash moments.",
                depends_on="the relay was killed by SIGKILL in the middle of a transaction")


def _relay_truth(report, topic: str) -> probes.TopicTruth:
    """The relay's output: its aborted attempt was sent again by the restart, so every id is committed."""
    produced = _pairs(report.produced)
    return probes.TopicTruth(topic, produced, produced, label="the relay's output")


def check_accounting_reader(checks, reader, report, topic: str, lesson) -> None:
    """``reader(topic)`` reads the relay's output as a consumer of committed results must, and a hidden topic
    whose aborted transaction nobody sent again (removing repeats is not enough there)."""
    runs = hidden.Runs(ABORTS, shown=lambda: _relay_truth(report(), topic), hidden=_hidden_aborts(lesson))
    read = _Reads()
    checks.on_runs("read_for_accounting sees every order exactly once", reader, runs, judge_committed(read),
                   hint="The topic holds the records of an aborted transaction. Which consumer setting skips them? "
                        "And does your reader read every partition to its end, however many records that is?",
                   depends_on="the open transaction left records in the output topic")
    checks.on_runs("read_for_accounting skips an aborted transaction nobody sent again", reader, runs,
                   judge_no_aborted(read),
                   hint="Dropping repeated order ids is not enough: an aborted transaction that nobody committed "
                        "later has no second copy to tell it by. Which consumer setting skips it?",
                   depends_on="the open transaction left records in the output topic")


# --------------------------------------------------------------------------- exercise 3


def check_spark_committed_read(checks, read_df, report, topic: str, lesson) -> None:
    """``read_df(topic)``: a Spark batch read that sees committed transactions only; on the relay's output and on
    the hidden topic with aborted transactions (the same probes as the Kafka reader of exercise 2)."""
    returns = "read_committed_df returns a Spark DataFrame"
    checks.is_type(returns, lambda: read_df()(topic), "DataFrame",
                   hint="Build it with spark.read.format('kafka')...load(), parse the value, and return it.")
    runs = hidden.Runs(ABORTS, shown=lambda: _relay_truth(report(), topic), hidden=_hidden_aborts(lesson))
    read = _Reads()
    checks.on_runs("read_committed_df has every order exactly once", read_df, runs, judge_committed(read),
                   hint="Spark passes Kafka consumer settings through options that start with a prefix. "
                        "Which consumer setting, and with which prefix?", depends_on=returns)
    checks.on_runs("read_committed_df skips an aborted transaction nobody sent again", read_df, runs,
                   judge_no_aborted(read),
                   hint="Dropping repeated order ids is not enough: an aborted transaction that nobody committed "
                        "later has no second copy to tell it by. Which Kafka consumer setting skips it, and how "
                        "does Spark pass it on?", depends_on=returns)


# --------------------------------------------------------------------------- exercise 4


def hidden_replays(lesson, spark, rng) -> SimpleNamespace:
    """Exercise 4's hidden run: the topic of probes.plan_replays, as Spark reads it (``raw``), and its orders."""
    truth = probes.topic_with_replays(lesson, rng)
    frame = (spark.read.format("kafka").option("kafka.bootstrap.servers", lesson.bootstrap)
             .options(**lesson.spark_login).option("subscribe", truth.topic).load())
    return SimpleNamespace(raw=frame, orders=truth.committed)


def check_downstream_dedup(checks, dedup, raw, produced, topic_ledger, lesson, spark) -> None:
    """``dedup(raw)``: the orders of a topic Spark's Kafka sink wrote twice, each once; on the crashed pipeline's
    topic and on a hidden one left by other crashes (not every order twice, some three times, other sizes)."""
    checks.that("the crash left duplicates in the output topic", lambda: topic_ledger().duplicated > 0,
                expected="some orders twice in the topic", found=lambda: topic_ledger().verdict_line(),
                hint="Run the cell that crashes the pipeline at after_sink_write and restarts it.")
    returns = "dedup returns a Spark DataFrame"
    checks.is_type(returns, lambda: dedup()(raw()), "DataFrame",
                   hint="Keep the result in Spark: dedup the DataFrame rather than collecting it, and return it.")
    runs = hidden.Runs(f"{LAB}:dedup", shown=lambda: SimpleNamespace(raw=raw(), orders=produced()),
                       hidden=lambda rng: hidden_replays(lesson, spark, rng))

    def once(fn, run):
        found = ledger.reconcile(run.orders, _rows(fn(run.raw)))
        return None if found.verdict == ledger.EXACTLY_ONCE else (f"verdict: {ledger.EXACTLY_ONCE}", found.verdict_line())

    checks.on_runs("dedup(raw) has every order exactly once", dedup, runs, once,
                   hint="Two copies of an order differ in their Kafka offset and timestamp. Which column is the "
                        "same in every copy and unique to one order? Not every order has two copies.",
                   depends_on=["the crash left duplicates in the output topic", returns])
