"""The course's two Jupyter kernels: the main one (the venv's own ``python3``) and module 10's.

Module 10 runs on Spark 4.1 with Iceberg (requirements-iceberg.txt says why): a second venv,
``.venv-iceberg`` next to ``.venv``, with pyspark 4.1.3, the course package (editable) and a jar set of
its own (jars.py, ``spark41``). ``make setup`` builds it, then makes it known to the main venv's
JupyterLab as the kernel ``deliverylab-iceberg``, shown as "Python 3 (Spark 4.1 + Iceberg)": a
kernelspec in ``.venv/share/jupyter/kernels/`` whose command is the second venv's Python. A notebook
names its kernel in its metadata (``kernelspec.name``); JupyterLab, nbval and ``deliverylab notebooks
execute`` (runner.py) all start the kernel it names.

The kernel gets what the main ``python3`` kernel gets (the server's environment), plus
``PYSPARK_PYTHON`` set to its own Python, so anything Spark starts in Python is of the same venv
however the server was started. Crash-lab drivers a module 10 notebook starts run with the same
Python (processes.spawn runs ``sys.executable``) and so get the same Spark 4.1 session (session.py).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..config import settings

#: The main kernel: the one every module but module 10 names.
MAIN_KERNEL = "python3"
#: Module 10's kernel (course.ICEBERG_KERNEL names the same).
ICEBERG_KERNEL = "deliverylab-iceberg"
ICEBERG_DISPLAY_NAME = "Python 3 (Spark 4.1 + Iceberg)"
#: Its venv, under the project's root, and the pyspark it holds (requirements-iceberg.txt).
ICEBERG_VENV = ".venv-iceberg"
ICEBERG_REQUIREMENTS = "requirements-iceberg.txt"


def iceberg_python(root: Path | None = None) -> Path:
    """The Iceberg venv's Python (it may not exist)."""
    return (root or settings().root) / ICEBERG_VENV / "bin" / "python"


def pinned_pyspark(root: Path | None = None) -> str:
    """The pyspark version requirements-iceberg.txt pins (e.g. "4.1.3")."""
    for line in ((root or settings().root) / ICEBERG_REQUIREMENTS).read_text().splitlines():
        if line.startswith("pyspark=="):
            return line.split("==", 1)[1].strip()
    raise ValueError(f"{ICEBERG_REQUIREMENTS} pins no pyspark")


def kernelspec(python: str | Path) -> dict:
    """The kernel.json of module 10's kernel, run by ``python`` (an absolute path)."""
    python = str(python)
    return {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": ICEBERG_DISPLAY_NAME,
        "language": "python",
        "env": {"PYSPARK_PYTHON": python},
        "metadata": {"debugger": True},
        "kernel_protocol_version": "5.5",
    }


def main_prefix() -> Path:
    """The main venv, where JupyterLab runs: this Python's, unless this is the Iceberg venv's Python."""
    here = Path(sys.prefix)
    iceberg = iceberg_python().parent.parent
    return here if here.resolve() != iceberg.resolve() else settings().root / ".venv"


def kernelspec_dir(prefix: str | Path | None = None) -> Path:
    """Where the main venv's Jupyter looks for it: ``<prefix>/share/jupyter/kernels/deliverylab-iceberg``."""
    return Path(prefix or main_prefix()) / "share" / "jupyter" / "kernels" / ICEBERG_KERNEL


def installed_kernelspec(prefix: str | Path | None = None) -> dict | None:
    """The kernel.json installed under ``prefix`` (default: the main venv), or None."""
    try:
        return json.loads((kernelspec_dir(prefix) / "kernel.json").read_text())
    except (OSError, ValueError):
        return None


def install_kernelspec(python: str | Path, prefix: str | Path | None = None, log=print) -> Path | None:
    """Write module 10's kernelspec into ``prefix`` (default: the main venv) for ``python``; nothing is
    written when it is there already. None (and a line saying why) when ``python`` does not exist."""
    python = Path(python).absolute()
    if not python.exists():
        log(f"module 10's kernel is not set up: {python} does not exist (`make setup` builds it)")
        return None
    folder = kernelspec_dir(prefix)
    spec = kernelspec(python)
    if installed_kernelspec(prefix) != spec:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "kernel.json").write_text(json.dumps(spec, indent=1) + "\n")
        log(f'module 10\'s kernel "{ICEBERG_DISPLAY_NAME}" ({ICEBERG_KERNEL}) is known to JupyterLab now')
    return folder


def notebook_kernel(nb) -> str:
    """The kernel a notebook names in its metadata (the main kernel when it names none)."""
    return (nb.get("metadata", {}).get("kernelspec") or {}).get("name") or MAIN_KERNEL


def venv_pyspark(python: str | Path, timeout_s: float = 60) -> str | None:
    """The pyspark version installed in the venv of ``python`` (read from its metadata, not imported), or None."""
    code = "from importlib.metadata import version; print(version('pyspark'))"
    try:
        done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
