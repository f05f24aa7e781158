"""Crash one pipeline again and again, then count: ``python -m deliverylab chaos``.

    python -m deliverylab chaos --pipeline delta_txn --json
    python -m deliverylab chaos --pipeline at_least_once --crashes 5 --seed 3 --json

One pipeline, one driver process at a time: start it, then for every crash produce a
chunk of orders, kill the driver at the chosen point of a fresh batch (or at a random
moment for "now"), produce more orders while it is down, and restart it. At the end
drain, stop, and reconcile everything produced with the sink. Each crash is also
judged on its own: of the orders in the crashed batch, how many were lost or duplicated.

From Python (a notebook, the capstone, the tests)::

    from deliverylab.crashlab import chaos
    result = chaos.run_chaos(lesson, "delta_txn", points="all", orders=600)
    result["verdict"], result["crashes"][0]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import time

from .. import statusline
from ..config import CourseError
from . import crashpoints, variants
from .record import failure_kept

DEFAULT_ORDERS = 600
DEFAULT_MAX_PER_BATCH = 200
#: "now" kills the driver this many seconds (at most) after its orders were produced.
NOW_MAX_DELAY_S = 2.0


def parse_points(points) -> list[str]:
    """``"all"``, ``None``, ``"a,b"`` or a list, as a list of checked crash points ("now" allowed)."""
    if points is None or points == "all":
        return list(crashpoints.CRASH_POINTS)
    if isinstance(points, str):
        points = [p.strip() for p in points.split(",") if p.strip()]
    if not points:
        raise CourseError("Give at least one crash point, or 'all'.")
    return [crashpoints.check_point(p, allow_now=True) for p in points]


def crash_plan(points="all", crashes: int | None = None, seed: int = 7) -> list[str]:
    """The crash points in the order they will be used.

    Without ``crashes``: each point once, in the order given. With ``crashes=N``: N points
    drawn with a seeded RNG from the points plus "now" (a random moment).
    """
    chosen = parse_points(points)
    if crashes is None:
        return chosen
    if crashes < 0:
        raise CourseError(f"crashes must be 0 or more, not {crashes}.")
    pool = chosen + ([crashpoints.CRASH_NOW] if crashpoints.CRASH_NOW not in chosen else [])
    rng = random.Random(seed)
    return [rng.choice(pool) for _ in range(crashes)]


def _totals(ledger) -> dict:
    d = ledger.to_dict()
    return {k: d[k] for k in ("produced", "delivered_rows", "delivered_once", "duplicated", "extra_copies",
                              "lost", "unexpected", "revenue_expected", "revenue_observed", "revenue_difference")}


def run_chaos(lesson, pipeline, points="all", crashes: int | None = None, orders: int = DEFAULT_ORDERS,
              seed: int = 7, max_per_batch: int = DEFAULT_MAX_PER_BATCH, downtime_orders: int | None = None,
              name: str | None = None, log=None, keep_pipe: bool = False, plan: list[str] | None = None,
              sink: str = "delta", standbys_after: int | None = 1) -> dict:
    """Crash ``pipeline`` at each point of the plan, restart it each time, and return the ledger as a dict.

    ``orders`` are split into equal chunks: one before the first crash, then one per
    crash. Each crash is armed for the next new batch id, then its chunk is produced; the
    first new batch (which also takes whatever was still unprocessed) is the one that
    dies. While the driver is down, ``downtime_orders`` more are produced (default: a
    third of a chunk). Returns::

        {"pipeline", "variant", "expected", "plan", "crashes": [per crash], "ledger": {totals},
         "verdict", "verdict_line", "sink_files", "seconds"}

    Per crash: ``point``, ``batch`` (``armed_batch``: the one it was armed for), ``run``,
    ``by_sigkill``, ``returncode``, ``seconds``
    (crash + restart), and ``ledger``: ``orders`` in the crashed batch and how many of
    them were ``lost`` / ``duplicated`` in the end, plus ``downtime_orders`` and
    ``downtime_lost``. With ``keep_pipe=True`` the Pipeline is returned under ``"pipe"``.

    ``pipeline`` is a variant's name, or your own pipeline function (then ``sink`` names its
    kind of sink). ``plan`` gives the crash points in order instead of ``points``/``crashes``.
    The run boots two standby drivers; ``standbys_after`` of them are kept when it ends (None: all,
    for a caller that runs another chaos run next, such as the capstone's matrix).
    """
    from . import drivers
    from .pipeline import Pipeline

    quiet = log or (lambda msg: None)

    def log(message):
        quiet(message)
        line.step(message)

    # crashes come faster than one standby boots, and faster than a standby's warm-up pays back: on two
    # busy cores the warm-up only takes CPU from the run
    variant = variants.custom(pipeline, sink_kind=sink) if callable(pipeline) else variants.variant(pipeline)
    python = drivers.python_for(variant)  # an Iceberg pipeline on the main kernel: the Iceberg venv's drivers
    drivers.warm_up(standby=2, warm=False, python=python)
    plan = list(plan) if plan is not None else crash_plan(points, crashes, seed)
    for point in plan:  # a plan's typo is named before any driver starts, not blamed on the pipeline
        crashpoints.check_point(point, allow_now=True, extra=variant.crash_points)
    rng = random.Random(seed + 1)
    chunk = max(1, orders // (len(plan) + 1))
    downtime = chunk // 3 if downtime_orders is None else downtime_orders
    t0 = time.monotonic()
    pipe = Pipeline(lesson, pipeline if callable(pipeline) else variant.name, name=name or f"chaos-{variant.name}",
                    max_per_batch=max_per_batch, seed=seed, sink=sink)
    records = []
    fresh = variant.fresh_checkpoint_each_start
    with statusline.task(f"chaos run of {pipe.name}", total=len(plan)) as line:
        try:
            with failure_kept(pipe):
                log(f"{pipe.name}: starting")
                pipe.start()
                pipe.produce(orders - chunk * len(plan))
                just_restarted = False
                for i, point in enumerate(plan, 1):
                    t = time.monotonic()
                    if i == len(plan) and standbys_after is not None:
                        drivers.pool(python).fill(1)  # one restart follows the last crash: boot no second standby for it
                    if not just_restarted:
                        # Idle and caught up, so the next batch id is settled. Right after a restart
                        # (wait=False) the JVM is still booting, so it is settled too, and arming now
                        # lets the crash batch take the replay's leftovers and the downtime orders.
                        pipe.drain()
                    if point == crashpoints.CRASH_NOW:
                        armed = None
                        pipe.produce(chunk)
                        time.sleep(rng.uniform(0, NOW_MAX_DELAY_S))
                        crash = pipe.crash(point)
                    else:
                        armed = pipe.next_batch_id()
                        crash = pipe.crash(point, batch=armed, orders=chunk)
                    log(f"{pipe.name}: crash {i}/{len(plan)}: {crash.line()}")
                    line.done()
                    batch_ids = pipe.batch_orders(crash.batch, crash.run) if crash.batch is not None else []
                    down = [o["order_id"] for o in pipe.produce(downtime)] if downtime else []
                    # Wait for the new run to be up when at-most-once must fix its (latest) start offsets
                    # first, or when "now" comes next (a kill during the JVM's boot would teach nothing).
                    wait = fresh or (i < len(plan) and plan[i] == crashpoints.CRASH_NOW)
                    pipe.restart(wait=wait)
                    just_restarted = not wait
                    records.append({**crash.to_dict(), "armed_batch": armed, "batch_order_ids": batch_ids,
                                    "downtime_order_ids": down, "seconds": round(time.monotonic() - t, 1)})
                pipe.drain()
                pipe.stop()
                log(f"{pipe.name}: stopped; reading the sink")
                ledger = pipe.ledger()
        except BaseException:
            pipe.stop()
            raise
        finally:
            if standbys_after is not None:
                drivers.pool(python).trim(standbys_after)  # the second one was for this run's quick crashes
    if pipe.failure:  # a learner's pipeline function failed: what it did so far, and why
        pipe.stop()
        return {"pipeline": pipe.name, "variant": variant.name, "expected": variant.guarantee, "plan": plan,
                "failure": pipe.failure, "crashes": records, "verdict": "failed",
                "verdict_line": f"your pipeline failed: {pipe.failure}", **({"pipe": pipe} if keep_pipe else {})}
    lost, dup = set(ledger.lost_ids), set(ledger.duplicated_ids)
    crashes_out = []
    for r in records:
        batch_ids, down = set(r.pop("batch_order_ids")), set(r.pop("downtime_order_ids"))
        r["ledger"] = {"orders": len(batch_ids), "lost": len(batch_ids & lost), "duplicated": len(batch_ids & dup),
                       "downtime_orders": len(down), "downtime_lost": len(down & lost)}
        r["_ids"] = {"batch": sorted(batch_ids), "lost": sorted(batch_ids & lost), "duplicated": sorted(batch_ids & dup)}
        crashes_out.append(r)
    result = {
        "pipeline": pipe.name, "variant": variant.name, "expected": variant.guarantee, "plan": plan,
        "orders": len(pipe.produced), "seed": seed, "max_per_batch": max_per_batch,
        "crashes": crashes_out, "ledger": _totals(ledger), "verdict": ledger.verdict,
        "verdict_line": ledger.verdict_line(), "sink_files": pipe.sink_files(),
        "seconds": round(time.monotonic() - t0, 1),
    }
    if keep_pipe:
        result["pipe"] = pipe
        result["ledger_object"] = ledger
    return result


def public(result: dict) -> dict:
    """The result without Python objects and id lists: what ``--json`` prints."""
    out = {k: v for k, v in result.items() if k not in ("pipe", "ledger_object")}
    out["crashes"] = [{k: v for k, v in c.items() if k != "_ids"} for c in result["crashes"]]
    return out


# --------------------------------------------------------------------------- timing


def bench_crash_cycle(lesson=None, variant: str = "at_least_once", orders: int = 1000,
                      point: str = "after_sink_write", log=None) -> dict:
    """Time the crash lab's moves on one pipeline, in seconds.

    ``start`` (driver up, query running), ``first_drain`` (``orders`` processed),
    ``crash`` (armed, fresh orders produced, driver dead), ``restart``, ``drain`` (replay
    and new orders done), ``ledger`` (sink read and reconciled); ``cycle`` is crash +
    restart + drain and ``demo`` everything a module's crash demo does.
    """
    from .. import setup
    from .pipeline import Pipeline

    log = log or (lambda msg: None)
    lesson = lesson or setup("test-bench", quiet=True)
    times = {}

    def timed(key, fn):
        t = time.monotonic()
        value = fn()
        times[key] = round(time.monotonic() - t, 1)
        log(f"bench {key}: {times[key]} s")
        return value

    pipe = Pipeline(lesson, variant, name=f"bench-{variant}")
    try:
        timed("start", pipe.start)
        timed("first_drain", lambda: (pipe.produce(orders), pipe.drain()))
        crash = timed("crash", lambda: pipe.crash(point, orders=max(1, orders // 2)))
        timed("restart", pipe.restart)
        timed("drain", pipe.drain)
        pipe.stop()
        ledger = timed("ledger", pipe.ledger)
    finally:
        pipe.stop()
    times["cycle"] = round(times["crash"] + times["restart"] + times["drain"], 1)
    times["demo"] = round(sum(times[k] for k in ("start", "first_drain", "crash", "restart", "drain", "ledger")), 1)
    return {"variant": variant, "point": point, "orders": len(pipe.produced), "crash": crash.line(),
            "verdict_line": ledger.verdict_line(), "seconds": times}


# --------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m deliverylab chaos",
                                description="Crash a pipeline repeatedly, restart it each time, and print its ledger.")
    p.add_argument("--pipeline", required=True, choices=list(variants.VARIANTS))
    p.add_argument("--crashes", type=int, default=None,
                   help="crash N times at random points (seeded) and random moments; default: each point once")
    p.add_argument("--points", default="all", help="'all' or a comma-separated list of: "
                   + ", ".join([*crashpoints.CRASH_POINTS, crashpoints.CRASH_NOW]))
    p.add_argument("--orders", type=int, default=DEFAULT_ORDERS, help=f"orders in all (default {DEFAULT_ORDERS})")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--max-per-batch", type=int, default=DEFAULT_MAX_PER_BATCH)
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout (progress goes to stderr)")
    return p


@contextlib.contextmanager
def _stdout_to_stderr():
    """Send everything written to stdout (by Python or by the JVM) to stderr; yield the real stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    real = os.fdopen(saved, "w")
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield real
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        real.close()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:  # `python -m deliverylab chaos -- --pipeline ...`
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    from .. import setup

    clear = statusline.CLEAR if sys.stderr.isatty() else ""  # the status line, if one shows

    def log(msg):
        print(clear + msg, file=sys.stderr, flush=True)

    plan = crash_plan(args.points, args.crashes, args.seed)  # a bad point fails before anything starts
    with _stdout_to_stderr():
        lesson = setup(f"test-chaos-{args.pipeline}", quiet=True)
        log(f"chaos: {args.pipeline}, {len(plan)} crashes: {', '.join(plan) or 'none'}")
        result = public(run_chaos(lesson, args.pipeline, points=args.points, crashes=args.crashes,
                                  orders=args.orders, seed=args.seed, max_per_batch=args.max_per_batch, log=log))
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"{result['pipeline']} (expected {result['expected']}): {result['verdict_line']}")
        for c in result["crashes"]:
            led = c["ledger"]
            print(f"  {c['point']:<17} batch {c['batch'] if c['batch'] is not None else '-':>3}  "
                  f"{'SIGKILL' if c['by_sigkill'] else c['returncode']}  orders {led['orders']:>4}  "
                  f"lost {led['lost']:>4}  duplicated {led['duplicated']:>4}  "
                  f"(downtime {led['downtime_orders']}, lost {led['downtime_lost']})")
        print(f"  {result['seconds']} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CourseError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
