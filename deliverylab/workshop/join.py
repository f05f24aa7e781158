"""``python -m deliverylab workshop join|leave|status``: a learner joins a class broker in one line.

    python -m deliverylab workshop join 192.168.1.20:9092 --learner ada
    python -m deliverylab workshop join xo1.eyJicm9rZXIi...     # a class broker with logins

checks that the broker answers and that no other machine uses the id, then writes the
workshop file (``workshop.ini``, see config.py). A join token (stack/classauth.py: the instructor's
``stack up --class`` prints one per learner) carries the address, the learner id and the learner's
password; the password is checked with the broker and kept in the file, readable only by its owner. The next setup cell uses the class broker;
nothing needs a restart. ``leave`` deletes the file: the course's own broker is used again.
"""
from __future__ import annotations

import argparse
import os

from ..config import CourseError, learner_id, parse_broker_address, settings, workshop_file
from . import events, feed, presence


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m deliverylab workshop",
                                     description="Use an instructor's Kafka broker (shared-broker mode), or stop using it.")
    sub = parser.add_subparsers(dest="action", required=True)
    join = sub.add_parser("join", help="use the class broker at ADDRESS (writes workshop.ini)")
    join.add_argument("address", help="host:port of the class broker, or the join token (xo1....) your instructor gave you")
    join.add_argument("--learner", help="your learner id in the class (default: the current one)")
    sub.add_parser("leave", help="delete workshop.ini: use the course's own broker again")
    sub.add_parser("status", help="which broker and which learner id the course uses now")
    return parser


def join(address: str, learner: str | None, log=print) -> None:
    from ..stack import classauth, kafka

    login = None
    if classauth.is_join_token(address):
        login = classauth.parse_join_token(address)
        if learner and learner_id(learner) != login.username:
            raise CourseError(f"That join token is for learner {login.username!r}, not {learner_id(learner)!r}: leave out "
                              "--learner (the token names you), or ask your instructor for your own token.")
        address, learner = login.broker, login.username
    address = parse_broker_address(address, "the address")
    name = learner_id(learner) if learner else settings().learner
    if not kafka.answers(address, login=login):  # a refused password is a CourseError that says what to do
        raise CourseError(f"No Kafka broker answers at {address}. Check the address with your instructor and that "
                          "this machine is on the class network, then try again.")
    found = presence.twins(feed.read_events(address, login=login, learner=name), name, events.machine_id())
    if found:
        hosts = ", ".join(sorted({item.get("host") or "?" for item in found.values()}))
        raise CourseError(f"The learner id {name!r} is already in use on that broker by another machine ({hosts}). "
                          "Pick another one with --learner.")
    path = workshop_file(settings().root)
    text = (f"# written by `python -m deliverylab workshop join`; delete it to leave the class\n"
            f"[workshop]\nbroker = {address}\nlearner = {name}\n")
    if login is not None:
        classauth.write_secret_file(path, text + f"password = {login.password}\n")  # 0600: only you may read it
    else:
        path.write_text(text, encoding="utf-8")
    log(f"joined the class broker at {address} as learner {name!r}{' with your login' if login else ''} "
        f"(saved in {path.name})")
    log("run your lesson's setup cell again to use it; `python -m deliverylab workshop leave` undoes this")
    for variable in ("DELIVERYLAB_BROKER", "DELIVERYLAB_LEARNER", "DELIVERYLAB_KAFKA_PASSWORD"):
        if os.environ.get(variable):
            log(f"note: {variable} is set in this environment and wins over {path.name}; unset it to use the file")


def leave(log=print) -> None:
    path = workshop_file(settings().root)
    if path.exists():
        path.unlink()
        log(f"deleted {path.name}: the course uses its own broker again (re-run your setup cell)")
    else:
        log(f"no {path.name} here: nothing to leave")
    if os.environ.get("DELIVERYLAB_BROKER"):
        log("note: DELIVERYLAB_BROKER is still set in this environment, so the shared broker is still used")


def status(log=print) -> None:
    s = settings()
    if s.shared:
        log(f"broker   shared broker at {s.bootstrap} (set by {s.shared_source})")
    else:
        log(f"broker   the course's own broker on {s.bootstrap}")
    log(f"learner  {s.learner} (from {s.learner_source})")
    if s.kafka_login is not None:
        log(f"login    {s.kafka_login.username} on {s.kafka_login.broker} ({s.kafka_login.mechanism}; password set)")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.action == "join":
        join(args.address, args.learner)
    elif args.action == "leave":
        leave()
    else:
        status()
    return 0
