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
"""
from __future__ import annotations

import getpass
import os
import re
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"

#: Every Kafka topic the course creates starts with this, so `stack reset` can delete
#: the course's own topics and nothing else.
TOPIC_PREFIX = "xo."


class CourseError(RuntimeError):
    """An error whose message already says what to do. The CLI prints it without a traceback."""


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


@dataclass(frozen=True)
class Settings:
    root: Path
    state: Path
    learner: str
    kafka_port: int
    controller_port: int
    jupyter_port: int

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.kafka_port}"

    @property
    def flaky_listener_port(self) -> int:
        """The broker's FLAKY listener, which advertises the proxy's port (see stack/flaky.py)."""
        return self.controller_port + 1

    @property
    def flaky_proxy_port(self) -> int:
        return self.controller_port + 2

    @property
    def jars(self) -> Path:
        return self.state / "jars"

    @property
    def kafka_dir(self) -> Path:
        return self.state / "kafka"

    @property
    def lessons_dir(self) -> Path:
        return self.state / "lessons"

    def learner_prefix(self) -> str:
        return f"{TOPIC_PREFIX}{self.learner}."


def settings() -> Settings:
    root = project_root()
    state = Path(os.environ.get("DELIVERYLAB_STATE") or root / ".state").resolve()
    learner = _safe_name(os.environ.get("DELIVERYLAB_LEARNER") or getpass.getuser())
    return Settings(
        root=root,
        state=state,
        learner=learner,
        kafka_port=_port("DELIVERYLAB_KAFKA_PORT", 9092),
        controller_port=_port("DELIVERYLAB_CONTROLLER_PORT", 9093),
        jupyter_port=_port("DELIVERYLAB_JUPYTER_PORT", 8888),
    )
