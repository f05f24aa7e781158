"""The package's shape: every file mapped, no import cycles, no upward imports, small files.

A newcomer should find where anything lives from the tree and the map in
``deliverylab/__init__.py``; these tests keep that true as modules are added.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "deliverylab"
MAX_FILE_LINES = 500
MAX_CLASS_LINES = 300


def python_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every deliverylab module a file imports, at the top or inside a function."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("deliverylab"):
                found.add(target)
                found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("deliverylab"))
    known = {module_name(p) for p in python_files()}
    return {t for t in found if t in known and t != name}


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in python_files()}


def test_no_import_cycles():
    edges = graph()
    # a package's __init__ re-exporting its own modules is not a cycle worth reporting
    edges = {m: {t for t in ts if not (m.startswith(t + ".") or t.startswith(m + "."))} for m, ts in edges.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


#: The layers, bottom up. A module may import its own layer and the ones below, never above.
LAYERS = [
    ("config",),
    ("course", "stack"),
    # workshop/ (class board, reset button, site) sits with the lesson-level code it serves: progress,
    # checks, ledger and lesson call into it, and it may use them and the stack
    ("checkpoint", "deltalog", "orders", "rows", "sinkrows", "ledger", "charts", "inspector", "streams", "sparkerrors", "statusline", "checks", "todos", "labs",
     "progress", "quiz", "lesson", "workshop"),
    ("crashlab",),
    ("modules",),
    ("__init__", "__main__", "bench", "lesson_bench", "doctor", "running", "cluster_smoke", "cluster_bench",
     "testrun"),
]


def layer(module: str) -> int:
    parts = module.split(".")
    key = parts[1] if len(parts) > 1 else "__init__"
    for level, names in enumerate(LAYERS):
        if key in names:
            return level
    raise AssertionError(f"{module} is in no layer of tests/test_layout.py: add it to LAYERS")


def test_nothing_imports_upward():
    upward = [f"{m} imports {t}" for m, ts in graph().items() for t in ts
              if t != "deliverylab" and layer(t) > layer(m)]
    assert not upward, upward


def test_the_stack_imports_no_course_code():
    stack = {m: ts for m, ts in graph().items() if m.startswith("deliverylab.stack")}
    outside = [f"{m} imports {t}" for m, ts in stack.items() for t in ts
               if not (t.startswith("deliverylab.stack") or t == "deliverylab.config")]
    assert not outside, outside


def test_modules_do_not_import_each_other():
    crossing = [f"{m} imports {t}" for m, ts in graph().items() for t in ts
                if m.startswith("deliverylab.modules.m") and t.startswith("deliverylab.modules.m")
                and m.split(".")[2] != t.split(".")[2]]
    assert not crossing, crossing


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_files_and_classes_stay_small(path):
    lines = path.read_text().splitlines()
    assert len(lines) <= MAX_FILE_LINES, f"{path.name} has {len(lines)} lines; split it by concern"
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.ClassDef):
            size = node.end_lineno - node.lineno + 1
            assert size <= MAX_CLASS_LINES, f"class {node.name} in {path.name} has {size} lines"


def test_the_package_map_names_every_folder_and_file():
    doc = (PACKAGE / "__init__.py").read_text().split('"""')[1]
    folders = sorted({p.parent.relative_to(PACKAGE).as_posix() for p in python_files()} - {"."})
    missing = [f for f in folders if f"{f}/" not in doc]
    assert not missing, f"deliverylab/__init__.py does not map these folders: {missing}"
    for folder in [PACKAGE] + [PACKAGE / f for f in folders]:
        mapped = (folder / "__init__.py").read_text().split('"""')[1] if (folder / "__init__.py").exists() else ""
        if folder != PACKAGE:
            mapped += doc
        stems = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
        unnamed = [s for s in stems if s not in mapped]
        assert not unnamed, f"{folder.relative_to(PACKAGE.parent)}: no map names {unnamed}"
