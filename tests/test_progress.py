"""progress.py: the learner's local progress store and table."""
from __future__ import annotations

import threading

import pytest

from deliverylab import progress


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("DELIVERYLAB_LEARNER", "tester")
    return tmp_path / "state"


def row(text: str, module: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(module))


@pytest.mark.parametrize("name, module", [
    ("01-three-guarantees", "01-three-guarantees"),
    ("01-three-guarantees-lab", "01-three-guarantees"),
    ("05-exactly-once-sinks-lab.ipynb", "05-exactly-once-sinks"),
    ("99-unknown", "99-unknown"),
])
def test_module_id(name, module):
    assert progress.module_id(name) == module


def test_the_store_lives_in_the_state_folder(private_state):
    progress.record_check("01-three-guarantees", "a")
    assert progress.store_path() == private_state / "progress.db"
    assert progress.store_path().exists()


def test_checks_round_trip_without_duplicates():
    progress.record_check("01-three-guarantees-lab", "lost orders found")
    progress.record_check("01-three-guarantees", "lost orders found")
    progress.record_check("01-three-guarantees", "duplicates found")
    assert sorted(progress.passed_checks("01-three-guarantees")) == ["duplicates found", "lost orders found"]
    assert progress.passed_checks("02-anatomy") == []


def test_best_quiz_is_the_best_attempt():
    assert progress.best_quiz("01-three-guarantees") is None
    for score in (2, 5, 3):
        progress.record_quiz("01-three-guarantees", score, 5)
    assert progress.best_quiz("01-three-guarantees") == (5, 5)


def test_an_impossible_score_is_refused():
    with pytest.raises(ValueError):
        progress.record_quiz("01-three-guarantees", 6, 5)


def test_progress_belongs_to_one_learner(monkeypatch):
    progress.record_check("01-three-guarantees", "a")
    monkeypatch.setenv("DELIVERYLAB_LEARNER", "someone-else")
    assert progress.passed_checks("01-three-guarantees") == []


def test_concurrent_writers_all_land():
    def write(worker: int) -> None:
        for n in range(15):
            progress.record_check("01-three-guarantees", f"check {worker}-{n}")

    threads = [threading.Thread(target=write, args=(worker,)) for worker in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(progress.passed_checks("01-three-guarantees")) == 45


def test_table_lists_every_module():
    text = progress.table()
    for module in progress.MODULES:
        assert row(text, module)
    assert text.splitlines()[0].split() == ["module", "lesson", "checks", "passed", "quiz", "best", "done?"]


def test_table_shows_checks_quiz_and_done():
    assert row(progress.table(), "01-three-guarantees").split()[1:] == ["not", "yet", "0", "not", "taken", "not",
                                                                         "yet"]

    progress.record_check("01-three-guarantees", "a")
    progress.record_check("01-three-guarantees", "b")
    progress.record_lab_complete("01-three-guarantees")
    progress.record_quiz("01-three-guarantees", 3, 5)
    assert row(progress.table(), "01-three-guarantees").split()[1:] == ["not", "yet", "2", "(lab", "complete)", "3",
                                                                         "/", "5", "not", "yet"]

    progress.record_quiz("01-three-guarantees", 4, 5)  # 80% is enough
    assert row(progress.table(), "01-three-guarantees").split()[-1] == "yet"  # the lesson is not run yet
    progress.record_lesson_complete("01-three-guarantees")
    assert row(progress.table(), "01-three-guarantees").split()[-1] == "yes"


def test_a_module_with_only_a_lesson_is_done_once_the_lesson_ran():
    assert row(progress.table(), "00-setup-and-tour").split()[1:] == ["not", "yet", "-", "-", "not", "yet"]
    progress.record_lesson_complete("00-setup-and-tour")
    assert row(progress.table(), "00-setup-and-tour").split()[1:] == ["run", "-", "-", "yes"]


def test_done_rule():
    status = progress.ModuleStatus("m", 3, lab_complete=True, quiz_best=(4, 5), has_lab=True, has_quiz=True,
                                   lesson_complete=True)
    assert status.done is True
    assert progress.ModuleStatus("m", 3, True, (4, 5), has_lab=True, has_quiz=True).done is False  # no lesson
    assert progress.ModuleStatus("m", 3, False, (5, 5), has_lab=True, has_quiz=True, lesson_complete=True).done is False
    assert progress.ModuleStatus("m", 0, False, (5, 5), has_lab=False, has_quiz=True, lesson_complete=True).done is True
    assert progress.ModuleStatus("m", 0, False, None, has_lab=False, has_quiz=False, lesson_complete=True).done is True


def test_main_prints_the_table(capsys):
    progress.record_quiz("01-three-guarantees", 5, 5)
    assert progress.main([]) == 0
    out = capsys.readouterr().out
    assert "progress of learner 'tester'" in out
    assert "5 / 5" in row(out, "01-three-guarantees")
    assert progress.main(["progress", "extra"]) == 2
