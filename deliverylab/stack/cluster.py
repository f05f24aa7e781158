"""A local Spark standalone cluster: one master and two workers, on 127.0.0.1 only.

``python -m deliverylab cluster up|down|status`` drives it; ``cluster kill-worker N`` and
``cluster restart-worker N`` kill and bring back one worker (and the executors it runs), the
failure module 09 studies. The daemons are the Spark that the pyspark wheel ships, started
through its own ``bin/spark-class``::

    spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1 --port 7077 --webui-port 8180
    spark-class org.apache.spark.deploy.worker.Worker spark://127.0.0.1:7077 --host 127.0.0.1 ...

Everything lives in ``.state/cluster/``: the daemons' logs and pid files, the workers' work
folders (each executor's stdout and stderr, under ``work/worker-N/app-.../``), a properties
file. Readiness is probed, never slept: ``up`` returns once the master's JSON page
(http://127.0.0.1:8180/json) lists both workers ALIVE.

The course moves onto the cluster with one setting, read by config.py and used by every
SparkSession the course builds (the kernel's and every crash-lab driver's):

    export DELIVERYLAB_SPARK_MASTER=spark://127.0.0.1:7077

Sizes (two cores, several learners' worth of Spark on one machine): each worker offers 1 GB
and two task slots; every application (a kernel, a crash-lab driver, its standby) asks for
one executor of 512 MB with one core (:func:`app_conf`), so four applications can hold an
executor at once. A worker with one slot would let only two: the third (a crash lab's standby)
would wait for resources forever. Checkpoints and tables stay on the local disk, which every
executor here sees; on a real cluster they must be on storage every executor reaches (HDFS,
object storage).

Ports (change with environment variables when they are taken): the master's RPC port
DELIVERYLAB_CLUSTER_PORT (7077) and its web UI DELIVERYLAB_CLUSTER_UI_PORT (8180); the
workers' web UIs take the next ports (8181, 8182).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..config import HOST, CourseError, Settings, _port, settings
from . import locks, processes
from .java import QUICK_JIT

WORKERS = 2
WORKER_CORES = 2
WORKER_MEMORY = "1g"
DAEMON_MEMORY = "256m"
EXECUTOR_MEMORY = "512m"
#: what starting the cluster needs free: three daemons and, later, up to 2 x 1 GB of executors
NEEDED_MB = 3 * 256 + WORKERS * 1024
READY_TIMEOUT_S = 90
STOP_TIMEOUT_S = 20

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"

#: the daemons' own settings (a properties file passed to each; it also marks their command lines)
DAEMON_PROPERTIES = """\
# Written by deliverylab; rewritten at every `cluster up`.
# A finished application's folder (its executors' logs and fetched jars) goes after 10 minutes.
spark.worker.cleanup.enabled=true
spark.worker.cleanup.interval=120
spark.worker.cleanup.appDataTtl=600
spark.ui.reverseProxy=false
"""


def master_port() -> int:
    return _port("DELIVERYLAB_CLUSTER_PORT", 7077)


def ui_port() -> int:
    return _port("DELIVERYLAB_CLUSTER_UI_PORT", 8180)


def master_url() -> str:
    """The URL to give DELIVERYLAB_SPARK_MASTER for this cluster."""
    return f"spark://{HOST}:{master_port()}"


def app_conf() -> dict[str, str]:
    """What every application on a standalone cluster asks for (spark_conf adds it on a spark:// master)."""
    return {
        "spark.executor.memory": EXECUTOR_MEMORY,
        "spark.executor.cores": "1",
        "spark.cores.max": "1",
        # C1-only JIT, as for the broker: tiny batches, two cores; the first task starts sooner
        "spark.executor.extraJavaOptions": QUICK_JIT,
    }


def spark_home() -> Path:
    """The Spark inside the pyspark wheel (it ships bin/spark-class and every Spark jar)."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").exists():
        raise CourseError(f"The pyspark package at {home} has no bin/spark-class, so no cluster can start from it. "
                          "Reinstall it with `make setup`.")
    return home


def paths(s: Settings) -> dict[str, Path]:
    c = s.state / "cluster"
    found = {"dir": c, "lock": c / ".lock", "props": c / "spark-daemons.conf", "conf": c / "conf",
             "work": c / "work", "local": c / "local",
             "master.log": c / "master.log", "master.pid": c / "master.pid"}
    for n in range(1, WORKERS + 1):
        found[f"worker-{n}.log"] = c / f"worker-{n}.log"
        found[f"worker-{n}.pid"] = c / f"worker-{n}.pid"
    return found


def _locked(s: Settings):
    """One `up`/`down` at a time, even across processes."""
    return locks.exclusive(paths(s)["lock"])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\x00", b" ").decode(errors="replace")
    except OSError:
        return ""


def _our_pid(s: Settings, name: str) -> int | None:
    """The pid of this project's daemon ``name`` ("master", "worker-1", ...) if it runs (stale pid files ignored)."""
    try:
        pid = int(paths(s)[f"{name}.pid"].read_text().strip())
    except (OSError, ValueError):
        return None
    cmdline = _cmdline(pid)
    main = MASTER_CLASS if name == "master" else WORKER_CLASS
    if main in cmdline and str(paths(s)["props"]) in cmdline and processes.alive(pid):
        return pid
    return None


def executor_pids(s: Settings | None = None, worker: int | None = None) -> list[int]:
    """Pids of the executor JVMs the workers of this cluster run (of one worker if ``worker`` is given)."""
    s = s or settings()
    where = str(paths(s)["work"] / (f"worker-{worker}" if worker else ""))
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        if EXECUTOR_CLASS not in _cmdline(int(entry.name)):
            continue
        try:  # a worker starts each executor in that executor's folder under its work directory
            folder = os.readlink(entry / "cwd")
        except OSError:
            continue
        if folder.startswith(where):
            found.append(int(entry.name))
    return sorted(found)


def kill_executors(app_id: str, log=print) -> list[int]:
    """SIGKILL every executor JVM of application ``app_id`` (``spark.sparkContext.applicationId``): an executor
    dies mid-task; its worker stays up, and the master gives the application a new executor. Returns their pids."""
    s = settings()
    pids = [pid for pid in executor_pids(s) if f"--app-id {app_id} " in _cmdline(pid) + " "]
    for pid in pids:
        processes.kill_group(pid)
    log(f"killed {len(pids)} executor(s) of {app_id}: pid(s) {', '.join(map(str, pids)) or '-'}")
    return pids


def _daemon_env(s: Settings) -> dict[str, str]:
    p = paths(s)
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home()),
        "SPARK_CONF_DIR": str(p["conf"]),          # empty: no spark-env.sh or defaults from elsewhere
        "SPARK_LOCAL_IP": HOST,                    # every socket and web UI on loopback
        "SPARK_MASTER_HOST": HOST,
        "SPARK_PUBLIC_DNS": HOST,                  # the addresses the web UIs advertise
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        "SPARK_DAEMON_JAVA_OPTS": f"{QUICK_JIT} -XX:+UseSerialGC",
        "SPARK_LOCAL_DIRS": str(p["local"]),       # executors' shuffle and scratch files
        "PYSPARK_PYTHON": env.get("PYSPARK_PYTHON") or __import__("sys").executable,
    })
    for stray in ("SPARK_MASTER_PORT", "SPARK_WORKER_PORT", "SPARK_WORKER_WEBUI_PORT", "SPARK_MASTER_WEBUI_PORT"):
        env.pop(stray, None)
    return env


def _master_cmd(s: Settings) -> list[str]:
    return [str(spark_home() / "bin" / "spark-class"), MASTER_CLASS, "--host", HOST, "--port", str(master_port()),
            "--webui-port", str(ui_port()), "--properties-file", str(paths(s)["props"])]


def _worker_cmd(s: Settings, n: int) -> list[str]:
    return [str(spark_home() / "bin" / "spark-class"), WORKER_CLASS, master_url(), "--host", HOST,
            "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY, "--webui-port", str(ui_port() + n),
            "--work-dir", str(paths(s)["work"] / f"worker-{n}"), "--properties-file", str(paths(s)["props"])]


def _start(s: Settings, name: str, cmd: list[str]) -> int:
    p = paths(s)
    with open(p[f"{name}.log"], "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=_daemon_env(s), cwd=str(p["dir"]), start_new_session=True)
    p[f"{name}.pid"].write_text(f"{proc.pid}\n")
    return proc.pid


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def available_mb() -> int | None:
    """MemAvailable from /proc/meminfo, in MB (None where there is no /proc)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def check_memory(needed_mb: int = NEEDED_MB) -> None:
    free = available_mb()
    if free is not None and free < needed_mb:
        raise CourseError(f"The Spark cluster needs about {needed_mb} MB of free memory (a master, {WORKERS} workers of "
                          f"{WORKER_MEMORY} each); this machine has {free} MB available. Stop other programs (or "
                          "the crash labs of other notebooks), or stay on local[2]: unset DELIVERYLAB_SPARK_MASTER.")


def master_json(timeout_s: float = 1.0) -> dict | None:
    """The master's state from its web UI's JSON page, or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{HOST}:{ui_port()}/json", timeout=timeout_s) as reply:
            return json.loads(reply.read().decode())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def alive_workers(state: dict | None) -> int:
    if not state:
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


def log_tail(s: Settings | None = None, lines: int = 12) -> str:
    s = s or settings()
    chunks = []
    for name in ["master", *(f"worker-{n}" for n in range(1, WORKERS + 1))]:
        f = paths(s)[f"{name}.log"]
        if f.exists():
            text = f.read_text(errors="replace").strip().splitlines()
            if text:
                chunks.append(f"--- {f}")
                chunks.extend(text[-lines:])
    return "\n".join(chunks) or "(the cluster wrote no log)"


@dataclass
class ClusterStatus:
    master_pid: int | None
    worker_pids: dict[int, int | None] = field(default_factory=dict)
    alive: int = 0
    url: str = ""
    ui: str = ""
    seconds: float | None = None

    @property
    def running(self) -> bool:
        return self.master_pid is not None or any(self.worker_pids.values())

    @property
    def ready(self) -> bool:
        return self.master_pid is not None and self.alive >= WORKERS

    def line(self) -> str:
        if not self.running:
            return f"spark cluster: stopped (would run at {self.url})"
        workers = ", ".join(f"worker-{n} {'pid ' + str(p) if p else 'stopped'}" for n, p in self.worker_pids.items())
        took = f", up in {self.seconds:.1f} s" if self.seconds is not None else ""
        return (f"spark cluster: master pid {self.master_pid or 'stopped'} at {self.url} (web UI {self.ui}), "
                f"{workers}; {self.alive} of {WORKERS} workers ALIVE{took}")


def status() -> ClusterStatus:
    s = settings()
    pid = _our_pid(s, "master")
    return ClusterStatus(master_pid=pid, worker_pids={n: _our_pid(s, f"worker-{n}") for n in range(1, WORKERS + 1)},
                         alive=alive_workers(master_json()) if pid else 0, url=master_url(),
                         ui=f"http://{HOST}:{ui_port()}")


def _wait_ready(s: Settings, started: float, want: int = WORKERS) -> ClusterStatus:
    deadline = started + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        for name in ["master", *(f"worker-{n}" for n in range(1, WORKERS + 1))]:
            if not processes.alive_from_pid_file(paths(s)[f"{name}.pid"]):
                raise CourseError(f"The Spark cluster's {name} exited while starting. The ends of its logs:\n"
                                  f"{log_tail(s)}\nFix what the log names, then run `python -m deliverylab cluster "
                                  "down` and `cluster up` again.")
        if alive_workers(master_json()) >= want:
            st = status()
            st.seconds = time.monotonic() - started
            return st
        time.sleep(0.25)
    raise CourseError(f"The Spark cluster did not list {want} ALIVE workers at http://{HOST}:{ui_port()}/json within "
                      f"{READY_TIMEOUT_S} s. The ends of its logs:\n{log_tail(s)}\n"
                      "Try `python -m deliverylab cluster down` and `cluster up` again.")


def up(log=print) -> ClusterStatus:
    """Start the master and the workers that are not running; return once every worker is ALIVE."""
    s = settings()
    with _locked(s):
        current = status()
        if current.ready and all(current.worker_pids.values()):
            return current
        started = time.monotonic()
        p = paths(s)
        if not current.master_pid:
            busy = [(port, var) for port, var in ((master_port(), "DELIVERYLAB_CLUSTER_PORT"),
                                                   (ui_port(), "DELIVERYLAB_CLUSTER_UI_PORT"))
                    if not _port_free(port)]
            for n in range(1, WORKERS + 1):
                if not current.worker_pids.get(n) and not _port_free(ui_port() + n):
                    busy.append((ui_port() + n, "DELIVERYLAB_CLUSTER_UI_PORT"))
            if busy:
                port, var = busy[0]
                raise CourseError(f"Port {port} on {HOST} is taken by another program, so the Spark cluster cannot "
                                  f"start. Stop that program (`ss -ltnp | grep {port}` shows which), or move the "
                                  f"cluster, e.g. `export {var}={port + 10000}`, then run the command again.")
            check_memory()
            from .java import require_java

            require_java()
            if not any(current.worker_pids.values()):  # the last run's executor folders and scratch files
                for folder in ("work", "local"):
                    shutil.rmtree(p[folder], ignore_errors=True)
            for folder in ("conf", "work", "local"):
                p[folder].mkdir(parents=True, exist_ok=True)
            p["props"].write_text(DAEMON_PROPERTIES)
            for name in ["master", *(f"worker-{n}" for n in range(1, WORKERS + 1))]:
                p[f"{name}.log"].write_text("")
            pid = _start(s, "master", _master_cmd(s))
            log(f"starting the Spark master (pid {pid}) at {master_url()}, web UI http://{HOST}:{ui_port()} ...")
        for n in range(1, WORKERS + 1):
            if not _our_pid(s, f"worker-{n}"):
                pid = _start(s, f"worker-{n}", _worker_cmd(s, n))
                log(f"starting Spark worker {n} (pid {pid}, {WORKER_CORES} slots, {WORKER_MEMORY}) ...")
        return _wait_ready(s, started)


def _stop(pid: int, wait_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the daemon's process group (its executors too), then SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while processes.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    processes.kill_group(pid)


def down(log=print) -> bool:
    """Stop the workers (and their executors), then the master. True if anything was running."""
    s = settings()
    if not paths(s)["dir"].exists():
        return False
    with _locked(s):
        stopped = False
        for name in [*(f"worker-{n}" for n in range(1, WORKERS + 1)), "master"]:
            pid = _our_pid(s, name)
            if pid:
                log(f"stopping the Spark {name} (pid {pid}) ...")
                _stop(pid)
                stopped = True
            paths(s)[f"{name}.pid"].unlink(missing_ok=True)
        for pid in executor_pids(s):  # an executor whose worker died without taking it along
            processes.kill_group(pid)
        return stopped


def _worker_number(n: int) -> int:
    if not isinstance(n, int) or not 1 <= n <= WORKERS:
        raise CourseError(f"There is no worker {n!r}: the cluster's workers are numbered 1 to {WORKERS}.")
    return n


def kill_worker(n: int, log=print) -> int:
    """SIGKILL worker ``n`` and the executors it runs (a machine of the cluster dies). Returns its pid."""
    s = settings()
    _worker_number(n)
    pid = _our_pid(s, f"worker-{n}")
    if not pid:
        raise CourseError(f"Spark worker {n} is not running. `python -m deliverylab cluster up` starts the cluster.")
    executors = executor_pids(s, n)
    processes.kill_group(pid)
    for e in executors:
        processes.kill_group(e)
    log(f"killed Spark worker {n} (pid {pid}) and {len(executors)} executor(s) it ran")
    return pid


def restart_worker(n: int, log=print) -> ClusterStatus:
    """Start worker ``n`` again (after kill_worker); return once the master lists it ALIVE."""
    _worker_number(n)
    return up(log)


def require_master(s: Settings | None = None) -> None:
    """Before a SparkSession starts on a spark:// master: the master must answer (a clear message otherwise),
    and for this course's own cluster, a worker must be ALIVE (else the application would wait forever)."""
    s = s or settings()
    if not s.on_cluster:
        return
    addresses = s.spark_master[len("spark://"):].split(",")
    answering = []
    for address in addresses:
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=2):
                answering.append(address)
        except OSError:
            continue
    if not answering:
        own = s.spark_master == master_url()
        how = ("start it with `python -m deliverylab cluster up`" if own else
               "check that the address is right and that the cluster is running")
        raise CourseError(f"The Spark master at {s.spark_master} (set by DELIVERYLAB_SPARK_MASTER) does not answer: "
                          f"{how}, or unset DELIVERYLAB_SPARK_MASTER to run Spark inside this process (local[2]).")
    if s.spark_master == master_url() and _our_pid(s, "master"):
        if alive_workers(master_json(timeout_s=3)) == 0:
            raise CourseError(f"The Spark master at {s.spark_master} has no ALIVE worker, so no task could run. "
                              "Run `python -m deliverylab cluster up` (it starts the missing workers).")


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m deliverylab cluster",
                                     description="A local Spark standalone cluster (a master and two workers).")
    parser.add_argument("action", choices=["up", "down", "status", "kill-worker", "restart-worker"])
    parser.add_argument("worker", nargs="?", type=int, help="with kill-worker/restart-worker: 1 or 2")
    args = parser.parse_args(argv)
    if args.action == "up":
        st = up()
        print(st.line())
        if settings().spark_master != master_url():
            print(f"to run the course on it: export DELIVERYLAB_SPARK_MASTER={master_url()}")
    elif args.action == "down":
        print("spark cluster: stopped" if down() else "spark cluster: not running")
    elif args.action == "status":
        st = status()
        print(st.line())
        return 0 if st.ready else 1
    else:
        if args.worker is None:
            parser.error(f"{args.action} needs the worker's number (1 to {WORKERS})")
        if args.action == "kill-worker":
            kill_worker(args.worker)
        else:
            print(restart_worker(args.worker).line())
    return 0
