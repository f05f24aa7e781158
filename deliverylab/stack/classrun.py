"""Run a command as a learner who joined a class broker with logins: the broker is the test's own, then stopped.

    python -m deliverylab.stack.classrun --learner ada -- python -m pytest --nbval-lax notebooks/01-*.ipynb

``make test`` runs lessons 01, 04 and 06 this way under nbval: their checked outputs must be the ones stored
from the course's own broker while every Kafka client logs in as ada and Kafka enforces her ACLs and quotas.
What a learner in a room does, step by step, with nothing shared with the course's broker or its ``.state``
(but ``.state/executed``, where nbval's copies go), and the course's own broker moved to ports where nothing
listens (DELIVERYLAB_KAFKA_PORT, _CONTROLLER_PORT): code that quietly used it instead of the class broker
fails here, although the course's broker runs for the other tests:

1. the instructor's ``stack up --class class.txt --address 127.0.0.1`` (stack/classbroker.py), with a roster
   of one learner, in a temporary state folder, on free ports (DELIVERYLAB_CLASS_PORT) below Linux's
   ephemeral range and apart from the tests' own class brokers (tests/stack/conftest.py, workshop/roomload.py);
2. the learner's ``workshop join <token>`` with the token the instructor hands out, which writes a workshop
   file (0600) of its own (DELIVERYLAB_WORKSHOP_FILE);
3. the command, with that workshop file: the course's settings name the class broker and ada's login;
4. ``stack down --class`` and the temporary folder removed, whatever the command did. The exit status is
   the command's (or the first step's that failed).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..config import HOST, settings

#: ports of the class broker started here: the first free block of PORT_STEP from PORT_FIRST
PORT_FIRST, PORT_LAST, PORT_STEP = 19300, 19400, 10
#: the course's own broker, for the learner: ports of the block where nothing listens (classbroker.Ports uses +0..+6)
NOWHERE = 7
#: settings this run's learner must not inherit from the caller (they would name another broker or login)
_CALLERS_BROKER = ("DELIVERYLAB_BROKER", "DELIVERYLAB_LEARNER", "DELIVERYLAB_KAFKA_USER",
                   "DELIVERYLAB_KAFKA_PASSWORD", "DELIVERYLAB_WORKSHOP_FILE")


def free_class_port() -> int:
    from . import broker, classbroker

    for base in range(PORT_FIRST, PORT_LAST, PORT_STEP):
        if all(broker.port_is_free(p) for p in (*classbroker.Ports(base).bound(), classbroker.Ports(base).flaky_proxy,
                                                base + NOWHERE, base + NOWHERE + 1)):
            return base
    raise SystemExit(f"classrun: no free block of ports between {PORT_FIRST} and {PORT_LAST}")


def _without_callers_broker(environ: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k not in _CALLERS_BROKER}


def learner_env(environ: dict[str, str], base: int, workshop: Path) -> dict[str, str]:
    """The command's environment: the caller's, without its broker settings, with the learner's workshop file and
    the course's own broker on ports of the block where nothing listens."""
    return {**_without_callers_broker(environ), "DELIVERYLAB_KAFKA_PORT": str(base + NOWHERE), "DELIVERYLAB_CONTROLLER_PORT": str(base + NOWHERE + 1),
            "DELIVERYLAB_WORKSHOP_FILE": str(workshop)}


def _course(env: dict[str, str], *args: str) -> int:
    return subprocess.call([sys.executable, "-m", "deliverylab", *args], env=env)


def run(learner: str, command: list[str]) -> int:
    folder = Path(tempfile.mkdtemp(prefix="classrun-"))
    base = free_class_port()
    instructor = {**_without_callers_broker(dict(os.environ)), "DELIVERYLAB_STATE": str(folder / "instructor-state"),
                  "DELIVERYLAB_JARS": str(settings().jars), "DELIVERYLAB_CLASS_PORT": str(base)}
    learners = learner_env(dict(os.environ), base, folder / "workshop.ini")
    roster = folder / "class.txt"
    roster.write_text(f"# classrun's room\n{learner}\n", encoding="utf-8")
    try:
        status = _course(instructor, "stack", "up", "--class", str(roster), "--address", HOST)
        if status:
            return status
        tokens = folder / "instructor-state" / "class-broker" / "join-tokens.txt"
        token = next(word for line in tokens.read_text().splitlines() if not line.startswith("#")
                     for word in line.split() if word.startswith("xo1."))
        status = _course(learners, "workshop", "join", token)
        if status:
            return status
        print(f"classrun: {' '.join(command)}  (as {learner} on the class broker at {HOST}:{base})", flush=True)
        return subprocess.call(command, env=learners)
    finally:
        _course(instructor, "stack", "down", "--class")
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab.stack.classrun", description=__doc__.splitlines()[0])
    parser.add_argument("--learner", default="ada", help="the learner the command runs as (default: ada)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    return run(args.learner, command)


if __name__ == "__main__":
    sys.exit(main())
