"""The local Spark standalone cluster, for real: up, loopback only, a worker killed and back, down."""
import os
import time
from pathlib import Path

import pytest

from deliverylab import config
from deliverylab.stack import cluster

pytestmark = [pytest.mark.stack, pytest.mark.cluster]


@pytest.fixture
def running_cluster(spark_cluster):
    return cluster.status()


def _listening(pid: int) -> list[str]:
    """host:port of every TCP socket the process listens on (from /proc, no tools needed)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                address, port = fields[1].split(":")
                found.append(f"{address}:{int(port, 16)}")
    return found


def _loopback(hex_address: str) -> bool:
    # 127.0.0.1 as /proc writes it: 0100007F (IPv4) or ...FFFF0000 0100007F (IPv4-mapped IPv6)
    return hex_address.endswith("0100007F") or hex_address == "00000000000000000000000001000000"


def test_up_is_idempotent_and_the_master_lists_every_worker_alive(running_cluster):
    again = cluster.up(log=lambda m: None)
    assert again.master_pid == running_cluster.master_pid and again.ready
    state = cluster.master_json()
    assert state["status"] == "ALIVE" and cluster.alive_workers(state) == cluster.WORKERS
    assert {w["host"] for w in state["workers"]} == {"127.0.0.1"}


def test_every_daemon_listens_on_loopback_only(running_cluster):
    pids = [running_cluster.master_pid, *running_cluster.worker_pids.values()]
    for pid in pids:
        sockets = _listening(pid)
        assert sockets, f"pid {pid} listens nowhere?"
        assert all(_loopback(s.split(":")[0]) for s in sockets), sockets


def test_logs_and_pids_are_in_the_state_folder(running_cluster):
    p = cluster.paths(config.settings())
    assert p["master.log"].read_text() and p["worker-1.log"].read_text()
    assert int(p["master.pid"].read_text()) == running_cluster.master_pid


def test_a_killed_worker_is_seen_dead_and_comes_back(running_cluster):
    pid = cluster.kill_worker(2, log=lambda m: None)
    deadline = time.monotonic() + 60
    while cluster.alive_workers(cluster.master_json()) != cluster.WORKERS - 1 and time.monotonic() < deadline:
        time.sleep(0.25)
    assert cluster.alive_workers(cluster.master_json()) == cluster.WORKERS - 1
    assert cluster.status().worker_pids[2] is None
    back = cluster.restart_worker(2, log=lambda m: None)
    assert back.ready and back.worker_pids[2] not in (None, pid)
