"""Where the course keeps its state, which ports it uses, and who the learner is.

Everything can be overridden with an environment variable, so several learners can
share one broker and a busy port can be moved without editing code:

    DELIVERYLAB_LEARNER          learner id used to prefix topics and folders (default: OS user)
    DELIVERYLAB_KAFKA_PORT       broker port on 127.0.0.1 (default 9092); the broker's second
                                 listener (FLAKY, reached through the flaky-network proxy) uses
                                 the two ports after the controller's: 9094, and 9095 for the proxy
    DELIVERYLAB_CONTROLLER_PORT  KRaft controller port on 127.0.0.1 (default 9093)
    DELIVERYLAB_JUPYTER_PORT     JupyterLab port on 127.0.0.1 (default 8888)
    DELIVERYLAB_STATE            folder for jars, broker data and lesson state (default .state/)
    DELIVERYLAB_JARS             folder for the resolved JVM jars (default <state>/jars; the
                                 Docker image keeps them outside the state volume)
    DELIVERYLAB_SPARK_MASTER     the Spark master of every SparkSession the course builds (the
                                 kernel's and every crash-lab driver's): local[2] by default, or
                                 a standalone cluster such as spark://127.0.0.1:7077, the one
                                 `python -m deliverylab cluster up` starts (stack/cluster.py)
    DELIVERYLAB_REDUCED          1 under `make test`: the capstone's guarantee matrix runs a
                                 sample of its variants (m08/matrix.py SAMPLE), so the suite
                                 keeps its time; unset (a learner's run): every variant
    DELIVERYLAB_STANDBY_WARM_UP  1 (default): a standby crash-lab driver runs a Delta write, a
                                 Parquet write and a stream once before it is needed, so a
                                 restart is 1-2 s quicker on an idle machine; it costs 3-4
                                 CPU-seconds a driver. 0 under `make test`, whose two cores are
                                 always busy: there the warm-up only takes CPU from the tests
    DELIVERYLAB_IDLE_RELEASE_MINUTES  minutes a lesson's kernel may sit idle before it stops its
                                 Spark session and pipelines to give their memory back (default
                                 10; 0: never; stack/idlesession.py)

Shared-broker mode (a workshop): one setting points the course at an instructor's broker,
and the course then never starts, stops or wipes a broker of its own:

    DELIVERYLAB_BROKER           host:port of the shared broker, e.g. 192.168.1.20:9092
    DELIVERYLAB_WORKSHOP_FILE    where the workshop file lives (default workshop.ini in the
                                 project; `python -m deliverylab workshop join` writes it), an
                                 alternative to DELIVERYLAB_BROKER and DELIVERYLAB_LEARNER:

        [workshop]
        broker = 192.168.1.20:9092
        learner = ada
        password = ...            (a class broker with logins: `workshop join <token>` writes it)

    DELIVERYLAB_KAFKA_PASSWORD   a class broker with logins (stack/classauth.py): the password of
    DELIVERYLAB_KAFKA_USER       DELIVERYLAB_KAFKA_USER (default: the learner id) on the shared broker

The environment wins over the file. A password in the file belongs to the file's broker: with
DELIVERYLAB_BROKER pointing elsewhere (lesson 09's local cluster), no client sends it. On a shared broker the FLAKY listener is two ports above
the broker's port and advertises the learner's own proxy on 127.0.0.1, one port above that
(9092: listener 9094, proxy 9095, as on the course's own broker).
"""
from __future__ import annotations

import configparser
import getpass
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"

#: Every Kafka topic the course creates starts with this, so `stack reset` can delete
#: the course's own topics and nothing else. A learner's topics start with
#: ``xo.<learner>.``, a lesson's with ``xo.<learner>.<lesson>.``.
TOPIC_PREFIX = "xo."

#: The class board's topic (deliverylab/workshop/). Learner ids never contain "_" (see
#: _safe_name), so no learner's prefix, and no learner's reset, can ever match it.
CLASS_TOPIC = TOPIC_PREFIX + "_class.board"

WORKSHOP_FILE = "workshop.ini"
WORKSHOP_KEYS = ("broker", "learner", "password")


class CourseError(RuntimeError):
    """An error whose message already says what to do. The CLI prints it without a traceback,
    and so does a notebook: the message is the whole story (no stack of course internals)."""

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead of a traceback
        return [f"{type(self).__name__}: {self}"]


def project_root() -> Path:
    """The cloned repository: the folder holding requirements.txt and deliverylab/."""
    here = Path(__file__).resolve().parent.parent
    if (here / "requirements.txt").exists():
        return here
    cwd = Path.cwd()
    for folder in (cwd, *cwd.parents):
        if (folder / "requirements.txt").exists() and (folder / "deliverylab").is_dir():
            return folder
    return here


def _port(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    if not raw.isdigit() or not 1024 <= int(raw) <= 65535:
        raise CourseError(f"{name}={raw!r} is not a usable port. Set it to a number between 1024 and 65535, or unset it.")
    return int(raw)


def _safe_name(text: str) -> str:
    """Lower-case letters, digits and dashes: legal in Kafka topic names and folder names."""
    cleaned = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return cleaned or "learner"


def learner_id(text: str) -> str:
    """The learner id the course makes of a name (``"Ada L."`` -> ``"ada-l"``), as in the topic names."""
    return _safe_name(text)


def parse_broker_address(text: str, source: str) -> str:
    """``host:port`` (or several, comma-separated) of a shared broker, checked; a CourseError otherwise."""
    addresses = [part.strip() for part in text.split(",") if part.strip()]
    for address in addresses or [text]:
        host, colon, port = address.rpartition(":")
        if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise CourseError(f"{source} is {text!r}, which is not a broker address. Give it as host:port, "
                              "for example 192.168.1.20:9092 (ask your instructor for theirs).")
    return ",".join(addresses)


DEFAULT_SPARK_MASTER = "local[2]"


def parse_spark_master(text: str, source: str = "DELIVERYLAB_SPARK_MASTER") -> str:
    """``local``, ``local[N]``, ``local[*]`` or ``spark://host:port`` (several masters comma-separated,
    as Spark accepts for a standby master), checked; a CourseError otherwise."""
    text = text.strip()
    if not text:
        return DEFAULT_SPARK_MASTER
    if re.fullmatch(r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?", text):
        return text
    if text.startswith("spark://"):
        addresses = text[len("spark://"):].split(",")
        if all(re.fullmatch(r"[A-Za-z0-9.\-]+:[0-9]{1,5}", a) and 1 <= int(a.rpartition(":")[2]) <= 65535
               for a in addresses):
            return text
    raise CourseError(f"{source} is {text!r}, which is not a Spark master this course can use. Give local[2] "
                      "(the default: Spark inside the notebook's process) or a standalone cluster as "
                      "spark://host:port, e.g. spark://127.0.0.1:7077 after `python -m deliverylab cluster up`.")


def parse_flag(text: str, source: str, default: bool = False) -> bool:
    """``1``/``0`` as a bool (unset or empty: ``default``); anything else says what the setting takes."""
    value = text.strip().lower()
    if not value:
        return default
    if value in ("0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise CourseError(f"{source}={text!r} is not a flag: set it to 1 (on) or 0 (off), or unset it.")


def workshop_file(root: Path) -> Path:
    return Path(os.environ.get("DELIVERYLAB_WORKSHOP_FILE") or root / WORKSHOP_FILE)


def read_workshop_file(path: Path) -> dict[str, str]:
    """The ``[workshop]`` settings of the workshop file ({} when there is none)."""
    if not path.is_file():
        return {}
    parser = configparser.ConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as error:
        raise CourseError(f"{path} is not a valid workshop file ({error.message.splitlines()[0]}). "
                          "It holds a [workshop] line, then `broker = host:port` and `learner = your-name`.") from None
    values = dict(parser["workshop"]) if parser.has_section("workshop") else {}
    unknown = sorted(set(values) - set(WORKSHOP_KEYS))
    if unknown:
        raise CourseError(f"{path} has unknown settings {unknown}; a workshop file knows only "
                          f"{', '.join(WORKSHOP_KEYS)}. Is one misspelt?")
    return {key: value.strip() for key, value in values.items() if value.strip()}


@dataclass(frozen=True)
class KafkaLogin:
    """A SASL/SCRAM login on one shared broker (a class broker with logins, stack/classauth.py)."""
    broker: str
    username: str
    password: str = field(repr=False)
    #: SCRAM-SHA-512 for learners and the board; PLAIN on the class broker's loopback listener (admin)
    mechanism: str = "SCRAM-SHA-512"


@dataclass(frozen=True)
class Settings:
    root: Path
    state: Path
    learner: str
    kafka_port: int
    controller_port: int
    jupyter_port: int
    #: host:port of an instructor's broker (shared-broker mode), or None: the course's own broker
    shared_broker: str | None = None
    #: where the shared broker and the learner id were set (for messages that say what to change)
    shared_source: str = ""
    learner_source: str = "your OS user name"
    jars_dir: Path | None = None
    #: the Spark master URL (DELIVERYLAB_SPARK_MASTER): local[N] or spark://host:port[,host:port]
    spark_master: str = DEFAULT_SPARK_MASTER
    #: DELIVERYLAB_REDUCED=1 (make test): reduced runs where a lesson offers them
    reduced: bool = False
    #: DELIVERYLAB_STANDBY_WARM_UP: does a standby driver warm up before it is needed?
    standby_warm_up: bool = True
    #: the login on the shared broker, when it has logins (None: the course's own broker, or a class broker without)
    kafka_login: KafkaLogin | None = None

    @property
    def on_cluster(self) -> bool:
        """True when Spark runs its tasks on a standalone cluster's executors, not in the driver's JVM."""
        return self.spark_master.startswith("spark://")

    @property
    def shared(self) -> bool:
        """True when the course uses an instructor's broker and must never start or stop one itself."""
        return self.shared_broker is not None

    @property
    def bootstrap(self) -> str:
        return self.shared_broker or f"{HOST}:{self.kafka_port}"

    @property
    def broker_host(self) -> str:
        return self.bootstrap.split(",")[0].rpartition(":")[0]

    @property
    def flaky_listener_port(self) -> int:
        """The broker's FLAKY listener, which advertises the proxy's port (see stack/flaky.py)."""
        if self.shared_broker:
            return int(self.bootstrap.split(",")[0].rpartition(":")[2]) + 2
        return self.controller_port + 1

    @property
    def flaky_proxy_port(self) -> int:
        """The flaky-network proxy's port on 127.0.0.1: it always runs on the learner's machine."""
        return self.flaky_listener_port + 1 if self.shared_broker else self.controller_port + 2

    @property
    def jars(self) -> Path:
        return self.jars_dir or self.state / "jars"

    @property
    def kafka_dir(self) -> Path:
        return self.state / "kafka"

    @property
    def lessons_dir(self) -> Path:
        return self.state / "lessons"

    def learner_prefix(self, learner: str | None = None) -> str:
        """``xo.<learner>.``: every topic of that learner (by default: this one) starts with it."""
        return f"{TOPIC_PREFIX}{learner or self.learner}."

    def lesson_prefix(self, lesson: str) -> str:
        """``xo.<learner>.<lesson>.``: every topic of one lesson of this learner starts with it."""
        return f"{self.learner_prefix()}{lesson}."

    def owns(self, prefix: str) -> bool:
        """Is everything under this topic prefix this learner's own (so a reset may delete it)?"""
        return prefix.startswith(self.learner_prefix())


def settings() -> Settings:
    root = project_root()
    state = Path(os.environ.get("DELIVERYLAB_STATE") or root / ".state").resolve()
    path = workshop_file(root)
    workshop = read_workshop_file(path)
    if os.environ.get("DELIVERYLAB_LEARNER"):
        learner, learner_source = os.environ["DELIVERYLAB_LEARNER"], "DELIVERYLAB_LEARNER"
    elif workshop.get("learner"):
        learner, learner_source = workshop["learner"], f"{path.name} (learner =)"
    else:
        learner, learner_source = getpass.getuser(), "your OS user name"
    if os.environ.get("DELIVERYLAB_BROKER", "").strip():
        source = "DELIVERYLAB_BROKER"
        shared = parse_broker_address(os.environ["DELIVERYLAB_BROKER"], source)
    elif workshop.get("broker"):
        source = f"{path.name} (broker =)"
        shared = parse_broker_address(workshop["broker"], f"broker in {path}")
    else:
        source, shared = "", None
    jars = os.environ.get("DELIVERYLAB_JARS")
    login = _kafka_login(shared, source, workshop, _safe_name(learner))
    return Settings(
        root=root,
        state=state,
        learner=_safe_name(learner),
        kafka_port=_port("DELIVERYLAB_KAFKA_PORT", 9092),
        controller_port=_port("DELIVERYLAB_CONTROLLER_PORT", 9093),
        jupyter_port=_port("DELIVERYLAB_JUPYTER_PORT", 8888),
        shared_broker=shared,
        shared_source=source,
        learner_source=learner_source,
        jars_dir=Path(jars).resolve() if jars else None,
        spark_master=parse_spark_master(os.environ.get("DELIVERYLAB_SPARK_MASTER", "")),
        reduced=parse_flag(os.environ.get("DELIVERYLAB_REDUCED", ""), "DELIVERYLAB_REDUCED"),
        standby_warm_up=parse_flag(os.environ.get("DELIVERYLAB_STANDBY_WARM_UP", ""), "DELIVERYLAB_STANDBY_WARM_UP",
                                   default=True),
        kafka_login=login,
    )


def _kafka_login(shared: str | None, source: str, workshop: dict[str, str], learner: str) -> KafkaLogin | None:
    """The environment's password goes with the shared broker; the file's only with the file's own broker."""
    password = os.environ.get("DELIVERYLAB_KAFKA_PASSWORD", "")
    if not password and source != "DELIVERYLAB_BROKER":
        password = workshop.get("password", "")
    if not shared or not password:
        return None
    return KafkaLogin(broker=shared, username=os.environ.get("DELIVERYLAB_KAFKA_USER") or learner, password=password)
