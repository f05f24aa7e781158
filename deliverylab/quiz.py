"""Self-check quizzes and "predict, then observe" questions, built from plain ipywidgets.

A quiz is a question bank, ``deliverylab/quizzes/<module>.json``::

    {"module": "01-three-guarantees",
     "title": "Three delivery guarantees",
     "questions": [{"id": "q1", "prompt": "...", "choices": ["...", "..."],
                    "answer": 1, "explanation": "one paragraph"}]}

Rules, checked by :func:`load_bank`: ``module`` is the file's name, 4 to 6 questions,
unique ids, 2 to 6 different choices, ``answer`` is the index (from 0) of the one
correct choice, and every question explains its answer.

In a notebook::

    quiz = Quiz("01-three-guarantees")
    quiz.display()

Every widget has a Python twin, so a notebook also runs unattended (nbval, CI):
``quiz.answer("q1", 2)`` picks choice 2 and presses Check; ``quiz.score`` is the score.
A prediction is asked before an experiment and compared after it::

    guess = Prediction("After the crash, order 42 is ...", ["lost", "duplicated", "written once"])
    guess.display()          # later, after the crash:  guess.reveal("duplicated")
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import progress
from .config import CourseError, settings
from .course import QUIZ_BANKS as BANKS_DIR
from .course import quiz_bank_path as bank_path
MIN_QUESTIONS, MAX_QUESTIONS = 4, 6
MIN_CHOICES, MAX_CHOICES = 2, 6
QUESTION_FIELDS = ("id", "prompt", "choices", "answer", "explanation")
BANK_FIELDS = ("module", "title", "questions")


# --------------------------------------------------------------------------- banks


@dataclass(frozen=True)
class Question:
    id: str
    prompt: str
    choices: tuple[str, ...]
    answer: int
    explanation: str


@dataclass(frozen=True)
class Bank:
    module: str
    title: str
    questions: tuple[Question, ...]

    def question(self, question_id: str) -> Question:
        for question in self.questions:
            if question.id == question_id:
                return question
        ids = ", ".join(q.id for q in self.questions)
        raise CourseError(f"the {self.module} quiz has no question {question_id!r}; its questions are {ids}.")


def load_bank(module: str) -> Bank:
    """The validated question bank of a module. Raises CourseError naming the file and the fix."""
    path = bank_path(module)
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in BANKS_DIR.glob("*.json"))) or "none yet"
        raise CourseError(f"there is no quiz for {module!r} ({_label(path)} does not exist). Quizzes: {known}.")
    return load_bank_file(path)


def load_bank_file(path: Path) -> Bank:
    """Read and validate one question bank file."""
    label = _label(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CourseError(
            f"{label} is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}. "
            "Fix the JSON there (a missing comma or quote is the usual cause)."
        ) from None
    problems = bank_problems(data, expected_module=path.stem)
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        raise CourseError(f"{label} is not a valid question bank:\n{listed}\nFix these in the file and load it again.")
    return Bank(
        module=data["module"],
        title=data["title"],
        questions=tuple(
            Question(q["id"], q["prompt"], tuple(q["choices"]), q["answer"], q["explanation"])
            for q in data["questions"]
        ),
    )


def _label(path: Path) -> str:
    try:
        return path.resolve().relative_to(settings().root).as_posix()
    except ValueError:
        return str(path)


def bank_problems(data: Any, expected_module: str | None = None) -> list[str]:
    """Everything wrong with a parsed bank, one sentence each (empty when it is fine)."""
    if not isinstance(data, dict):
        return ["the file must hold one JSON object with module, title and questions"]
    problems = _field_problems(data, BANK_FIELDS, "the bank")
    module = data.get("module")
    if expected_module and isinstance(module, str) and module != expected_module:
        problems.append(f"module is {module!r} but the file is named {expected_module}.json; make them the same")
    if "title" in data and not _text(data["title"]):
        problems.append("title must be a non-empty string")
    questions = data.get("questions")
    if "questions" not in data:
        return problems
    if not isinstance(questions, list):
        return problems + ["questions must be a list"]
    if not MIN_QUESTIONS <= len(questions) <= MAX_QUESTIONS:
        problems.append(f"a quiz has {MIN_QUESTIONS} to {MAX_QUESTIONS} questions; this one has {len(questions)}")
    seen: set[str] = set()
    for number, question in enumerate(questions, start=1):
        name = f"question {number}"
        if isinstance(question, dict) and _text(question.get("id")):
            name += f" ({question['id']})"
            if question["id"] in seen:
                problems.append(f"{name}: the id {question['id']!r} is used twice; ids must be unique")
            seen.add(question["id"])
        problems += _question_problems(question, name)
    return problems


def _question_problems(question: Any, name: str) -> list[str]:
    if not isinstance(question, dict):
        return [f"{name}: must be an object with {', '.join(QUESTION_FIELDS)}"]
    problems = _field_problems(question, QUESTION_FIELDS, name)
    for key in ("id", "prompt", "explanation"):
        if key in question and not _text(question[key]):
            problems.append(f"{name}: {key} must be a non-empty string")
    choices = question.get("choices")
    if "choices" in question:
        if not isinstance(choices, list) or not all(_text(choice) for choice in choices):
            return problems + [f"{name}: choices must be a list of non-empty strings"]
        if not MIN_CHOICES <= len(choices) <= MAX_CHOICES:
            problems.append(f"{name}: give {MIN_CHOICES} to {MAX_CHOICES} choices, not {len(choices)}")
        if len({choice.strip().casefold() for choice in choices}) != len(choices):
            problems.append(f"{name}: two choices say the same thing; make every choice different")
    answer = question.get("answer")
    if "answer" in question:
        if not isinstance(answer, int) or isinstance(answer, bool):
            problems.append(f"{name}: answer must be one index (a whole number): "
                            "each question has exactly one correct choice")
        elif isinstance(choices, list) and not 0 <= answer < len(choices):
            problems.append(f"{name}: answer {answer} is out of range; "
                            f"choices are numbered 0 to {len(choices) - 1}")
    return problems


def _field_problems(obj: dict, fields: tuple[str, ...], name: str) -> list[str]:
    problems = [f"{name}: {key} is missing" for key in fields if key not in obj]
    problems += [f"{name}: unknown field {key!r} (allowed: {', '.join(fields)}); is it misspelt?"
                 for key in obj if key not in fields]
    return problems


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


# --------------------------------------------------------------------------- widgets


def _widgets():
    import ipywidgets  # imported on first use: keeps `import deliverylab.quiz` fast

    return ipywidgets


#: How choices are drawn. ipywidgets draws each choice's label one line high (a fixed height) with its radio
#: button floated left: a choice longer than the row wrapped onto the next choice's line and the float
#: put its button out of line, beside another choice or out of sight (lab 05's quiz, question 2, whose
#: right answer is its longest choice). Here each choice is a row as high as its text: the button at
#: the top left (ipywidgets puts it after the text inside the label, hence ``order: -1``), the text wrapped
#: beside it. Only the choices' labels are styled, not the widget's empty description label. The class is
#: set on the RadioButtons below.
CHOICES_CSS = """<style>
.xo-choices .widget-radio-box label { height: auto !important; line-height: 1.4 !important;
  white-space: normal !important; display: flex !important; align-items: flex-start; gap: 0.5em;
  margin: 0 0 0.4em 0; cursor: pointer; }
.xo-choices .widget-radio-box input[type="radio"] { float: none !important; order: -1; flex: 0 0 auto;
  height: 1.4em !important; margin: 0 !important; cursor: pointer; }
.xo-choices .widget-radio-box { margin-bottom: 0 !important; }
</style>"""


def _choices(options: list[str], value=None):
    """Radio buttons that show every choice with its button, however long its text (see CHOICES_CSS)."""
    w = _widgets()
    radio = w.RadioButtons(options=options, value=value, layout=w.Layout(width="auto", max_width="100%"))
    radio.add_class("xo-choices")
    return radio


def _choice_index(choices: tuple[str, ...] | list[str], choice: int | str, what: str) -> int:
    """The index of a choice given as an index or as its text."""
    if isinstance(choice, int) and not isinstance(choice, bool):
        if 0 <= choice < len(choices):
            return choice
    elif isinstance(choice, str):
        for index, text in enumerate(choices):
            if text.strip().casefold() == choice.strip().casefold():
                return index
    listed = "; ".join(f"{i}: {text}" for i, text in enumerate(choices))
    raise CourseError(f"{choice!r} is not one of the choices of {what}. Use an index or the text: {listed}.")


class _QuestionView:
    """One question on screen: prompt, radio buttons, Check button, feedback."""

    def __init__(self, number: int, question: Question, on_checked):
        w = _widgets()
        self.question = question
        self.correct: bool | None = None  # None until checked
        self.prompt = w.HTML(f"<b>{number}. {html.escape(question.prompt)}</b>")
        self.choices = _choices(list(question.choices))
        self.button = w.Button(description="Check", button_style="primary")
        self.feedback = w.HTML("")
        self.box = w.VBox([self.prompt, self.choices, self.button, self.feedback])
        self._on_checked = on_checked
        self.button.on_click(self._check)

    def _check(self, _button=None) -> None:
        if self.choices.index is None:
            self.feedback.value = "<i>Pick an answer first.</i>"
            return
        self.correct = self.choices.index == self.question.answer
        verdict = "Correct." if self.correct else "Not quite."
        self.feedback.value = f"<b>{verdict}</b> {html.escape(self.question.explanation)}"
        self._on_checked()


class Quiz:
    """A module's quiz as widgets. ``display()`` shows it; ``answer()`` is the twin."""

    def __init__(self, module: str, *, record: bool = True):
        self.bank = load_bank(module)
        self.record = record
        w = _widgets()
        self._views = {
            q.id: _QuestionView(number, q, self._on_checked) for number, q in enumerate(self.bank.questions, start=1)
        }
        self.title = w.HTML(f"{CHOICES_CSS}<h3>{html.escape(self.bank.title)}</h3>")
        self.score_line = w.HTML(self._score_text())
        self.widget = w.VBox([self.title, *(view.box for view in self._views.values()), self.score_line])

    @property
    def total(self) -> int:
        return len(self._views)

    @property
    def score(self) -> int:
        """Questions whose latest checked answer is correct."""
        return sum(1 for view in self._views.values() if view.correct)

    @property
    def finished(self) -> bool:
        """True once every question has been checked at least once."""
        return all(view.correct is not None for view in self._views.values())

    def answer(self, question_id: str, choice: int | str) -> None:
        """Pick a choice (index or text) and press Check, as a learner would."""
        question = self.bank.question(question_id)
        view = self._views[question.id]
        view.choices.index = _choice_index(question.choices, choice, f"question {question.id}")
        view.button.click()
        print(f"{question.id}: {'correct' if view.correct else 'not quite'}")

    def display(self) -> None:
        from IPython.display import display

        display(self.widget)

    def _ipython_display_(self) -> None:
        self.display()

    def _score_text(self) -> str:
        return f"score: {self.score} / {self.total}"

    def _on_checked(self) -> None:
        self.score_line.value = self._score_text()
        if self.finished and self.record:
            try:
                progress.record_quiz(self.bank.module, self.score, self.total)
            except Exception as error:  # noqa: BLE001 - progress must never break a quiz
                import warnings

                warnings.warn(f"could not save the quiz score ({error})", stacklevel=2)


#: Picks made so far in this kernel, by prompt: running a prediction's cell again (Shift+Enter
#: right after picking, as the lesson invites) shows the same question with the same pick.
_PICKS: dict[tuple[str, tuple[str, ...]], str] = {}


class Prediction:
    """Ask what will happen before an experiment; ``reveal()`` compares it afterwards."""

    NOTHING = "(nothing picked)"

    def __init__(self, prompt: str, choices: list[str] | tuple[str, ...]):
        if len(choices) < 2 or len({c.strip().casefold() for c in choices}) != len(choices):
            raise CourseError("a prediction needs at least two different choices.")
        w = _widgets()
        self.prompt = prompt
        self.choices = tuple(choices)
        self._key = (prompt, self.choices)
        self.question = w.HTML(f"{CHOICES_CSS}<b>Predict:</b> {html.escape(prompt)}")
        self.options = _choices(list(self.choices), _PICKS.get(self._key))
        self.options.observe(self._remember, names="value")
        self.note = w.HTML("<i>Pick one, then run the next cell (Shift+Enter). Your pick is kept.</i>")
        self.widget = w.VBox([self.question, self.options, self.note])

    def _remember(self, change) -> None:
        if change["new"] is not None:
            _PICKS[self._key] = change["new"]

    @property
    def picked(self) -> str | None:
        """The choice picked so far, or None."""
        return self.options.value

    def pick(self, choice: int | str) -> None:
        """Pick a choice (index or text), as a learner would."""
        self.options.index = _choice_index(self.choices, choice, "this prediction")

    def reveal(self, observed: int | str) -> None:
        """Print the prediction next to what was observed, and lock the choice."""
        if isinstance(observed, int) and not isinstance(observed, bool):
            observed = self.choices[_choice_index(self.choices, observed, "this prediction")]
        self.options.disabled = True
        print(self.reveal_line(observed))

    def reveal_line(self, observed: str) -> str:
        if self.picked is None:
            return f"you predicted: {self.NOTHING}   observed: {observed}"
        mark = "✓" if self.picked.strip().casefold() == observed.strip().casefold() else "✗"
        return f"you predicted: {self.picked}   observed: {observed}   {mark}"

    def display(self) -> None:
        from IPython.display import display

        display(self.widget)

    def _ipython_display_(self) -> None:
        self.display()
