"""The class broker from the course's own jars: one Kafka broker for a room, a login per learner, prefixed ACLs.

    python -m deliverylab stack up --class class.txt --address 192.168.1.20
    python -m deliverylab stack status --class
    python -m deliverylab stack down --class          # also: stack wipe --class
    python -m deliverylab stack up --class class.txt --address 192.168.1.20 --docker   # docker/class-broker.yaml

``up`` reads the roster (one learner id per line), issues a SCRAM-SHA-512 password to every learner, to the
board and to the instructor (admin), kept in ``.state/class-broker/passwords.json`` (0600), formats the broker's
storage, starts the broker with the limits of stack/classlimits.py (its topic policy, connection limits and safe
topic defaults), then, as admin, makes the broker match the roster (stack/classroster.py: logins, ACLs of
stack/classauth.py, board topics; what it added and removed is printed) and sets the quotas of
stack/classquota.py (once per storage: ``quotas.json`` records them). Run it again after changing the roster: the
broker keeps running, a removed learner's login and rights are deleted, a re-added learner's new token replaces
her old one. ``join-tokens.txt`` (0600) holds the line to hand each learner:
``python -m deliverylab workshop join <token>``. With ``--docker`` nothing is started here: the same broker runs
from docker/class-broker.yaml, with the admin password and the policy's jar of ``docker.env`` (0600), and ``up``
does the rest on it the same way. The whole state folder, the broker's KRaft metadata log included (it holds every
SCRAM salt and key), is readable by the instructor only (stack/classprocess.py).

Listeners (P = DELIVERYLAB_CLASS_PORT, default 9092; the course's own broker is left alone):
    CLASS       <address>:P     SASL_PLAINTEXT, SCRAM-SHA-512: the learners' bootstrap address
    FLAKY       <address>:P+2   SASL_PLAINTEXT, SCRAM-SHA-512, advertised as 127.0.0.1:P+3: each learner's
                                own flaky-network proxy (stack/flaky.py), as in shared-broker mode
    CONTROLLER  127.0.0.1:P+5   SASL_PLAINTEXT, PLAIN: KRaft, the broker's own admin identity only
    INTERNAL    127.0.0.1:P+6   SASL_PLAINTEXT, PLAIN: inter-broker traffic and the instructor's tools
The authorizer is Kafka's StandardAuthorizer (ACLs in the KRaft metadata log); admin is the only super
user, and a resource without an ACL is refused to everyone else (allow.everyone.if.no.acl.found=false).
SASL_PLAINTEXT keeps passwords off the wire (SCRAM sends a proof, never the password); the records
themselves cross the class network unencrypted.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import broker, classauth, classlimits, classprocess, classquota, classroster, jars, kafka, locks, processes
from ..config import HOST, CourseError, KafkaLogin, Settings, _port, settings

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
#: settings of the course's broker that name its listeners, its security or its one node's files: replaced here
_OWN_KEYS = ("controller.quorum.bootstrap.servers", "listeners", "advertised.listeners", "controller.listener.names",
             "inter.broker.listener.name", "listener.security.protocol.map", "log.dirs")


@dataclass(frozen=True)
class Ports:
    client: int

    @property
    def flaky(self) -> int:
        return self.client + 2

    @property
    def flaky_proxy(self) -> int:
        return self.client + 3

    @property
    def controller(self) -> int:
        return self.client + 5

    @property
    def internal(self) -> int:
        return self.client + 6

    def bound(self) -> tuple[int, ...]:
        return self.client, self.flaky, self.controller, self.internal


def ports() -> Ports:
    return Ports(_port("DELIVERYLAB_CLASS_PORT", 9092))


def paths(s: Settings) -> dict[str, Path]:
    d = s.state / "class-broker"
    return {"dir": d, "props": d / "server.properties", "log4j": d / "log4j2.properties", "log": d / "broker.log",
            "stdout": d / "broker.out", "pid": d / "broker.pid", "lock": d / ".lock", "data": d / "data",
            "passwords": d / "passwords.json", "tokens": d / "join-tokens.txt", "address": d / "address",
            "docker_env": d / "docker.env", "quotas": d / "quotas.json"}


def _plain_jaas(password: str) -> str:
    """The loopback listeners' PLAIN login: the broker logs in as admin, and admin is the one user it accepts."""
    return (f'{classauth.PLAIN_LOGIN_MODULE} required username="{classauth.ADMIN}" password="{password}" '
            f'user_{classauth.ADMIN}="{password}";')


def server_properties(s: Settings, address: str, p: Ports, admin_password: str) -> str:
    """The course broker's settings (stack/broker.py) with the class broker's listeners, logins and authorizer."""
    own = {
        "controller.quorum.bootstrap.servers": f"{HOST}:{p.controller}",
        "listeners": f"CLASS://{address}:{p.client},FLAKY://{address}:{p.flaky},"
                     f"CONTROLLER://{HOST}:{p.controller},INTERNAL://{HOST}:{p.internal}",
        "advertised.listeners": f"CLASS://{address}:{p.client},FLAKY://{HOST}:{p.flaky_proxy},INTERNAL://{HOST}:{p.internal}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "INTERNAL",
        "listener.security.protocol.map": "CLASS:SASL_PLAINTEXT,FLAKY:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT,"
                                          "INTERNAL:SASL_PLAINTEXT",
        "log.dirs": str(paths(s)["data"]),
        "sasl.enabled.mechanisms": classauth.MECHANISM,
        "listener.name.class.sasl.enabled.mechanisms": classauth.MECHANISM,
        "listener.name.flaky.sasl.enabled.mechanisms": classauth.MECHANISM,
        "listener.name.class.scram-sha-512.sasl.jaas.config": f"{classauth.SCRAM_LOGIN_MODULE} required;",
        "listener.name.flaky.scram-sha-512.sasl.jaas.config": f"{classauth.SCRAM_LOGIN_MODULE} required;",
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": _plain_jaas(admin_password),
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": _plain_jaas(admin_password),
        "sasl.mechanism.controller.protocol": "PLAIN",
        "authorizer.class.name": AUTHORIZER,
        "super.users": f"User:{classauth.ADMIN}",
        "allow.everyone.if.no.acl.found": "false",
        **classlimits.server_properties(address),
    }
    lines = ["# Written by deliverylab for the class broker (holds the admin password: mode 0600); rewritten at every "
             "`stack up --class`."]
    for line in broker.server_properties(s).splitlines():
        key = line.partition("=")[0].strip()
        if line.strip() and not line.lstrip().startswith("#") and key not in _OWN_KEYS:
            lines.append(line)
    lines.extend(f"{key}={value}" for key, value in own.items())
    return "\n".join(lines) + "\n"


def admin_login(s: Settings | None = None, p: Ports | None = None) -> KafkaLogin:
    """The instructor's login on the INTERNAL listener (loopback, PLAIN)."""
    s, p = s or settings(), p or ports()
    password = classauth.read_passwords(paths(s)["passwords"]).get(classauth.ADMIN)
    if not password:
        raise CourseError("The class broker has no admin password yet: start it with "
                          "`python -m deliverylab stack up --class class.txt --address YOUR-ADDRESS`.")
    return KafkaLogin(broker=f"{HOST}:{p.internal}", username=classauth.ADMIN, password=password, mechanism="PLAIN")


def board_login(s: Settings | None = None) -> KafkaLogin:
    """The class board's login (read-only on the learners' board topics), at the address learners use:
    ``board --class``."""
    s = s or settings()
    password = classauth.read_passwords(paths(s)["passwords"]).get(classauth.BOARD)
    if not password:
        raise CourseError("No class broker was started on this machine, so there is no board login: start it with "
                          "`python -m deliverylab stack up --class class.txt --address YOUR-ADDRESS`, or leave out "
                          "--class and give the broker with --broker HOST:PORT.")
    return KafkaLogin(broker=status().bootstrap, username=classauth.BOARD, password=password)


def _java_cmd(s: Settings, java: str, main: str, *args: str, heap: str = classprocess.HEAP) -> list[str]:
    p = paths(s)
    return classprocess.java_cmd(java, p["log4j"], p["dir"], main, *args, heap=heap)


def _our_pid(s: Settings) -> int | None:
    p = paths(s)
    try:
        pid = int(p["pid"].read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return None
    return pid if "kafka.Kafka" in cmdline and str(p["props"]) in cmdline and processes.alive(pid) else None


def _format(s: Settings, java: str) -> None:
    """Format empty storage (storage that is formatted already is left as it is). No login is stored here: admin
    logs in with PLAIN, and everyone else's SCRAM credential goes in through the Admin API (stack/classroster.py),
    so no password is ever on a command line."""
    p = paths(s)
    if (p["data"] / "meta.properties").exists():
        return
    proc = classprocess.run_private(_java_cmd(s, java, "kafka.tools.StorageTool", "format", "-t",
                                              broker.new_cluster_id(), "-c", str(p["props"]), "--standalone",
                                              "--ignore-formatted", heap="256m"))
    if proc.returncode != 0:
        raise CourseError("Formatting the class broker's storage failed: "
                          + " ".join((proc.stdout + proc.stderr).split())[-600:])


def _logs(s: Settings) -> list[Path]:
    return [paths(s)["stdout"], paths(s)["log"]]


@dataclass
class ClassStatus:
    pid: int | None
    address: str
    port: int
    learners: int = 0

    @property
    def bootstrap(self) -> str:
        return f"{self.address}:{self.port}"

    def line(self) -> str:
        if not self.pid:
            return f"class broker: stopped (would listen on {self.bootstrap})"
        return (f"class broker: running, pid {self.pid}, on {self.bootstrap} (SASL_PLAINTEXT, SCRAM-SHA-512), "
                f"{self.learners} learner login(s)")


def status() -> ClassStatus:
    s = settings()
    p = paths(s)
    address = p["address"].read_text().strip() if p["address"].exists() else HOST
    known = classauth.read_passwords(p["passwords"])
    return ClassStatus(pid=_our_pid(s), address=address, port=ports().client,
                       learners=len([n for n in known if n not in classauth.RESERVED]))


def up(roster_file: str | Path, address: str = HOST, log=print, docker: bool = False) -> ClassStatus:
    """Start the class broker (or, when it runs, make it match the roster); return once the roster's logins, ACLs and
    board topics are on it. ``docker``: start nothing; do it on the broker of docker/class-broker.yaml (a CourseError
    says how to start it). Whatever fails on the way is one CourseError line that says what to do."""
    s, p = settings(), ports()
    paths_ = paths(s)
    roster = classauth.read_roster(Path(roster_file))
    classprocess.make_private(paths_["dir"])
    with locks.exclusive(paths_["lock"]):
        known = classauth.read_passwords(paths_["passwords"])
        passwords = classauth.passwords_for(roster, known)
        classauth.write_passwords(paths_["passwords"], passwords)
        admin = admin_login(s, p)
        pid = _our_pid(s)
        if docker:
            _docker_broker(paths_["docker_env"], address, passwords[classauth.ADMIN], admin)
        elif not pid:
            _start(s, p, address, passwords[classauth.ADMIN], admin, log)
        try:
            changes = grant(roster, passwords, admin, drawn={n for n in roster if n not in known})
            set_quotas(paths_["quotas"], admin, log, docker)
        except CourseError:
            raise
        except Exception as error:  # noqa: BLE001 - a Kafka or OS error here is the broker's state: one line
            raise classprocess.not_ready(f"answered, then failed while it was being set up "
                                         f"({type(error).__name__}: {' '.join(str(error).split())[:160]})",
                                         _logs(s)) from None
        write_join_tokens(paths_["tokens"], f"{address}:{p.client}", roster, passwords)
        classprocess.make_private(paths_["dir"])  # what this run wrote too (the pid, the address, the lock)
        log(changes.line())
        for line in classlimits.describe():
            log(line)
        log(f"{len(roster)} learner login(s) and their ACLs in place; join tokens in {paths_['tokens']}")
    return status()


def _start(s: Settings, p: Ports, address: str, admin_password: str, admin: KafkaLogin, log) -> None:
    """Start the broker from the course's jars and wait until it answers the admin login."""
    paths_ = paths(s)
    for host, port in ((address, p.client), (address, p.flaky), (HOST, p.controller), (HOST, p.internal)):
        if not _free(host, port):
            raise CourseError(f"Port {port} is taken by another program, so the class broker cannot start. "
                              f"Stop that program (`ss -ltnp | grep {port}`), or move the class broker with "
                              f"`export DELIVERYLAB_CLASS_PORT={p.client + 1000}`, then run the command again.")
    from .java import require_java

    java = require_java()
    jars.jars("kafka")
    jars.class_policy_jar(log)
    classauth.write_secret_file(paths_["props"], server_properties(s, address, p, admin_password))
    classauth.write_secret_file(paths_["log4j"], broker.LOG4J2.format(log=paths_["log"]))
    paths_["address"].write_text(address + "\n")
    _format(s, java)
    pid = classprocess.start(_java_cmd(s, java, "kafka.Kafka", str(paths_["props"])), paths_["stdout"])
    paths_["pid"].write_text(f"{pid}\n")
    log(f"starting the class broker (pid {pid}) on {address}:{p.client} ...")
    classprocess.wait_ready(pid, lambda: kafka.answers(admin.broker, timeout_s=1.0, login=admin), _logs(s))


def _docker_broker(env_file: Path, address: str, admin_password: str, admin: KafkaLogin) -> None:
    """The compose file's variables in a 0600 file; the broker it starts must answer the admin login."""
    try:
        policy = jars.class_policy_jar(log=lambda m: None)
    except CourseError as missing:
        raise CourseError(f"The class broker's topic policy is compiled here, from the course's jars, and mounted "
                          f"into the container: {missing}") from None
    classauth.write_secret_file(env_file, f"DELIVERYLAB_CLASS_ADDRESS={address}\n"
                                          f"DELIVERYLAB_CLASS_ADMIN_PASSWORD={admin_password}\n"
                                          f"DELIVERYLAB_CLASS_POLICY_JAR={policy}\n")
    if not kafka.answers(admin.broker, timeout_s=3, login=admin):
        raise CourseError(f"No class broker answers the admin login on {admin.broker} yet. Start it with `docker compose "
                          f"--env-file {env_file} -f docker/class-broker.yaml up -d`, wait until `docker compose -f "
                          "docker/class-broker.yaml ps` says healthy, then run this command again.")


def _free(address: str, port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError:
            return False
    return True


def write_join_tokens(path: Path, bootstrap: str, roster: list[str], passwords: dict[str, str]) -> None:
    lines = [f"# one line per learner: `python -m deliverylab workshop join <token>`; keep this file to yourself"]
    lines += [f"{name}\t{classauth.join_token(bootstrap, name, passwords[name])}" for name in roster]
    lines.append(f"# the board: {classauth.BOARD}\t{classauth.join_token(bootstrap, classauth.BOARD, passwords[classauth.BOARD])}")
    classauth.write_secret_file(path, "\n".join(lines) + "\n")


def grant(roster: list[str], passwords: dict[str, str], admin: KafkaLogin,
          drawn: set[str] = frozenset()) -> classroster.Changes:
    """As admin: the broker's logins, ACLs and board topics made the roster's (stack/classroster.py); ``drawn``:
    the learners whose password was issued just now. What changed."""
    with kafka.admin(admin.broker, login=admin) as client:
        return classroster.reconcile(client, roster, passwords, drawn)


def set_quotas(record: Path, admin: KafkaLogin, log=print, docker: bool = False) -> None:
    """As admin: every learner's quota and admin's and board's exemption (stack/classquota.py), unless ``record``
    says this broker's storage has them already. With ``--docker`` and no Java here, one line says how to."""
    with kafka.admin(admin.broker, login=admin) as client:
        cluster_id = client.describe_cluster()["cluster_id"]
    if classquota.recorded(record) == classquota.wanted(cluster_id):
        return
    from .java import require_java

    try:
        java = require_java()
        jars.jars("kafka")
    except CourseError as missing:
        if not docker:
            raise
        log(f"quotas NOT set (they need Kafka's kafka-configs, run from the course's jars): {missing} Then run "
            "`stack up --class ... --docker` again.")
        return
    classquota.apply(java, str(jars.classpath_dir("kafka") / "*"), admin, cluster_id, record, log)


def down(log=print) -> bool:
    """Stop the class broker, waiting as long as it makes progress closing its logs (stack/classprocess.py)."""
    s = settings()
    if not paths(s)["dir"].exists():
        return False
    with locks.exclusive(paths(s)["lock"]):
        pid = _our_pid(s)
        if not pid:
            return False
        log(f"stopping the class broker (pid {pid}) ...")
        classprocess.stop(pid, _logs(s), log)
        paths(s)["pid"].unlink(missing_ok=True)
        return True


def wipe(log=print) -> None:
    """Stop the class broker and delete its storage and every issued password (new join tokens next time)."""
    import shutil

    down(log)
    s = settings()
    shutil.rmtree(paths(s)["data"], ignore_errors=True)
    for name in ("passwords", "tokens", "address", "docker_env", "quotas"):
        paths(s)[name].unlink(missing_ok=True)
    log("class broker storage and passwords deleted; `stack up --class` starts anew (new join tokens)")
