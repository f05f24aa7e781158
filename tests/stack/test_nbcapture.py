"""The nbval plugin: a module's notebooks share one xdist scope, latest module first."""
from pathlib import Path
from types import SimpleNamespace

from deliverylab.stack import nbcapture


class Item(SimpleNamespace):
    def add_marker(self, marker):
        self.markers.append(marker)


def cell(path: str, number: int) -> Item:
    return Item(parent=SimpleNamespace(path=Path(path)), cell_num=number, markers=[])


def test_a_lesson_its_lab_and_its_solution_share_a_group():
    groups = {nbcapture.module_group(Path(p)) for p in
              ("notebooks/05-exactly-once-sinks.ipynb", "labs/05-exactly-once-sinks-lab.ipynb",
               "solutions/05-exactly-once-sinks-lab.ipynb")}
    assert groups == {"module-05"}
    assert nbcapture.module_group(Path("notebooks/06-kafka-end-to-end.ipynb")) == "module-06"


def test_items_get_their_group_and_the_latest_module_runs_first_with_cells_in_order():
    items = [cell("notebooks/00-setup-and-tour.ipynb", 0), cell("notebooks/00-setup-and-tour.ipynb", 1),
             cell("notebooks/02-anatomy.ipynb", 0), cell("notebooks/02-anatomy.ipynb", 1),
             cell("labs/02-anatomy-lab.ipynb", 0), cell("solutions/02-anatomy-lab.ipynb", 0)]  # as collected
    nbcapture.pytest_collection_modifyitems(None, None, items)
    order = [(str(i.parent.path), i.cell_num) for i in items]
    assert order == [("notebooks/02-anatomy.ipynb", 0), ("notebooks/02-anatomy.ipynb", 1),
                     ("labs/02-anatomy-lab.ipynb", 0), ("solutions/02-anatomy-lab.ipynb", 0),
                     ("notebooks/00-setup-and-tour.ipynb", 0), ("notebooks/00-setup-and-tour.ipynb", 1)]


def test_the_scheduler_keeps_a_module_on_one_worker():
    scopes = {nbcapture.scope_of(n) for n in ("notebooks/02-anatomy.ipynb::Cell 3", "labs/02-anatomy-lab.ipynb::Cell 0",
                                             "solutions/02-anatomy-lab.ipynb::Cell 9")}
    assert scopes == {"module-02"}
    assert nbcapture.scope_of("tests/test_ledger.py::test_x") == "tests/test_ledger.py"


def test_no_scheduler_of_ours_for_other_dist_modes():
    assert nbcapture.pytest_xdist_make_scheduler(SimpleNamespace(getoption=lambda name: "load"), log=None) is None
