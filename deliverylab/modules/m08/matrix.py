"""The guarantee matrix: every pipeline variant through the same chaos plan, measured, never written down.

Each variant is crashed at the same named points (plus its own crash points, if it names
any), restarted each time, and reconciled; the row says what the ledger observed.

    rows = matrix.run(lesson)                      # every variant of crashlab/variants.py
    matrix.verdict_lines(rows)                     # each variant's verdict
    matrix.summary_lines(rows)                     # the stable part (a checked cell)
    matrix.table(rows, my_picks); matrix.chart(rows)

Module 10's Iceberg variants are rows too, wherever the Iceberg venv exists: their drivers run that venv's
Python (Spark 4.1 + Iceberg; crashlab/drivers.py) while the matrix runs on the main kernel, and the ledger
reads their tables with that venv's pyiceberg (crashlab/sinks.py). The table and the chart mark them.
"""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ... import charts, statusline
from ...config import CourseError
from ...course import did_you_mean
from ...crashlab import chaos, drivers
from ...crashlab import variants as _variants
from ...inspector import TextBlock, text_table
from ...ledger import VERDICTS

#: The crash point every variant goes through: after_sink_write leaves a batch written but not
#: committed, so a replay follows. Orders produced while the driver is down test where a restart
#: begins. A variant's own points come after it. One common point keeps the whole matrix (17
#: variants, 20 crashes; 21 and 24 with the Iceberg rows) within a lesson's time; the lesson's own
#: pipeline goes through all four.
PLAN = ("after_sink_write",)
#: The variants ``run()`` takes under ``make test`` (DELIVERYLAB_REDUCED=1): one of each verdict
#: plus the variant broken on purpose. Every other variant is crashed by its own lesson and by
#: tests/crashlab; a learner's run (the setting unset) takes them all.
SAMPLE = ("at_most_once", "at_least_once", "delta_txn", "control_table_after")
#: The variant broken on purpose: the control table's crash window shows up in the matrix.
BROKEN_ON_PURPOSE = "control_table_after"
#: What a learner can predict for a variant: the ledger's verdicts.
OUTCOMES = VERDICTS
#: Small batches, so the first run has several batches to time (see price.py).
MAX_PER_BATCH = 10
#: Every variant the matrix knows: the crash lab's table and module 10's Iceberg rows (on any kernel).
VARIANTS = {**_variants.VARIANTS, **_variants.ICEBERG_VARIANTS}
#: How the table and the chart mark a row whose drivers ran module 10's venv.
ICEBERG_MARK = "Spark 4.1 + Iceberg"


def default_variants() -> list[str]:
    """What ``run()`` takes when no variants are named: ``runnable()``, or SAMPLE under ``make test``."""
    from ...config import settings

    return list(SAMPLE) if settings().reduced else runnable()


def needs_options(variant: str) -> bool:
    """Does the variant read a lesson's setting (``out.options["..."]``, no default)? chaos passes none."""
    import inspect

    code = inspect.getsource(VARIANTS[variant].start)
    return 'out.options["' in code or "out.options['" in code


def on_iceberg(variant: str) -> bool:
    """Is it one of module 10's Iceberg rows (its drivers run Spark 4.1 + Iceberg)?"""
    return variant in _variants.ICEBERG_VARIANTS


def runnable() -> list[str]:
    """The variants the matrix runs: every one of the table that runs without a lesson's settings, the Iceberg
    rows only where the Iceberg venv exists."""
    iceberg = drivers.iceberg_available()
    return [name for name in VARIANTS if not needs_options(name) and (iceberg or not on_iceberg(name))]


def left_out() -> list[str]:
    """The variants of the table the matrix cannot run (they need a lesson's settings)."""
    return [name for name in VARIANTS if needs_options(name)]


def plan_for(variant: str) -> list[str]:
    """The plan one variant goes through: PLAN, then its own crash points."""
    return [*PLAN, *VARIANTS[variant].crash_points]


@dataclass
class MatrixRow:
    variant: str
    expected: str          # the guarantee the course's variant table states
    observed: str          # the ledger's verdict after the chaos plan
    produced: int
    lost: int
    duplicated: int
    plan: list = field(default_factory=list)
    pipe: object = field(default=None, repr=False)  # the stopped Pipeline (its progress, for price.py)

    @property
    def as_expected(self) -> bool:
        return self.observed == self.expected


def run_variant(lesson, variant: str, orders: int = 40, seed: int = 21) -> MatrixRow:
    """One variant through its plan (``orders`` in all, batches of at most MAX_PER_BATCH)."""
    result = chaos.run_chaos(lesson, variant, plan=plan_for(variant), orders=orders, seed=seed,
                             max_per_batch=MAX_PER_BATCH, name=f"matrix-{variant}", keep_pipe=True,
                             standbys_after=None)  # the next variant takes them; run() trims at the end
    led = result["ledger_object"]
    return MatrixRow(variant, VARIANTS[variant].guarantee, led.verdict, led.produced, led.lost, led.duplicated,
                     result["plan"], result["pipe"])


def run(lesson, variants: list[str] | None = None, orders: int = 40, workers: int = 2, log=None) -> list[MatrixRow]:
    """Run the plan on each variant (default: ``default_variants()``), ``workers`` at a time, in table order."""
    names = list(variants or default_variants())
    for name in names:
        if name not in VARIANTS:
            raise CourseError(f"Unknown pipeline {name!r}.{did_you_mean(name, VARIANTS)} Pipelines: {', '.join(VARIANTS)}.")
        drivers.runnable_here(VARIANTS[name])  # an Iceberg row without the Iceberg venv: one line says `make setup`
    log = log or (lambda message: None)
    from ... import get_spark

    get_spark()  # the kernel's session reads the Parquet and Delta sinks: build it before the threads

    with statusline.task("guarantee matrix", total=len(names)) as line:
        def one(name):
            row = run_variant(lesson, name, orders)
            log(f"{name}: {row.observed}")
            line.done(f"{name}: {row.observed}")
            return row

        # this kernel's variants first, then the Iceberg rows, each Python's standbys trimmed when its turn ends,
        # so the two pools' JVMs never wait side by side
        pythons = sorted({drivers.python_for(VARIANTS[n]) for n in names}, key=lambda py: py != sys.executable)
        rows = {}
        try:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for python in pythons:
                    turn = [n for n in names if drivers.python_for(VARIANTS[n]) == python]
                    try:
                        rows.update(zip(turn, pool.map(one, turn)))
                    finally:  # two were kept booted for the variants' crashes; one of this Python's stays
                        drivers.pool(python).trim(1 if python == sys.executable else 0)
            return [rows[n] for n in names]
        finally:
            drivers.pool().trim(1)


def label(variant: str) -> str:
    """The variant's name as the table and the chart show it: an Iceberg row says where it ran."""
    return f"{variant} ({ICEBERG_MARK})" if on_iceberg(variant) else variant


def picks(predictions) -> dict[str, str]:
    """``{variant: outcome}`` from a dict whose values are outcomes or Prediction widgets (unpicked: "?")."""
    out = {}
    for name, value in dict(predictions or {}).items():
        value = getattr(value, "picked", value)
        out[name] = value if isinstance(value, str) else "?"
    return out


def table(rows: list[MatrixRow], predictions=None) -> TextBlock:
    """The matrix as text: variant, expected, predicted (if given), observed, lost, duplicated, agreement."""
    guesses = picks(predictions)
    shown = []
    for row in rows:
        guess = guesses.get(row.variant, "?")
        shown.append({"variant": label(row.variant), "expected": row.expected, "predicted": guess,
                      "observed": row.observed, "lost": row.lost, "duplicated": row.duplicated,
                      "you": "✓" if guess == row.observed else ("" if guess == "?" else "✗")})
    columns = [("variant", "variant"), ("expected", "course expects"), ("observed", "observed"),
               ("lost", "lost"), ("duplicated", "duplicated")]
    if predictions:
        columns[2:2] = [("predicted", "you predicted")]
        columns.append(("you", ""))
    return TextBlock(text_table(shown, columns, numeric=("lost", "duplicated")))


def verdict_lines(rows: list[MatrixRow]) -> TextBlock:
    """The stable part of the matrix: each variant's verdict, and whether it is what the course expects."""
    if not rows:
        raise CourseError("The matrix has no rows: run matrix.run(lesson) first.")
    width = max(len(r.variant) for r in rows)
    return TextBlock("\n".join(f"{r.variant:<{width}}  {r.observed:<19}  {'as expected' if r.as_expected else 'NOT as expected'}"
                               for r in rows))


def summary_lines(rows: list[MatrixRow]) -> TextBlock:
    """What the matrix proves, in lines that hold for the full matrix and for the SAMPLE alike."""
    if not rows:
        raise CourseError("The matrix has no rows: run matrix.run(lesson) first.")
    broken = [r for r in rows if r.variant == BROKEN_ON_PURPOSE]
    seen = [v for v in OUTCOMES if any(r.observed == v for r in rows)]
    return TextBlock("\n".join([
        f"every variant observed as the course expects: {all(r.as_expected for r in rows)}",
        f"verdicts observed: {', '.join(seen)}",
        f"{BROKEN_ON_PURPOSE} (broken on purpose): "
        + (f"{broken[0].observed}, {broken[0].lost} lost, duplicated: {broken[0].duplicated > 0}" if broken else "not run"),
    ]))


def score_line(rows: list[MatrixRow], predictions) -> str:
    """How many of the learner's picks the runs confirmed, e.g. ``your predictions: 15 of 17 observed``."""
    guesses = picks(predictions)
    right = sum(guesses.get(r.variant) == r.observed for r in rows)
    return f"your predictions: {right} of {len(rows)} observed"


def chart(rows: list[MatrixRow], title: str | None = None):
    """Lost and duplicated orders per variant, one line each; a variant not as expected is marked."""
    if not rows:
        raise CourseError("The matrix has no rows: run matrix.run(lesson) first.")
    with charts.course_style():
        fig, ax = charts.new_figure((charts.FIGSIZE[0] + 1.5, 0.32 * len(rows) + 1.2))
        ys = range(len(rows))
        for offset, role, attribute in ((-0.2, "lost", "lost"), (0.2, "duplicated", "duplicated")):
            bars = ax.barh([y + offset for y in ys], [getattr(r, attribute) for r in rows], height=0.4,
                           color=charts.PALETTE[role], label=role)
            ax.bar_label(bars, padding=2, fontsize=7)
        ax.set_yticks(list(ys), [f"{label(r.variant)}: {r.observed}" + ("" if r.as_expected else "  (NOT as expected)")
                                 for r in rows], fontsize=7)
        ax.invert_yaxis()  # the table's order, top to bottom
        ax.set_xlabel("order ids")
        ax.set_xlim(0, max([r.lost for r in rows] + [r.duplicated for r in rows] + [1]) * 1.15)
        ax.set_title(title or "The guarantee matrix: the same crashes, every variant")
        ax.legend(loc="lower right")
    return fig
