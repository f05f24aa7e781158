"""Executing a course notebook and keeping only what the tests compare.

``python -m deliverylab notebooks execute notebooks/00-setup-and-tour.ipynb`` runs the
notebook in a fresh kernel, then keeps the outputs of checked cells only (tag
``nbval-check-output`` or a ``# NBVAL_CHECK_OUTPUT`` line) and clears every other output,
so stored notebooks stay small and no output is ever typed by hand. The kernel is the one the notebook
names in its metadata, as in JupyterLab and under nbval: module 10's run on Spark 4.1 with Iceberg
(kernels.py), every other on the main kernel.
"""
from __future__ import annotations

from pathlib import Path

from ..config import CourseError
from .kernels import notebook_kernel

CHECK_TAG = "nbval-check-output"
#: The metadata key that marks a status line's output (deliverylab/statusline.py): it says what a cell
#: waited for while it ran and means nothing afterwards, so no stored, executed or rendered copy keeps it.
STATUS_LINE = "deliverylab_status_line"
CHECK_MARK = "# NBVAL_CHECK_OUTPUT"
KEEP_MIME = ("text/plain",)


def is_checked(cell) -> bool:
    return CHECK_TAG in cell.get("metadata", {}).get("tags", []) or CHECK_MARK in cell.get("source", "")


def _small(output):
    """Drop rich data (images, HTML, widget views) from an output; keep its plain text."""
    if output.get("output_type") in ("execute_result", "display_data"):
        output["data"] = {k: v for k, v in output.get("data", {}).items() if k in KEEP_MIME}
        output["metadata"] = {}
    if output.get("output_type") == "error":
        output["traceback"] = []
    return output


def without_status_lines(outputs: list) -> list:
    """The outputs, less the status lines a long cell showed while it ran."""
    return [o for o in outputs if not o.get("metadata", {}).get(STATUS_LINE)]


def strip_unchecked(nb):
    """Clear unchecked cells; keep checked outputs small. Checked cells keep an execution
    count (nbval refuses stored outputs of a cell that never ran)."""
    nb.metadata.pop("widgets", None)  # saved widget state is bulky and differs run to run
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # run timestamps: noise in every diff
    for number, cell in enumerate((c for c in nb.cells if c.cell_type == "code"), 1):
        if is_checked(cell):
            cell.outputs = [_small(o) for o in without_status_lines(cell.outputs)
                            if o.get("output_type") != "display_data" or "text/plain" in o.get("data", {})]
            cell.execution_count = number if cell.outputs else None
            for o in cell.outputs:
                if "execution_count" in o:
                    o["execution_count"] = number
        else:
            cell.outputs = []
            cell.execution_count = None
    return nb


def run(path: str, timeout_s: int = 900, after=None):
    """Run the notebook at ``path`` in a fresh kernel (in its own folder); return it with every output.

    The file itself is not changed (``make site`` renders what this returns). ``after(km)``, if given,
    is called once the last cell has run, while the kernel still runs (lesson_bench counts its processes)."""
    import tempfile

    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="deliverylab-kernel-") as sockets:
        # the kernel talks over Unix sockets in a folder of this user's, not TCP ports anyone on the
        # machine can reach (ipykernel warns about unencrypted TCP for every kernel started that way)
        km = KernelManager(kernel_name=notebook_kernel(nb), transport="ipc", ip=str(Path(sockets) / "kernel"))
        client = NotebookClient(nb, km=km, timeout=timeout_s, allow_errors=True,
                                resources={"metadata": {"path": str(Path(path).parent)}})
        try:
            client.execute()
            if after is not None:
                after(km)
        finally:
            if km.has_kernel:  # a kernel manager handed in is not shut down by nbclient
                km.shutdown_kernel()
    return nb


def unexpected_errors(nb) -> list[str]:
    """``cell N: Error: message`` for each code cell that raised although it is not tagged
    ``raises-exception`` (a lab's TODO stubs are; nothing else may raise)."""
    found = []
    for number, cell in enumerate((c for c in nb.cells if c.cell_type == "code"), 1):
        if "raises-exception" in cell.get("metadata", {}).get("tags", []):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                found.append(f"cell {number}: {output.get('ename')}: {str(output.get('evalue', ''))[:300]}")
    return found


def execute(path: str, timeout_s: int = 900) -> None:
    """Run the notebook and store its checked outputs; a cell that raised unexpectedly stores nothing."""
    import nbformat

    nb = run(path, timeout_s)
    errors = unexpected_errors(nb)
    if errors:
        raise CourseError(f"{path} was not saved: " + "; ".join(errors) + ". Fix the cell (or the machine's load: "
                          "a crash point that never fired usually means a batch came too late) and run it again.")
    nbformat.write(strip_unchecked(nb), path)


def main(argv: list[str]) -> int:
    usage = "usage: python -m deliverylab notebooks execute|strip NOTEBOOK.ipynb ..."
    if len(argv) < 2 or argv[0] not in ("execute", "strip") or any(a in ("-h", "--help") for a in argv):
        print(usage)
        return 0 if any(a in ("-h", "--help") for a in argv) else 2
    missing = [p for p in argv[1:] if not Path(p).is_file()]
    if missing:
        print(f"no such notebook: {', '.join(missing)}\n{usage}")
        return 2
    import nbformat

    for path in argv[1:]:
        if argv[0] == "execute":
            execute(path)
        else:
            nbformat.write(strip_unchecked(nbformat.read(path, as_version=4)), path)
        print(("executed " if argv[0] == "execute" else "stripped ") + path)
    return 0
