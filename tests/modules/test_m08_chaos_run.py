"""The capstone's chaos plan and checked line, on hand-built results (no broker, no Spark)."""
import pytest

from deliverylab.config import CourseError
from deliverylab.crashlab import crashpoints
from deliverylab.modules.m08 import chaos_run

NAMED = list(crashpoints.CRASH_POINTS)


def crashes(*points, sigkill=True):
    return {"crashes": [{"point": p, "by_sigkill": sigkill} for p in points]}


def test_a_learner_gets_two_random_kills_and_make_test_one(monkeypatch):
    monkeypatch.delenv("DELIVERYLAB_REDUCED", raising=False)
    assert chaos_run.plan() == [*NAMED, "now", "now"]
    monkeypatch.setenv("DELIVERYLAB_REDUCED", "1")
    assert chaos_run.plan() == [*NAMED, "now"]
    monkeypatch.setenv("DELIVERYLAB_REDUCED", "maybe")
    with pytest.raises(CourseError, match="DELIVERYLAB_REDUCED"):
        chaos_run.plan()


@pytest.mark.parametrize("kills", [1, 2])
def test_the_checked_line_is_the_same_for_either_plan(kills):
    plan = [*NAMED, *["now"] * kills]
    assert chaos_run.crashes_line(crashes(*plan), plan) == \
        "every named point, in order: True | then random kills: True | all by SIGKILL: True"


def test_the_checked_line_catches_a_run_that_went_wrong():
    plan = [*NAMED, "now"]
    missing = chaos_run.crashes_line(crashes(*NAMED), plan)          # the random kill never happened
    assert "then random kills: False" in missing
    shuffled = chaos_run.crashes_line(crashes(*reversed(NAMED), "now"), plan)
    assert "every named point, in order: False" in shuffled
    not_killed = chaos_run.crashes_line(crashes(*plan, sigkill=False), plan)
    assert not_killed.endswith("all by SIGKILL: False")
    assert chaos_run.crashes_line({"crashes": []}, plan).endswith("all by SIGKILL: False")
