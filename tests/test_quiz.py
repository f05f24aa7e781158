"""quiz.py: banks validate, widgets have Python twins, predictions reveal."""
from __future__ import annotations

import json

import pytest

from deliverylab import progress, quiz
from deliverylab.config import CourseError

BANKS = sorted(quiz.BANKS_DIR.glob("*.json"))


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("DELIVERYLAB_LEARNER", "tester")


def test_module_01_has_a_bank():
    assert quiz.bank_path("01-three-guarantees") in BANKS


@pytest.mark.parametrize("path", BANKS, ids=lambda p: p.name)
def test_every_bank_validates(path):
    bank = quiz.load_bank_file(path)
    assert bank.module == path.stem
    assert quiz.MIN_QUESTIONS <= len(bank.questions) <= quiz.MAX_QUESTIONS
    assert len({q.id for q in bank.questions}) == len(bank.questions)
    for question in bank.questions:
        assert isinstance(question.answer, int) and 0 <= question.answer < len(question.choices)
        assert len(set(question.choices)) == len(question.choices)
        assert question.explanation.strip()


def good_bank() -> dict:
    return {
        "module": "99-test",
        "title": "Test quiz",
        "questions": [
            {"id": f"q{n}", "prompt": f"Question {n}?", "choices": ["yes", "no", "maybe"], "answer": n % 3,
             "explanation": "Because."}
            for n in range(1, 5)
        ],
    }


def write_bank(tmp_path, data) -> object:
    path = tmp_path / "99-test.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1), encoding="utf-8")
    return path


def broken(change) -> dict:
    data = good_bank()
    change(data)
    return data


def test_a_good_bank_loads(tmp_path):
    assert len(quiz.load_bank_file(write_bank(tmp_path, good_bank())).questions) == 4


def test_malformed_json_names_the_file_and_line(tmp_path):
    path = write_bank(tmp_path, '{"module": "99-test",\n "title": "x"\n "questions": []}')
    with pytest.raises(CourseError) as caught:
        quiz.load_bank_file(path)
    assert "99-test.json is not valid JSON" in str(caught.value)
    assert "line 3" in str(caught.value)


@pytest.mark.parametrize("change, complaint", [
    (lambda d: d["questions"][0].update(answer=3), "answer 3 is out of range"),
    (lambda d: d["questions"][0].update(answer=[0, 1]), "exactly one correct choice"),
    (lambda d: d["questions"][1].update(id="q1"), "'q1' is used twice"),
    (lambda d: d["questions"][2].pop("explanation"), "explanation is missing"),
    (lambda d: d["questions"][2].update(explanation="  "), "explanation must be a non-empty string"),
    (lambda d: d["questions"][0].update(explaination="typo"), "unknown field 'explaination'"),
    (lambda d: d["questions"][0].update(choices=["yes", "Yes"]), "two choices say the same thing"),
    (lambda d: d.update(questions=d["questions"][:3]), "4 to 6 questions; this one has 3"),
    (lambda d: d.update(questions=d["questions"] * 2), "this one has 8"),
    (lambda d: d.update(module="01-other"), "file is named 99-test.json"),
])
def test_bad_banks_are_rejected_with_the_file_named(tmp_path, change, complaint):
    with pytest.raises(CourseError) as caught:
        quiz.load_bank_file(write_bank(tmp_path, broken(change)))
    message = str(caught.value)
    assert "99-test.json is not a valid question bank" in message
    assert complaint in message


def test_an_unknown_module_lists_the_quizzes():
    with pytest.raises(CourseError, match="01-three-guarantees"):
        quiz.load_bank("42-nothing-here")


# --------------------------------------------------------------------------- Quiz twin


def test_answer_checks_and_scores(capsys):
    q = quiz.Quiz("01-three-guarantees")
    bank = q.bank
    assert q.score == 0 and q.score_line.value == f"score: 0 / {q.total}"

    first, second = bank.questions[0], bank.questions[1]
    q.answer(first.id, first.answer)
    q.answer(second.id, (second.answer + 1) % len(second.choices))

    assert capsys.readouterr().out.splitlines() == [f"{first.id}: correct", f"{second.id}: not quite"]
    assert q.score == 1
    assert q.score_line.value == f"score: 1 / {q.total}"
    view = q._views[first.id]
    assert view.choices.value == first.choices[first.answer]
    assert "Correct." in view.feedback.value and "Not quite." in q._views[second.id].feedback.value


def test_radio_buttons_start_empty_and_check_asks_for_a_pick():
    q = quiz.Quiz("01-three-guarantees", record=False)
    view = q._views["q1"]
    assert view.choices.value is None
    view.button.click()
    assert "Pick an answer first" in view.feedback.value
    assert q.score == 0


def test_answer_by_text_and_bad_answers(capsys):
    q = quiz.Quiz("01-three-guarantees", record=False)
    question = q.bank.questions[0]
    q.answer(question.id, question.choices[question.answer].upper())
    assert q.score == 1
    with pytest.raises(CourseError, match="no question 'q99'"):
        q.answer("q99", 0)
    with pytest.raises(CourseError, match="not one of the choices"):
        q.answer(question.id, 17)


def test_a_finished_quiz_is_recorded():
    q = quiz.Quiz("01-three-guarantees")
    for question in q.bank.questions:
        q.answer(question.id, question.answer)
    assert progress.best_quiz("01-three-guarantees") == (q.total, q.total)


def test_an_unfinished_quiz_is_not_recorded():
    q = quiz.Quiz("01-three-guarantees")
    q.answer("q1", 0)
    assert progress.best_quiz("01-three-guarantees") is None


# --------------------------------------------------------------------------- Prediction


CHOICES = ["lost", "duplicated", "written once"]


@pytest.fixture(autouse=True)
def fresh_kernel():
    """Each test is a new kernel: no picks remembered from another test."""
    quiz._PICKS.clear()


def test_a_matching_prediction(capsys):
    guess = quiz.Prediction("After the crash, order 42 is ...", CHOICES)
    assert guess.picked is None
    guess.pick("duplicated")
    guess.reveal("duplicated")
    assert capsys.readouterr().out == "you predicted: duplicated   observed: duplicated   ✓\n"
    assert guess.options.disabled


def test_a_wrong_prediction_and_reveal_by_index(capsys):
    guess = quiz.Prediction("After the crash, order 42 is ...", CHOICES)
    guess.pick(0)
    guess.reveal(1)
    assert capsys.readouterr().out == "you predicted: lost   observed: duplicated   ✗\n"


def test_no_prediction_is_neutral(capsys):
    quiz.Prediction("After the crash, order 42 is ...", CHOICES).reveal("duplicated")
    assert capsys.readouterr().out == "you predicted: (nothing picked)   observed: duplicated\n"


def test_picking_something_that_is_not_a_choice():
    with pytest.raises(CourseError, match="0: lost; 1: duplicated"):
        quiz.Prediction("?", CHOICES).pick("vanished")


def test_a_prediction_keeps_its_pick_when_its_cell_runs_again():
    first = quiz.Prediction("Will order 7 be lost?", ["yes", "no"])
    assert first.picked is None
    first.options.value = "no"  # the learner clicks a radio button
    again = quiz.Prediction("Will order 7 be lost?", ["yes", "no"])  # Shift+Enter on the same cell
    assert again.picked == "no"
    other = quiz.Prediction("Will order 8 be lost?", ["yes", "no"])
    assert other.picked is None


def test_every_choice_is_drawn_as_a_row_as_high_as_its_text():
    """ipywidgets draws a choice one line high with its button floated left: a long choice lost its button
    (lab 05's quiz, question 2). The course's radio buttons carry a class its style wraps them by; the
    browser test (tests/browser/test_widgets_in_browser.py) clicks every choice of every quiz."""
    from deliverylab.quiz import CHOICES_CSS, Prediction, Quiz

    quiz = Quiz("05-exactly-once-sinks", record=False)
    assert CHOICES_CSS in quiz.title.value
    assert all("xo-choices" in view.choices._dom_classes for view in quiz._views.values())
    guess = Prediction("Which?", ["a", "b " * 80])
    assert "xo-choices" in guess.options._dom_classes and CHOICES_CSS in guess.question.value
    assert "white-space: normal" in CHOICES_CSS and "float: none" in CHOICES_CSS
