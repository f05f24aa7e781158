"""A real Jupyter kernel for a test: run cells in it as a notebook would, keep each cell's reply and error outputs."""
from __future__ import annotations

import queue

import pytest


def run_cells(cells: list[str], env: dict[str, str] | None = None, timeout_s: float = 60) -> list[tuple[dict, list[dict]]]:
    """``(reply, errors)`` per cell: the kernel's execute reply and the content of each ``error`` message it sent."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", **({"env": env} if env else {}))
    ran = []
    try:
        for cell in cells:
            errors: list[dict] = []
            reply = client.execute_interactive(cell, timeout=timeout_s, output_hook=lambda m, errors=errors: (
                errors.append(m["content"]) if m["msg_type"] == "error" else None))
            ran.append((reply, errors))
    except queue.Empty:
        pytest.fail("the kernel went quiet")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return ran
