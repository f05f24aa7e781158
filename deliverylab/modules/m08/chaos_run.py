"""The capstone's chaos run: its plan, and the line its checked cell prints.

The plan is every named crash point once, then kills at a random moment (``"now"``): two
when a learner runs the lesson, one under ``make test`` (DELIVERYLAB_REDUCED=1), where every
crash costs a fresh driver's boot on two busy cores. The checked line holds for both plans.
"""
from __future__ import annotations

from ...config import settings
from ...crashlab import crashpoints

#: Kills at a random moment after the named points, for a learner and under make test.
RANDOM_KILLS = 2
RANDOM_KILLS_REDUCED = 1


def plan() -> list[str]:
    """Every named crash point in order, then the random kills."""
    kills = RANDOM_KILLS_REDUCED if settings().reduced else RANDOM_KILLS
    return [*crashpoints.CRASH_POINTS, *[crashpoints.CRASH_NOW] * kills]


def crashes_line(result: dict, plan: list[str]) -> str:
    """Did every planned crash happen, in order, each one a SIGKILL? (a run_chaos result)"""
    crashes = result["crashes"]
    points = [c["point"] for c in crashes]
    named = [p for p in points if p != crashpoints.CRASH_NOW]
    random_kills = len(points) - len(named)
    return (f"every named point, in order: {named == list(crashpoints.CRASH_POINTS)} | "
            f"then random kills: {random_kills > 0 and points == list(plan)} | "
            f"all by SIGKILL: {bool(crashes) and all(c['by_sigkill'] for c in crashes)}")
