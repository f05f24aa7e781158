"""A three-broker Kafka cluster (KRaft: three combined broker+controller nodes), on 127.0.0.1 only.

    python -m deliverylab stack up --brokers 3     # start it (the single broker is left alone)
    python -m deliverylab stack kill-broker 2      # SIGKILL node 2: a broker dies, leaders move
    python -m deliverylab stack restart-broker 2   # bring node 2 back; it catches up as a follower
    python -m deliverylab stack down               # stops it, with the single broker

It runs from the same jars as the course's single broker (stack/broker.py), whose settings
it starts from (:func:`server_properties` rewrites only what differs: the node's id, its
ports, the three-voter quorum, and the replication settings). Replication: every topic
created without an explicit replication factor gets three replicas
(``default.replication.factor=3``), and a write with ``acks=all`` needs two of them in sync
(``min.insync.replicas=2``), so one broker may die without a loss and without refusing writes.

Ports (node n = 1, 2, 3): the client port 9192, 9202, 9212 and the controller port one above
(9193, 9203, 9213); move them all with DELIVERYLAB_CLUSTER_KAFKA_PORT (the first client port).
Data, logs and pids live in ``.state/kafka-cluster/node-N/``.

The course moves onto this cluster with the shared-broker setting (config.py), which accepts
a bootstrap list; the course then neither starts nor stops a broker of its own:

    export DELIVERYLAB_BROKER=127.0.0.1:9192,127.0.0.1:9202,127.0.0.1:9212

The FLAKY listener of the single broker (stack/flaky.py) has no counterpart here.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import broker, jars, kafka, locks, processes
from .java import QUICK_JIT_FLAGS
from ..config import HOST, CourseError, Settings, _port, settings

NODES = 3
HEAP = "384m"
READY_TIMEOUT_S = 90
STOP_TIMEOUT_S = 30

#: settings of the single broker that name its one node, its ports or its one replica: replaced here
_NODE_KEYS = ("node.id", "controller.quorum.bootstrap.servers", "controller.quorum.voters", "listeners",
              "advertised.listeners", "listener.security.protocol.map", "log.dirs")
REPLICATION = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "unclean.leader.election.enable": "false",
}


def first_port() -> int:
    return _port("DELIVERYLAB_CLUSTER_KAFKA_PORT", 9192)


def client_port(n: int) -> int:
    return first_port() + 10 * (n - 1)


def controller_port(n: int) -> int:
    return client_port(n) + 1


def bootstrap() -> str:
    """The bootstrap list of the three nodes (the value for DELIVERYLAB_BROKER)."""
    return ",".join(f"{HOST}:{client_port(n)}" for n in range(1, NODES + 1))


def _node(n: int) -> int:
    if not isinstance(n, int) or not 1 <= n <= NODES:
        raise CourseError(f"There is no broker {n!r} in the cluster: its brokers are numbered 1 to {NODES}.")
    return n


def paths(s: Settings, n: int | None = None) -> dict[str, Path]:
    root = s.state / "kafka-cluster"
    if n is None:
        return {"dir": root, "lock": root / ".lock", "cluster-id": root / "cluster-id"}
    d = root / f"node-{n}"
    return {"dir": d, "props": d / "server.properties", "log4j": d / "log4j2.properties", "log": d / "broker.log",
            "stdout": d / "broker.out", "pid": d / "broker.pid", "data": d / "data"}


def server_properties(s: Settings, n: int) -> str:
    """Node ``n``'s settings: the single broker's (stack/broker.py), with its own id, ports, quorum and replication."""
    voters = ",".join(f"{i}@{HOST}:{controller_port(i)}" for i in range(1, NODES + 1))
    own = {
        "node.id": str(n),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{HOST}:{client_port(n)},CONTROLLER://{HOST}:{controller_port(n)}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{client_port(n)}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(paths(s, n)["data"]),
        **REPLICATION,
    }
    lines = [f"# Written by deliverylab for node {n} of the three-broker cluster; rewritten at every `stack up --brokers 3`."]
    for line in broker.server_properties(s).splitlines():
        key = line.partition("=")[0].strip()
        if not line.strip() or line.lstrip().startswith("#") or key in _NODE_KEYS or key in REPLICATION:
            continue
        lines.append(line)
    lines.extend(f"{key}={value}" for key, value in own.items())
    return "\n".join(lines) + "\n"


def _locked(s: Settings):
    """One `up`/`down` at a time, even across processes."""
    return locks.exclusive(paths(s)["lock"])


def _our_pid(s: Settings, n: int) -> int | None:
    p = paths(s, n)
    try:
        pid = int(p["pid"].read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return None
    if "kafka.Kafka" in cmdline and str(p["props"]) in cmdline and processes.alive(pid):
        return pid
    return None


def _java_cmd(s: Settings, n: int, java: str, main: str, *args: str, heap: str = HEAP) -> list[str]:
    p = paths(s, n)
    return [java, f"-Xmx{heap}", "-Xms96m", "-XX:+UseG1GC", *QUICK_JIT_FLAGS, "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={p['log4j']}", f"-Dkafka.logs.dir={p['dir']}",
            "-cp", str(jars.classpath_dir("kafka") / "*"), main, *args]


def _format(s: Settings, java: str, nodes: list[int]) -> None:
    """Format the storage of the nodes that have none, all with the cluster's one id (in parallel)."""
    ids = paths(s)["cluster-id"]
    if not ids.exists():
        ids.write_text(broker.new_cluster_id() + "\n")
    cid = ids.read_text().strip()
    running = []
    for n in nodes:
        if (paths(s, n)["data"] / "meta.properties").exists():
            continue
        cmd = _java_cmd(s, n, java, "kafka.tools.StorageTool", "format", "-t", cid, "-c", str(paths(s, n)["props"]),
                        "--ignore-formatted", heap="256m")
        running.append((n, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for n, proc in running:
        out, _ = proc.communicate()
        if proc.returncode != 0:
            raise CourseError(f"Formatting the storage of broker {n} failed:\n{out[-2000:]}\n"
                              "`python -m deliverylab stack wipe --brokers 3` starts the cluster from empty storage.")


def _start(s: Settings, n: int, java: str) -> int:
    p = paths(s, n)
    for f in (p["log"], p["stdout"]):
        f.write_text("")
    with open(p["stdout"], "ab") as out:
        proc = subprocess.Popen(_java_cmd(s, n, java, "kafka.Kafka", str(p["props"])), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    p["pid"].write_text(f"{proc.pid}\n")
    return proc.pid


def log_tail(s: Settings, n: int, lines: int = 15) -> str:
    chunks = []
    for name in ("stdout", "log"):
        f = paths(s, n)[name]
        if f.exists():
            chunks.extend(f.read_text(errors="replace").strip().splitlines()[-lines:])
    return "\n".join(chunks[-lines:]) or "(the broker wrote no log)"


def live_brokers(address: str | None = None, timeout_s: float = 2.0) -> set[int] | None:
    """Node ids of the brokers the cluster's metadata lists (None when no node answers)."""
    address = address or bootstrap()
    if not kafka.listening(address):
        return None
    try:
        with kafka.admin(address, timeout_s=timeout_s) as client:
            return {b.get("broker_id", b.get("node_id")) for b in client.describe_cluster()["brokers"]
                    if not b.get("is_fenced")}
    except Exception:  # kafka-python raises several kinds while nodes start or die
        return None


@dataclass
class ClusterStatus:
    pids: dict[int, int | None] = field(default_factory=dict)
    live: set[int] = field(default_factory=set)
    bootstrap: str = ""
    seconds: float | None = None

    @property
    def running(self) -> bool:
        return any(self.pids.values())

    @property
    def ready(self) -> bool:
        return all(self.pids.values()) and self.live == set(self.pids)

    def line(self) -> str:
        if not self.running:
            return f"kafka cluster: stopped (would listen on {self.bootstrap})"
        nodes = ", ".join(f"broker {n} {'pid ' + str(p) if p else 'stopped'}" for n, p in self.pids.items())
        took = f", up in {self.seconds:.1f} s" if self.seconds is not None else ""
        return (f"kafka cluster: {nodes}; {len(self.live)} of {NODES} brokers in the cluster's metadata, "
                f"bootstrap {self.bootstrap}{took}")


def status() -> ClusterStatus:
    s = settings()
    pids = {n: _our_pid(s, n) for n in range(1, NODES + 1)}
    live = (live_brokers() or set()) if any(pids.values()) else set()
    return ClusterStatus(pids=pids, live=live, bootstrap=bootstrap())


def _wait(s: Settings, started: float, want: set[int]) -> ClusterStatus:
    deadline = started + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        for n in want:
            if not processes.alive_from_pid_file(paths(s, n)["pid"]):
                raise CourseError(f"Broker {n} of the Kafka cluster exited while starting. Its last log lines:\n"
                                  f"{log_tail(s, n)}\nFix what the log names, then run `python -m deliverylab stack "
                                  "up --brokers 3` again (`stack wipe --brokers 3` starts from empty storage).")
        live = live_brokers(timeout_s=1.0)
        if live is not None and want <= live:
            st = status()
            st.seconds = time.monotonic() - started
            return st
        time.sleep(0.25)
    raise CourseError(f"The Kafka cluster did not list brokers {sorted(want)} within {READY_TIMEOUT_S} s. The last "
                      f"log lines of broker {min(want)}:\n{log_tail(s, min(want))}\n"
                      "Try `python -m deliverylab stack down` and `stack up --brokers 3` again.")


def up(log=print, nodes: list[int] | None = None) -> ClusterStatus:
    """Start the nodes that are not running (all three by default); return once the metadata lists all three."""
    s = settings()
    nodes = [_node(n) for n in (nodes or range(1, NODES + 1))]
    with _locked(s):
        missing = [n for n in nodes if not _our_pid(s, n)]
        if not missing:
            return _wait(s, time.monotonic(), set(range(1, NODES + 1)))
        for n in missing:
            for port in (client_port(n), controller_port(n)):
                if not broker.port_is_free(port):
                    raise CourseError(
                        f"Port {port} on {HOST} is taken by another program, so broker {n} of the Kafka cluster cannot "
                        f"start. Stop that program (`ss -ltnp | grep {port}` shows which), or move the cluster, e.g. "
                        f"`export DELIVERYLAB_CLUSTER_KAFKA_PORT={first_port() + 10000}`, then run the command again.")
        from .java import require_java

        java = require_java()
        jars.jars("kafka")  # a clear error if setup has not run
        started = time.monotonic()
        for n in missing:
            p = paths(s, n)
            p["dir"].mkdir(parents=True, exist_ok=True)
            p["props"].write_text(server_properties(s, n))
            p["log4j"].write_text(broker.LOG4J2.format(log=p["log"]))
        _format(s, java, missing)
        for n in missing:
            pid = _start(s, n, java)
            log(f"starting Kafka broker {n} (pid {pid}) on {HOST}:{client_port(n)} ...")
        return _wait(s, started, set(range(1, NODES + 1)))


def kill_broker(n: int, log=print) -> int:
    """SIGKILL broker ``n`` (no controlled shutdown: its partitions' leadership moves after it is missed)."""
    s = settings()
    pid = _our_pid(s, _node(n))
    if not pid:
        raise CourseError(f"Broker {n} of the Kafka cluster is not running; "
                          f"`python -m deliverylab stack restart-broker {n}` starts it.")
    processes.kill_group(pid)
    deadline = time.monotonic() + 10
    while processes.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    log(f"killed Kafka broker {n} (pid {pid})")
    return pid


def leader(topic: str, partition: int = 0, address: str | None = None) -> int | None:
    """The node id leading ``topic``'s ``partition`` now (None while it has no leader, e.g. during an election)."""
    with kafka.admin(address or bootstrap()) as client:
        for p in client.describe_topics([topic])[0]["partitions"]:
            if p["partition_index"] == partition:
                return p["leader_id"] if p["leader_id"] >= 0 else None
    return None


def restart_broker(n: int, log=print) -> ClusterStatus:
    """Start broker ``n`` again; return once the cluster's metadata lists all three brokers."""
    return up(log, nodes=[_node(n)])


def down(log=print) -> bool:
    """Stop every node (SIGTERM to all at once, then SIGKILL what is left). True if any was running."""
    s = settings()
    if not paths(s)["dir"].exists():
        return False
    with _locked(s):
        pids = {n: _our_pid(s, n) for n in range(1, NODES + 1)}
        running = [pid for pid in pids.values() if pid]
        for n, pid in pids.items():
            if pid:
                log(f"stopping Kafka broker {n} (pid {pid}) ...")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while any(processes.alive(pid) for pid in running) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in running:
            if processes.alive(pid):
                log(f"broker pid {pid} did not stop within {STOP_TIMEOUT_S} s; killing it")
                processes.kill_group(pid)
        for n in range(1, NODES + 1):
            paths(s, n)["pid"].unlink(missing_ok=True)
        return bool(running)


def wipe(log=print) -> None:
    """Stop the cluster and delete its storage; the next `stack up --brokers 3` formats it anew."""
    import shutil

    down(log)
    s = settings()
    for n in range(1, NODES + 1):
        shutil.rmtree(paths(s, n)["data"], ignore_errors=True)
    paths(s)["cluster-id"].unlink(missing_ok=True)
    log("kafka cluster storage deleted")
