"""A real single-node Apache Kafka broker (KRaft: broker and controller in one JVM).

It runs from the jars in ``.state/jars/kafka``, listens on 127.0.0.1 only, and keeps its
data in ``.state/kafka``. ``python -m deliverylab stack up|down|status|reset`` drives it.

In shared-broker mode (``DELIVERYLAB_BROKER`` or a workshop file, see config.py) the course
uses an instructor's broker instead: ``up`` only checks that it answers, ``down`` and
``wipe`` leave everything alone, and ``status`` names the shared broker.
"""
from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from . import jars, kafka, locks
from ..config import HOST, CourseError, Settings, settings
from .java import QUICK_JIT_FLAGS, require_java

READY_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
HEAP = "512m"

LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c{{1}})%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.server.name = org.apache.kafka.server
logger.server.level = INFO
"""


def server_properties(s: Settings) -> str:
    data = s.kafka_dir / "data"
    return "\n".join([
        "# Written by deliverylab; edits are overwritten at the next `stack up`.",
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.bootstrap.servers={HOST}:{s.controller_port}",
        f"listeners=PLAINTEXT://{HOST}:{s.kafka_port},CONTROLLER://{HOST}:{s.controller_port},"
        f"FLAKY://{HOST}:{s.flaky_listener_port}",
        # clients that bootstrap through the FLAKY listener are told to use the flaky-network
        # proxy's port: all their traffic then passes through it (stack/flaky.py)
        f"advertised.listeners=PLAINTEXT://{HOST}:{s.kafka_port},FLAKY://{HOST}:{s.flaky_proxy_port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,FLAKY:PLAINTEXT",
        f"log.dirs={data}",
        "num.partitions=2",
        "auto.create.topics.enable=false",
        "delete.topic.enable=true",
        # one node: every internal topic has a single replica
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=4",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "transaction.state.log.num.partitions=4",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        # a new consumer group starts at once instead of waiting 3 s for more members
        "group.initial.rebalance.delay.ms=0",
        "",
    ])


@dataclass
class BrokerStatus:
    running: bool
    answering: bool
    pid: int | None
    bootstrap: str
    topics: int | None = None
    #: where the shared broker was set (e.g. "DELIVERYLAB_BROKER"); "" for the course's own broker
    shared_by: str = ""

    def line(self) -> str:
        if self.shared_by:
            state = "answering" if self.answering else "NOT answering"
            extra = f", {self.topics} of your course topics" if self.topics is not None else ""
            return f"broker: shared broker at {self.bootstrap} (set by {self.shared_by}), {state}{extra}"
        if not self.running:
            return f"broker: stopped (would listen on {self.bootstrap})"
        state = "answering" if self.answering else "NOT answering"
        extra = f", {self.topics} course topics" if self.topics is not None else ""
        return f"broker: running, pid {self.pid}, {state} on {self.bootstrap}{extra}"


def _paths(s: Settings) -> dict[str, Path]:
    k = s.kafka_dir
    return {
        "props": k / "server.properties",
        "log4j": k / "log4j2.properties",
        "log": k / "broker.log",
        "stdout": k / "broker.out",
        "pid": k / "broker.pid",
        "lock": k / ".lock",
        "data": k / "data",
        "ports": k / "formatted-for",
    }


def _locked(s: Settings):
    """One `stack up`/`down` at a time, even across processes (two `make lab`, a test and a notebook)."""
    return locks.exclusive(_paths(s)["lock"])


def _our_pid(s: Settings) -> int | None:
    """The pid of this project's broker, if it is alive (a stale pid file is ignored)."""
    pid_file = _paths(s)["pid"]
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return None
    if "kafka.Kafka" in cmdline and str(_paths(s)["props"]) in cmdline:
        return pid
    return None


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def log_tail(s: Settings | None = None, lines: int = 20) -> str:
    s = s or settings()
    chunks = []
    for name in ("stdout", "log"):
        f = _paths(s)[name]
        if f.exists():
            text = f.read_text(errors="replace").strip().splitlines()
            chunks.extend(text[-lines:])
    return "\n".join(chunks[-lines:]) or "(the broker wrote no log)"


def _java_cmd(s: Settings, java: str, main: str, *args: str, heap: str = HEAP) -> list[str]:
    p = _paths(s)
    return [
        # C1-only JIT: on two cores the broker answers in ~3 s instead of ~8 s; its load here is tiny
        java, f"-Xmx{heap}", "-Xms128m", "-XX:+UseG1GC", *QUICK_JIT_FLAGS, "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={p['log4j']}", f"-Dkafka.logs.dir={s.kafka_dir}",
        "-cp", str(jars.classpath_dir("kafka") / "*"), main, *args,
    ]


def new_cluster_id() -> str:
    """A random KRaft cluster id: a UUID in URL-safe base64, 22 characters. One in 64 such strings starts
    with "-", which kafka-storage's argument parser takes for an option ("--cluster-id: expected one
    argument"), so, like Kafka's own Uuid.randomUuid(), draw again until it does not."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _format_storage(s: Settings, java: str) -> None:
    p = _paths(s)
    ports = f"controller={s.controller_port}"
    if (p["data"] / "meta.properties").exists():
        formatted_for = p["ports"].read_text().strip() if p["ports"].exists() else ports
        if formatted_for != ports:
            raise CourseError(
                f"The broker's storage was formatted with {formatted_for}, but DELIVERYLAB_CONTROLLER_PORT now "
                f"gives {s.controller_port}. Set it back, or run `python -m deliverylab stack wipe` "
                "to start the broker from empty storage."
            )
        return
    proc = subprocess.run(
        _java_cmd(s, java, "kafka.tools.StorageTool", "format", "-t", new_cluster_id(), "-c", str(p["props"]),
                  "--standalone", "--ignore-formatted", heap="256m"),
        capture_output=True, text=True,
    )
    if proc.returncode != 0:
        raise CourseError("Formatting the broker's storage failed:\n" + (proc.stdout + proc.stderr)[-2000:])
    p["ports"].write_text(ports + "\n")


def _shared_status(s: Settings) -> BrokerStatus:
    topics = kafka.topics(s.bootstrap, prefix=s.learner_prefix())
    return BrokerStatus(running=topics is not None, answering=topics is not None, pid=None, bootstrap=s.bootstrap,
                        topics=len(topics) if topics is not None else None, shared_by=s.shared_source)


def shared_broker_error(s: Settings) -> CourseError:
    """The message for a shared broker that does not answer: the address tried, and what to check."""
    leave = ("unset DELIVERYLAB_BROKER" if s.shared_source == "DELIVERYLAB_BROKER"
             else "run `python -m deliverylab workshop leave`")
    if s.kafka_login is None and kafka.listening(s.bootstrap):
        return CourseError(  # a broker with logins, or one that is still starting: a TCP probe cannot tell
            f"The shared Kafka broker at {s.bootstrap} (set by {s.shared_source}) accepts connections but answered no "
            "Kafka request without a login. If your instructor's broker has logins, ask them for your join token "
            "and run `python -m deliverylab workshop join <token>`; if it is still starting, try again in a minute. "
            f"To use a broker of your own instead, {leave}."
        )
    return CourseError(
        f"The shared Kafka broker at {s.bootstrap} (set by {s.shared_source}) does not answer. Check that the "
        "address and port are the ones your instructor gave, that this machine is on the class network, and "
        "that the instructor's broker is running; `python -m deliverylab doctor` tries again. To use a broker "
        f"of your own instead, {leave}."
    )


def up(log=print) -> BrokerStatus:
    """Start the broker if it is not running; return once it answers metadata requests.

    In shared-broker mode nothing is started: the shared broker must answer, or a CourseError
    names the address tried.
    """
    s = settings()
    if s.shared:
        found = _shared_status(s)
        if not found.answering:
            raise shared_broker_error(s)
        return found
    with _locked(s):
        pid = _our_pid(s)
        if pid and kafka.answers(s.bootstrap):
            return status()
        if pid:
            # ours, starting up (or stuck): wait for it below instead of starting a second one
            return _wait_ready(s, pid, time.monotonic())
        for port, var in ((s.kafka_port, "DELIVERYLAB_KAFKA_PORT"), (s.controller_port, "DELIVERYLAB_CONTROLLER_PORT"),
                          (s.flaky_listener_port, "DELIVERYLAB_CONTROLLER_PORT")):
            if not port_is_free(port):
                raise CourseError(
                    f"Port {port} on {HOST} is taken by another program, so the course's broker cannot start. "
                    f"Stop that program (`ss -ltnp | grep {port}` shows which), or pick another port, e.g. "
                    f"`export {var}={port + 10000}`, then run the command again."
                )
        java = require_java()
        jars.jars("kafka")  # clear error if setup has not run
        p = _paths(s)
        s.kafka_dir.mkdir(parents=True, exist_ok=True)
        p["props"].write_text(server_properties(s))
        p["log4j"].write_text(LOG4J2.format(log=p["log"]))
        _format_storage(s, java)
        for f in (p["log"], p["stdout"]):
            f.write_text("")
        started = time.monotonic()
        with open(p["stdout"], "ab") as out:
            proc = subprocess.Popen(
                _java_cmd(s, java, "kafka.Kafka", str(p["props"])),
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        p["pid"].write_text(f"{proc.pid}\n")
        log(f"starting the Kafka broker (pid {proc.pid}) on {s.bootstrap} ...")
        return _wait_ready(s, proc.pid, started)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of this process counts as dead
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _wait_ready(s: Settings, pid: int, started: float) -> BrokerStatus:
    deadline = started + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if not _alive(pid):
            raise CourseError(
                "The Kafka broker exited while starting. Its last log lines:\n"
                f"{log_tail(s)}\n"
                "Fix what the log names, then run `python -m deliverylab stack up` again "
                "(`python -m deliverylab stack wipe` starts from empty storage)."
            )
        if kafka.answers(s.bootstrap, timeout_s=1.0):
            return status()
        time.sleep(0.25)
    raise CourseError(
        f"The Kafka broker (pid {pid}) did not answer on {s.bootstrap} within {READY_TIMEOUT_S} s. "
        f"Its last log lines:\n{log_tail(s)}\nTry `python -m deliverylab stack down` and `stack up` again."
    )


def down(log=print) -> bool:
    """Stop the broker cleanly (SIGTERM, then wait). Returns True if one was running.

    In shared-broker mode it stops nothing (the broker is the instructor's) and returns False.
    """
    s = settings()
    if s.shared:
        log(f"the course uses the shared broker at {s.bootstrap} (set by {s.shared_source}); it stops nothing there")
        return False
    with _locked(s):
        pid = _our_pid(s)
        if not pid:
            _paths(s)["pid"].unlink(missing_ok=True)
            return False
        log(f"stopping the Kafka broker (pid {pid}) ...")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            log(f"the broker did not stop within {STOP_TIMEOUT_S} s; killing it")
            os.kill(pid, signal.SIGKILL)
        _paths(s)["pid"].unlink(missing_ok=True)
        return True


def status() -> BrokerStatus:
    s = settings()
    if s.shared:
        return _shared_status(s)
    pid = _our_pid(s)
    topics = kafka.topics(s.bootstrap, prefix=s.learner_prefix()) if pid else None
    return BrokerStatus(running=pid is not None, answering=topics is not None, pid=pid,
                        bootstrap=s.bootstrap, topics=len(topics) if topics is not None else None)


def require_running() -> str:
    """The bootstrap address, or a CourseError when the broker does not answer."""
    s = settings()
    if kafka.answers(s.bootstrap):
        return s.bootstrap
    if s.shared:
        raise shared_broker_error(s)
    raise CourseError(
        f"The course's Kafka broker is not answering on {s.bootstrap}. Start it with "
        "`python -m deliverylab stack up` (or re-run the lesson's setup cell, which starts it)."
    )


def wipe(log=print) -> None:
    """Stop the broker and delete its storage (every topic). The next `up` formats it anew."""
    import shutil

    s = settings()
    if s.shared:
        raise CourseError(f"`stack wipe` deletes a local broker's storage, and this course uses the shared broker at "
                          f"{s.bootstrap} (set by {s.shared_source}), which only its owner can wipe. To clear your "
                          "own data there, run `python -m deliverylab stack reset`.")
    down(log)
    shutil.rmtree(_paths(s)["data"], ignore_errors=True)
    _paths(s)["ports"].unlink(missing_ok=True)
    log("broker storage deleted; `stack up` will start from empty storage")
