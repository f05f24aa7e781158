"""The course itself: its modules in order, how notebooks are named, where quizzes live.

One place for what the lessons, labs, quizzes and the progress table must agree on.
Nothing here starts a broker or imports Spark, so any part of the package can use it.

A notebook is named after its module: ``notebooks/02-anatomy.ipynb`` is the lesson,
``solutions/02-anatomy-lab.ipynb`` and ``labs/02-anatomy-lab.ipynb`` its lab. A lesson
name given to ``deliverylab.setup`` is a module, a module's lab (``<module>-lab``), or,
for the test suite, anything starting with ``test-``.
"""
from __future__ import annotations

import difflib
from pathlib import Path

from .config import CourseError

#: The course's modules in teaching order, with their titles.
MODULES = {
    "00-setup-and-tour": "Setup and tour",
    "01-three-guarantees": "Three guarantees with a plain consumer",
    "02-anatomy": "Anatomy of a micro-batch",
    "03-at-most-once": "At-most-once",
    "04-at-least-once": "At-least-once and deduplication",
    "05-exactly-once-sinks": "Exactly-once sinks",
    "06-kafka-end-to-end": "Kafka end to end",
    "07-what-breaks": "What breaks exactly-once",
    "08-capstone": "Capstone: the guarantee matrix, measured",
    "09-beyond-the-driver": "Failures beyond the driver (on a cluster)",
    "10-iceberg": "Iceberg under the same crashes",
}

#: Modules whose notebooks run on the local Spark and Kafka clusters (they start both, and need
#: about 6 GB): `make test-cluster` runs them; `make test` runs only their unit tests.
CLUSTER_MODULES = {"09-beyond-the-driver"}

#: Modules whose notebooks run on the second kernel, Spark 4.1 with Iceberg (stack/kernels.py; the venv
#: .venv-iceberg): no Iceberg runtime for the course's Spark 4.2 is published. Their notebooks name this kernel
#: in their metadata; every other notebook names the main kernel, "python3".
ICEBERG_MODULES = {"10-iceberg"}
ICEBERG_KERNEL = "deliverylab-iceberg"
ICEBERG_KERNEL_DISPLAY_NAME = "Python 3 (Spark 4.1 + Iceberg)"
MAIN_KERNEL = "python3"

#: Lessons and labs that need no Spark driver process of their own (the rest crash some).
WITHOUT_CRASH_LAB = {"00-setup-and-tour", "01-three-guarantees-lab", "09-beyond-the-driver-lab", "10-iceberg-lab"}

LAB_SUFFIX = "-lab"
TEST_PREFIX = "test-"
QUIZ_BANKS = Path(__file__).resolve().parent / "quizzes"


def module_id(name: str) -> str:
    """The module a notebook, lab or quiz name belongs to.

    ``"01-three-guarantees-lab"`` and ``"01-three-guarantees-lab.ipynb"`` both give
    ``"01-three-guarantees"``. A name that matches no module is returned unchanged.
    """
    stem = name.removesuffix(".ipynb")
    for module in MODULES:
        if stem == module or stem.startswith(module + "-"):
            return module
    return stem


def title(name: str) -> str:
    """The title of the module a lesson name belongs to ("test lesson" for test names)."""
    return MODULES.get(module_id(name), "test lesson")


def check_lesson_name(name: str) -> str:
    """``name`` if ``deliverylab.setup`` accepts it, else a CourseError with the closest match."""
    if not isinstance(name, str):
        raise CourseError(f"A lesson name is a string such as '02-anatomy', not {type(name).__name__}.")
    if name in MODULES or name.startswith(TEST_PREFIX):
        return name
    if name.endswith(LAB_SUFFIX) and name.removesuffix(LAB_SUFFIX) in MODULES:
        return name
    hint = did_you_mean(name, list(MODULES) + [m + LAB_SUFFIX for m in MODULES])
    raise CourseError(f"Unknown lesson '{name}'.{hint} Known lessons: {', '.join(MODULES)} (and each with '-lab').")


def uses_crash_lab(name: str) -> bool:
    """Does this lesson or lab start crash-lab pipelines (so a standby driver is worth booting)?"""
    return name not in WITHOUT_CRASH_LAB and not name.startswith(TEST_PREFIX)


def needs_clusters(name: str) -> bool:
    """Does this notebook (a lesson or lab name, or a path) belong to a module that runs on the clusters?"""
    return module_id(Path(str(name)).name) in CLUSTER_MODULES


def kernel_name(name: str) -> str:
    """The Jupyter kernel a notebook (a lesson or lab name, or a path) of this course runs on."""
    return ICEBERG_KERNEL if module_id(Path(str(name)).name) in ICEBERG_MODULES else MAIN_KERNEL


def quiz_bank_path(name: str) -> Path:
    """Where the quiz of the module ``name`` belongs to lives (the file may not exist)."""
    return QUIZ_BANKS / f"{module_id(name)}.json"


def has_lab(root: Path, module: str) -> bool:
    """Whether the module has a lab (a solution or a generated lab) in the project at ``root``."""
    return any((root / folder / f"{module}{LAB_SUFFIX}.ipynb").exists() for folder in ("labs", "solutions"))


def has_quiz(module: str) -> bool:
    return quiz_bank_path(module).exists()


def lesson_notebooks(root: Path) -> list[Path]:
    """The lesson notebooks that exist, in module order."""
    return [root / "notebooks" / f"{m}.ipynb" for m in MODULES if (root / "notebooks" / f"{m}.ipynb").exists()]


def did_you_mean(word: str, choices) -> str:
    """The hint " Did you mean 'x'?" for the closest of ``choices``, or "" (one wording everywhere)."""
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""
