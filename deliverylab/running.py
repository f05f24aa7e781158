"""What the course has running on this machine, and the memory each piece holds.

    python -m deliverylab stack status     # the broker's line, then this table

Every process of this copy of the course is found in /proc by a path of the project in its
command line (its venv, its .state folder), given a role from its command line, and counted with
its resident memory (RSS) and its proportional share of it (PSS: a page that several processes map,
such as the class archive every Spark JVM maps, counted once in all, in parts). Processes a notebook
kernel started (its Spark session's JVM, crash-lab drivers and their JVMs, module 01's consumers) are
listed under that kernel, named by its notebook when JupyterLab says which, so a learner sees which
open lesson holds what. When the machine has less memory left than one more open lesson takes
(``LESSON_GB``), :func:`memory_warning` says so and which kernels to shut down. Linux only; elsewhere
the table is empty.

``classify``, ``lines`` and ``memory_warning`` are pure functions of a process table, tested without a
machine.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .config import settings
from .crashlab.files import DriverHome
from .stack import idlesession, processes

#: Roles, from the command line, first match wins.
ROLES = (
    ("kafka.Kafka", "Kafka broker"),
    ("org.apache.spark.deploy.master.Master", "Spark master"),
    ("org.apache.spark.deploy.worker.Worker", "Spark worker"),
    ("CoarseGrainedExecutorBackend", "Spark executor"),
    ("deliverylab.crashlab.driver", "crash-lab driver"),
    ("deliverylab.modules.m01.process", "lesson 01 consumer"),
    ("ipykernel_launcher", "notebook kernel"),
    ("jupyter-lab", "JupyterLab"),
    ("jupyter lab", "JupyterLab"),
)


#: What one more open lesson holds (its kernel 0.1 GB, its Spark session's JVM 0.4-0.6 GB, a crash panel's driver
#: with its Spark JVM 0.6 GB; proportional shares measured with `stack status` on lessons 03 and 06):
#: below this much free memory, `stack status` and `make doctor` warn.
LESSON_GB = 1.3


@dataclass
class Proc:
    pid: int
    ppid: int
    argv: list[str]
    rss_kb: int
    pss_kb: int | None = None  # None where /proc/PID/smaps_rollup cannot be read

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    @property
    def is_jvm(self) -> bool:
        return bool(self.argv) and Path(self.argv[0]).name == "java"


def role(proc: Proc, table: dict[int, Proc]) -> str:
    """What a process is. A JVM without a role of its own is its parent's Spark session."""
    for needle, name in ROLES:
        if needle in proc.command:
            if name == "crash-lab driver":
                return f"crash-lab driver ({_driver_state(proc)})"
            return name
    parent = table.get(proc.ppid)
    if proc.is_jvm and parent is not None:
        return "its Spark JVM" if "crash-lab driver" in role(parent, table) else "its Spark session (JVM)"
    if proc.is_jvm and _drivers_folder_owner(proc) is not None:
        return "Spark JVM of a crash-lab driver that ended"
    return "course process"


def _drivers_folder_owner(proc: Proc) -> int | None:
    """The kernel whose drivers folder (.state/drivers/<kernel pid>/) the command line names."""
    for arg in proc.argv:
        _, found, rest = arg.partition("/drivers/")
        number = rest.split("/", 1)[0]
        if found and number.isdigit():
            return int(number)
    return None


def _driver_state(proc: Proc) -> str:
    """A driver runs a pipeline once it has an assignment; before that (or after a clean stop) it is a standby."""
    home = next((a for a in proc.argv if "/drivers/" in a), None)
    if home is None:
        return "pipeline"
    home = DriverHome(Path(home))
    try:
        spec = json.loads(home.assignment.read_text())
    except (OSError, ValueError):
        ran = home.idle_after()
        return f"standby, warm: ran {ran} pipeline(s)" if ran else "standby"
    return f"pipeline {spec.get('name', '?')}"


def owner(proc: Proc, table: dict[int, Proc]) -> int | None:
    """The notebook kernel a process belongs to (itself, its parent chain, or the parent its
    command line names: a driver whose kernel died is reparented), or None."""
    seen = set()
    while proc is not None and proc.pid not in seen:
        seen.add(proc.pid)
        if "ipykernel_launcher" in proc.command:
            return proc.pid
        _, named = processes.parent_pid_from(proc.argv)
        up = named or proc.ppid
        if up not in table and _drivers_folder_owner(proc) in table:  # its driver ended first
            up = _drivers_folder_owner(proc)
        proc = table.get(up)
    return None


def classify(procs: list[Proc]) -> list[dict]:
    """``[{pid, role, rss_mb, jvm, kernel}]`` for each process, kernels first by pid, then the rest."""
    table = {p.pid: p for p in procs}
    rows = [{"pid": p.pid, "role": role(p, table), "rss_mb": round(p.rss_kb / 1024), "jvm": p.is_jvm,
             "pss_mb": round((p.rss_kb if p.pss_kb is None else p.pss_kb) / 1024),
             "kernel": owner(p, table), "kernel_id": kernel_id(p),
             "next_to": p.ppid if p.is_jvm and p.ppid in table else p.pid}  # a JVM right under its parent
            for p in procs]
    return sorted(rows, key=lambda r: (r["kernel"] is None, r["kernel"] or 0, r["role"] != "notebook kernel",
                                       r["next_to"], r["jvm"], r["pid"]))


def kernel_id(proc: Proc) -> str | None:
    """A notebook kernel's id, from its connection file (``-f .../kernel-<id>.json``), else None."""
    for arg in proc.argv:
        name = Path(arg).name
        if name.startswith("kernel-") and name.endswith(".json"):
            return name[len("kernel-"):-len(".json")]
    return None


def lines(rows: list[dict], notebooks: dict[str, str] | None = None) -> list[str]:
    """The table as text: one line a process (resident MB, and its share when pages are shared), each
    kernel's processes under it (the kernel named by its notebook, from ``notebooks``: kernel id to
    path), totals last."""
    if not rows:
        return ["course processes: none running"]
    out = []
    for row in rows:
        indent = "    " if row["kernel"] is not None and row["role"] != "notebook kernel" else ""
        label = f"{indent}{row['role']}"
        if row["role"] == "notebook kernel" and (notebooks or {}).get(row.get("kernel_id")):
            label += f" {Path(notebooks[row['kernel_id']]).name}"
        share = f" ({row['pss_mb']} MB its share)" if row.get("pss_mb", row["rss_mb"]) != row["rss_mb"] else ""
        out.append(f"  {label:<44} pid {row['pid']:<8} {row['rss_mb']:>6} MB{share}")
    jvms = sum(r["jvm"] for r in rows)
    total = sum(r["rss_mb"] for r in rows)
    held = sum(r.get("pss_mb", r["rss_mb"]) for r in rows)
    kernels = len({r["kernel"] for r in rows if r["kernel"] is not None})
    out.append(f"course processes: {len(rows)} ({jvms} JVMs), {kernels} notebook kernel(s), "
               f"{total / 1024:.1f} GB resident" + (f", {held / 1024:.1f} GB its own share" if held != total else ""))
    return out


def kernel_totals(rows: list[dict], notebooks: dict[str, str] | None = None) -> list[tuple[str, float]]:
    """``[(kernel's name, GB it holds with everything it started)]``, biggest first."""
    totals: dict[int, float] = {}
    names: dict[int, str] = {}
    for row in rows:
        if row["kernel"] is None:
            continue
        totals[row["kernel"]] = totals.get(row["kernel"], 0) + row.get("pss_mb", row["rss_mb"]) / 1024
        if row["role"] == "notebook kernel":
            path = (notebooks or {}).get(row.get("kernel_id"))
            names[row["kernel"]] = Path(path).name if path else f"kernel pid {row['pid']}"
    return sorted(((names.get(k, f"kernel pid {k}"), gb) for k, gb in totals.items()), key=lambda t: -t[1])


def memory_warning(rows: list[dict], available_gb: float | None, notebooks: dict[str, str] | None = None) -> list[str]:
    """Lines that say the open kernels hold more than the machine can spare: less than ``LESSON_GB`` left while
    kernels are open. Empty when there is room (or nothing to shut down)."""
    kernels = kernel_totals(rows, notebooks)
    if available_gb is None or available_gb >= LESSON_GB or not kernels:
        return []
    held, idle = sum(gb for _, gb in kernels), idlesession.idle_minutes()
    listed = ", ".join(f"{name} {gb:.1f} GB" for name, gb in kernels)
    return [f"warning: {len(kernels)} open notebook kernel(s) hold {held:.1f} GB and this machine has {available_gb:.1f} GB "
            f"left, less than one more lesson takes (about {LESSON_GB:.1f} GB): {listed}",
            "  shut down the kernels of lessons you have left: in JupyterLab, Kernel > Shut Down Kernel in their "
            "tab, or Shut Down All in the Running Terminals and Kernels panel (their outputs stay in the notebooks); "
            + (f"a lesson left for {idle:g} minutes gives back its Spark session and pipelines by itself" if idle > 0
               else "DELIVERYLAB_IDLE_RELEASE_MINUTES=0 keeps every lesson's session and pipelines")]


def course_procs(within: list[str] | None = None) -> list[Proc]:
    """This copy's processes, read from /proc: those whose command line names the project's root."""
    marks = [m.encode() for m in (within or [str(settings().root) + "/"])]
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\x00")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if not any(m in a for a in argv for m in marks):
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        rss = int(fields.get("VmRSS", "0 kB").split()[0])
        found.append(Proc(int(entry.name), int(fields.get("PPid", "0")),
                          [a.decode(errors="replace") for a in argv if a], rss))
    ours = [p for p in found if _is_a_course_process(p)]
    for proc in ours:
        proc.pss_kb = _pss_kb(proc.pid)
    return ours


def _pss_kb(pid: int) -> int | None:
    """A process's proportional set size (Linux 4.14 and later), or None."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def available_gb() -> float | None:
    """What the machine can still give (MemAvailable), or None where /proc/meminfo is missing."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        return None
    return None


def _is_a_course_process(proc: Proc) -> bool:
    """Not a shell or a tool that only names the project (make, pytest, this command itself)."""
    return any(needle in proc.command for needle, _ in ROLES) or proc.is_jvm


def report() -> list[str]:
    """`stack status`'s table, and the memory warning when there is one."""
    from .stack import jupyter

    rows = classify(course_procs())
    notebooks = jupyter.kernel_notebooks() if any(r["role"] == "notebook kernel" for r in rows) else {}
    return lines(rows, notebooks) + memory_warning(rows, available_gb(), notebooks)
