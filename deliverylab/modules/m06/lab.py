"""The checks of lab 06 (solutions/06-kafka-end-to-end-lab.ipynb), one function per exercise.

Every value reaches a check as a lambda, so an unfinished TODO prints SKIP instead of an
error. Rows are ``(order_id, amount)`` pairs, dicts or Spark Rows (the ledger's shapes);
a Spark DataFrame is collected first. tests/modules/test_m06_lab.py runs each check on
the right answer and on planted wrong ones.
"""
from __future__ import annotations

from collections import Counter

from ... import ledger

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


# --------------------------------------------------------------------------- exercise 1


def check_transaction_views(checks, committed_view, default_view, committed_orders, aborted_orders) -> None:
    """One committed and one aborted transaction, read by a read_committed and by a default consumer."""
    def seen(view):
        return _ids(view())

    committed_ids, aborted_ids = _order_ids(committed_orders), _order_ids(aborted_orders)
    checks.that("committed_view has every committed order, once",
                lambda: all(seen(committed_view)[i] == 1 for i in committed_ids),
                expected=f"each of the {len(committed_ids)} committed orders exactly once",
                found=lambda: f"{sum(1 for i in committed_ids if seen(committed_view)[i] == 1)} of them once",
                hint="Was the first transaction committed, and did the reader start from the beginning of the topic?")
    checks.that("committed_view has none of the aborted orders",
                lambda: not any(seen(committed_view)[i] for i in aborted_ids),
                expected="0 aborted orders",
                found=lambda: f"{sum(1 for i in aborted_ids if seen(committed_view)[i])} aborted orders",
                hint="Which isolation_level hides records of aborted transactions? And was the second transaction aborted?")
    checks.that("default_view shows the aborted orders too",
                lambda: all(seen(default_view)[i] == 1 for i in aborted_ids + committed_ids),
                expected=f"all {len(committed_ids) + len(aborted_ids)} orders, aborted ones included",
                found=lambda: f"{sum(seen(default_view).values())} records"
                              + (", the same as committed_view" if seen(default_view) == seen(committed_view) else ""),
                hint="read_kafka_topic reads read_committed unless you pass isolation_level; a KafkaConsumer "
                     "given no isolation_level reads with another one. Which? And were the aborted orders sent "
                     "(flush) before abort_transaction()?")


# --------------------------------------------------------------------------- exercise 2


def check_relay_crash(checks, report) -> None:
    """The relay was SIGKILLed inside a transaction, and that transaction left records behind."""
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


def check_accounting_reader(checks, reader, report, topic: str, refunds: tuple | None = None) -> None:
    """``reader(topic)`` reads the relay's output as a consumer of committed results must; with ``refunds``
    (exercise 1's topic and its committed orders), also a topic whose aborted transaction nobody sent again,
    where removing repeats is not enough."""
    def verdict():
        return ledger.reconcile(report().produced, reader()(topic)).verdict_line()

    checks.that("read_for_accounting sees every order exactly once",
                lambda: verdict().startswith(f"verdict: {ledger.EXACTLY_ONCE} "),
                expected=f"verdict: {ledger.EXACTLY_ONCE}", found=verdict,
                hint="The topic holds the records of an aborted transaction. Which consumer setting skips them?",
                depends_on="the open transaction left records in the output topic")
    if refunds is None:
        return
    refunds_topic, committed_orders = refunds
    committed = Counter(_order_ids(committed_orders))
    checks.that("read_for_accounting skips an aborted transaction nobody sent again",
                lambda: _ids(reader()(refunds_topic)) == committed,
                expected=f"exercise 1's {len(committed)} committed refunds, once each",
                found=lambda: f"{sum(_ids(reader()(refunds_topic)).values())} rows, "
                              f"{sum(1 for i in _ids(reader()(refunds_topic)) if i not in committed)} of them aborted",
                hint="Dropping repeated order ids is not enough: exercise 1's aborted refunds were never committed "
                     "by anyone, so they have no second copy to tell them by. Which consumer setting skips them?",
                depends_on="default_view shows the aborted orders too")


# --------------------------------------------------------------------------- exercise 3


def check_spark_committed_read(checks, df, produced) -> None:
    """A Spark batch read of the relay's output that sees committed transactions only."""
    def verdict():
        return ledger.reconcile(produced(), _rows(df())).verdict_line()

    checks.is_type("committed_df is a Spark DataFrame", df, "DataFrame",
                   hint="Build it with spark.read.format('kafka')...load() and parse the value.")
    checks.that("committed_df has every order exactly once",
                lambda: verdict().startswith(f"verdict: {ledger.EXACTLY_ONCE} "),
                expected=f"verdict: {ledger.EXACTLY_ONCE}", found=verdict,
                hint="Spark passes Kafka consumer settings through options that start with a prefix. "
                     "Which consumer setting, and with which prefix?",
                depends_on="committed_df is a Spark DataFrame")


# --------------------------------------------------------------------------- exercise 4


def check_downstream_dedup(checks, deduped, produced, topic_ledger) -> None:
    """Duplicates left in a Kafka topic by Spark's Kafka sink, removed by the reader downstream."""
    def verdict():
        return ledger.reconcile(produced(), _rows(deduped())).verdict_line()

    checks.that("the crash left duplicates in the output topic", lambda: topic_ledger().duplicated > 0,
                expected="some orders twice in the topic", found=lambda: topic_ledger().verdict_line(),
                hint="Run the cell that crashes the pipeline at after_sink_write and restarts it.")
    checks.is_type("deduped is a Spark DataFrame", deduped, "DataFrame",
                   hint="Keep the result in Spark: dedup the DataFrame rather than collecting it.")
    checks.that("deduped has every order exactly once",
                lambda: verdict().startswith(f"verdict: {ledger.EXACTLY_ONCE} "),
                expected=f"verdict: {ledger.EXACTLY_ONCE}", found=verdict,
                hint="Two copies of an order differ in their Kafka offset and timestamp. Which column is the "
                     "same in both copies and unique to one order?",
                depends_on=["the crash left duplicates in the output topic", "deduped is a Spark DataFrame"])
