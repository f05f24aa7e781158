"""The course's one list of modules, and the names derived from it."""
import pytest

from deliverylab import course
from deliverylab.config import CourseError, settings


def test_modules_are_numbered_in_order():
    numbers = [m[:2] for m in course.MODULES]
    assert numbers == sorted(numbers) and numbers[0] == "00" and len(set(numbers)) == len(numbers)


@pytest.mark.parametrize("name, module", [
    ("01-three-guarantees-lab.ipynb", "01-three-guarantees"),
    ("02-anatomy", "02-anatomy"),
    ("test-anything", "test-anything"),
])
def test_module_id(name, module):
    assert course.module_id(name) == module


def test_lesson_names_and_the_closest_suggestion():
    assert course.check_lesson_name("02-anatomy-lab") == "02-anatomy-lab"
    with pytest.raises(CourseError, match="Did you mean '02-anatomy'"):
        course.check_lesson_name("02-anatomyy")
    with pytest.raises(CourseError, match="not int"):
        course.check_lesson_name(2)


def test_did_you_mean_is_empty_when_nothing_is_close():
    assert course.did_you_mean("delta_snik", ["delta_sink", "kafka_sink"]) == " Did you mean 'delta_sink'?"
    assert course.did_you_mean("zzz", ["delta_sink"]) == ""


def test_labs_and_quizzes_are_found_per_module():
    assert course.has_lab(settings().root, "01-three-guarantees")
    assert not course.has_lab(settings().root, "00-setup-and-tour")
    assert course.has_quiz("01-three-guarantees")
    assert course.quiz_bank_path("01-three-guarantees-lab").name == "01-three-guarantees.json"
    assert [p.stem for p in course.lesson_notebooks(settings().root)][:2] == ["00-setup-and-tour", "01-three-guarantees"]


def test_module_10_runs_on_the_iceberg_kernel_and_the_rest_on_the_main_one():
    assert course.MODULES["10-iceberg"] == "Iceberg under the same crashes"
    assert course.ICEBERG_MODULES <= set(course.MODULES)
    assert course.kernel_name("labs/10-iceberg-lab.ipynb") == course.kernel_name("10-iceberg") == "deliverylab-iceberg"
    assert course.kernel_name("notebooks/09-beyond-the-driver.ipynb") == "python3"


def test_every_notebook_names_the_kernel_its_module_runs_on():
    """JupyterLab, nbval and `deliverylab notebooks execute` start the kernel a notebook names in its metadata."""
    import nbformat

    root = settings().root
    wrong = []
    for path in sorted(p for folder in ("notebooks", "labs", "solutions") for p in (root / folder).glob("*.ipynb")):
        spec = nbformat.read(str(path), as_version=4).metadata.get("kernelspec", {})
        wanted = course.kernel_name(path.name)
        display = course.ICEBERG_KERNEL_DISPLAY_NAME if wanted == course.ICEBERG_KERNEL else spec.get("display_name")
        if (spec.get("name"), spec.get("display_name")) != (wanted, display):
            wrong.append(f"{path.relative_to(root)} names {spec.get('name')!r}, not {wanted!r}")
    assert not wrong, wrong


@pytest.mark.parametrize("name, iceberg_kernel", [("10-iceberg", False), ("10-iceberg-lab", False),
                                                   ("05-exactly-once-sinks", True)])
def test_a_lesson_opened_on_the_other_kernel_stops_in_one_line_naming_its_own(monkeypatch, name, iceberg_kernel):
    import deliverylab
    from deliverylab.stack import session

    monkeypatch.setattr(session, "with_iceberg", lambda: iceberg_kernel)
    with pytest.raises(deliverylab.CourseError) as stopped:
        deliverylab.setup(name, quiet=True)
    line = str(stopped.value)
    wanted = "Python 3 (ipykernel)" if iceberg_kernel else "Python 3 (Spark 4.1 + Iceberg)"
    assert "\n" not in line and f'"{wanted}"' in line and "Kernel > Change Kernel" in line


def test_a_lesson_on_its_own_kernel_and_a_test_lesson_pass_the_kernel_check(monkeypatch):
    import deliverylab
    from deliverylab.stack import session

    monkeypatch.setattr(session, "with_iceberg", lambda: False)
    deliverylab._require_its_kernel("05-exactly-once-sinks")
    deliverylab._require_its_kernel("test-anything")
    monkeypatch.setattr(session, "with_iceberg", lambda: True)
    deliverylab._require_its_kernel("10-iceberg")
