"""The README is true: its links lead somewhere, and the commands it shows exist."""
import re
from pathlib import Path

from deliverylab.__main__ import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z-]*):", text, flags=re.M))


def cli_commands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return set(sub.choices)


def test_every_relative_link_leads_to_a_file():
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README)
    assert links, "the README links the lessons and labs"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_module_of_the_course_is_in_the_table_with_its_lesson():
    from deliverylab.course import MODULES

    for module in MODULES:
        assert f"(notebooks/{module}.ipynb)" in README, f"README.md's module table has no link to {module}"


def test_every_make_command_shown_is_a_target():
    shown = set(re.findall(r"\bmake ([a-z][a-z-]*)", README))
    assert {"lab", "test"} <= shown
    unknown = shown - makefile_targets()
    assert not unknown, f"README.md shows make targets the Makefile does not have: {sorted(unknown)}"


def test_every_deliverylab_command_shown_exists():
    shown = set(re.findall(r"python -m deliverylab ([a-z][a-z-]*)", README))
    assert shown, "the README shows the command line"
    unknown = shown - cli_commands()
    assert not unknown, f"README.md shows `python -m deliverylab` commands that do not exist: {sorted(unknown)}"
