"""Who may do what on a class broker: the roster, one SCRAM password each, join tokens, prefixed ACLs.

Pure functions (no broker, no network): stack/classbroker.py uses them to format and start the class
broker and to grant the ACLs, ``workshop join`` to read a learner's token, stack/kafka.py to log clients in.

Identities
    admin      the instructor: a super user (``super.users``), also the broker's own identity on its
               loopback listeners (INTERNAL, CONTROLLER), where it logs in with PLAIN; it has no SCRAM login
    board      the class board: may only read each roster learner's board topic (:func:`board_topic`)
    <learner>  one per line of the roster (class.txt): may create, write, read, describe, configure and
               delete topics whose names start with ``xo.<learner>.`` (config.Settings.learner_prefix), use
               consumer groups and transactional ids with that prefix, add partitions to one topic (lesson 02's
               :data:`GROWN_TOPIC`), and write and read her own board topic ``xo._board.<learner>``; nothing
               else. Every lesson already names its topics, groups and transactional ids
               ``xo.<learner>.<lesson>.*`` (lesson.py, modules/m06/harness.py).

A learner's board topic is outside her prefix, so no reset of hers ever deletes it, and she may write it but
not create, configure or delete it: admin creates it (one partition, the broker's own timestamps) when
``stack up --class`` adds her. Only she can write it, so the board knows every event there is hers.

Passwords travel as SCRAM-SHA-512 over SASL_PLAINTEXT: the broker never receives a password in clear,
but record contents cross the network unencrypted.
"""
from __future__ import annotations

import base64
import json
import os
import re
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..config import TOPIC_PREFIX, CourseError, KafkaLogin, learner_id

MECHANISM = "SCRAM-SHA-512"
PROTOCOL = "SASL_PLAINTEXT"
ADMIN = "admin"
BOARD = "board"
RESERVED = (ADMIN, BOARD)
TOKEN_PREFIX = "xo1."
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


# --------------------------------------------------------------------------- the roster and the passwords


def parse_roster(text: str, source: str = "class.txt") -> list[str]:
    """Learner ids, one per line (blank lines and ``#`` comments skipped), checked; a CourseError names the line."""
    names: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}, line {number}"
        if not _NAME.fullmatch(line) or line.endswith("-"):
            raise CourseError(f"{where}: {line!r} is not a learner id. Learner ids are lower-case letters, digits and "
                              f"dashes (at most 63), e.g. {learner_id(line)!r}; correct the line and run the command again.")
        if line in RESERVED:
            raise CourseError(f"{where}: {line!r} is the name of the class broker's own {line} identity; "
                              "give this learner another id (e.g. with their initial).")
        if line in names:
            raise CourseError(f"{where}: {line!r} is already on line {_line_of(text, line)}; each learner once.")
        names.append(line)
    if not names:
        raise CourseError(f"{source} names no learner. Write one learner id per line (lower-case letters, digits "
                          "and dashes), then run the command again.")
    return names


def _line_of(text: str, name: str) -> int:
    return next(n for n, raw in enumerate(text.splitlines(), start=1) if raw.split("#", 1)[0].strip() == name)


def read_roster(path: Path) -> list[str]:
    if not path.is_file():
        raise CourseError(f"There is no roster at {path}. Write one learner id per line (e.g. ada), then run the "
                          "command again.")
    return parse_roster(path.read_text(encoding="utf-8"), str(path))


def new_password() -> str:
    """24 random URL-safe characters (144 bits): no quote, comma, bracket or equals sign, so it needs no
    escaping in a JAAS line, a --add-scram argument or a join token."""
    return secrets.token_urlsafe(18)


def passwords_for(roster: list[str], known: dict[str, str] | None = None) -> dict[str, str]:
    """A password for admin, board and every learner: the ones already issued are kept, the others drawn."""
    known = dict(known or {})
    return {name: known.get(name) or new_password() for name in (*RESERVED, *roster)}


def write_secret_file(path: Path, text: str) -> None:
    """Write ``text`` to a file only its owner may read or write (0600), also when it already existed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def write_passwords(path: Path, passwords: dict[str, str]) -> None:
    write_secret_file(path, json.dumps(passwords, indent=1, sort_keys=True) + "\n")


def read_passwords(path: Path) -> dict[str, str]:
    """The issued passwords ({} when none were issued yet); refused when others may read the file."""
    if not path.exists():
        return {}
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise CourseError(f"{path} holds the class's passwords and others may read it (mode {mode:o}). "
                          f"Run `chmod 600 {path}`, then the command again.")
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise CourseError(f"{path} is not the class broker's password file (it is not JSON). Move it away; "
                          "the next `stack up --class` issues new passwords (and new join tokens).") from None
    return {str(k): str(v) for k, v in found.items()}


# --------------------------------------------------------------------------- join tokens


def join_token(broker: str, username: str, password: str) -> str:
    """One line for a learner: the class broker's address, their id and their password (``xo1.`` + base64)."""
    body = json.dumps({"broker": broker, "learner": username, "password": password}, separators=(",", ":"))
    return TOKEN_PREFIX + base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")


def is_join_token(text: str) -> bool:
    return text.strip().startswith(TOKEN_PREFIX)


def parse_join_token(text: str) -> KafkaLogin:
    """The login a join token carries; a CourseError that says what to do when it is not one."""
    body = text.strip()[len(TOKEN_PREFIX):]
    try:
        found = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        login = KafkaLogin(broker=str(found["broker"]), username=str(found["learner"]), password=str(found["password"]))
    except (ValueError, KeyError, TypeError):
        raise CourseError("That join token is damaged (a character missing or changed?). Copy the whole line your "
                          "instructor gave you, starting with xo1., and run `workshop join` again.") from None
    if not _NAME.fullmatch(login.username) or not login.password:
        raise CourseError("That join token names no valid learner. Ask your instructor for yours again.")
    return login


# --------------------------------------------------------------------------- client settings


def jaas_config(username: str, password: str, module: str = SCRAM_LOGIN_MODULE) -> str:
    return f'{module} required username="{username}" password="{password}";'


def client_options(login: KafkaLogin | None) -> dict[str, str]:
    """kafka-python keyword arguments for ``login`` ({} without one: the course's own broker needs none)."""
    if login is None:
        return {}
    return {"security_protocol": PROTOCOL, "sasl_mechanism": login.mechanism,
            "sasl_plain_username": login.username, "sasl_plain_password": login.password}


def spark_options(login: KafkaLogin | None) -> dict[str, str]:
    """Options of Spark's Kafka source and sink (``.option(k, v)``) for ``login`` ({} without one).

    ``groupIdPrefix``: Spark's Kafka source names its consumer groups ``spark-kafka-source-<uuid>-...``
    (streaming) or ``spark-kafka-relation-...`` (batch) unless given a prefix (KafkaSourceProvider, Spark 4.2's
    spark-sql-kafka-0-10 jar); the ACLs allow the learner's groups only (xo.<learner>.). The sink ignores it."""
    if login is None:
        return {}
    module = PLAIN_LOGIN_MODULE if login.mechanism == "PLAIN" else SCRAM_LOGIN_MODULE
    return {"kafka.security.protocol": PROTOCOL, "kafka.sasl.mechanism": login.mechanism,
            "kafka.sasl.jaas.config": jaas_config(login.username, login.password, module),
            "groupIdPrefix": learner_prefix(login.username)}


# --------------------------------------------------------------------------- ACLs


@dataclass(frozen=True)
class Rule:
    """One ALLOW ACL: ``principal`` may ``operation`` on the ``resource`` named (or prefixed by) ``name``."""
    principal: str
    resource: str  # TOPIC, GROUP, TRANSACTIONAL_ID, CLUSTER
    name: str
    pattern: str  # LITERAL or PREFIXED
    operation: str  # READ, WRITE, CREATE, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS, ...
    host: str = field(default="*")


#: on her own topics a learner may do what the lessons do: create, produce, consume, describe,
#: change retention (lesson 07), delete records (DeleteRecords is DELETE) and delete the topic (reset)
TOPIC_OPERATIONS = ("CREATE", "WRITE", "READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")
#: consumer groups: join and commit (READ, which implies DESCRIBE), and delete them (a lesson's reset)
GROUP_OPERATIONS = ("READ", "DESCRIBE", "DELETE")
#: transactional ids: a transactional producer needs WRITE and DESCRIBE on its id (module 06's relay)
TRANSACTIONAL_ID_OPERATIONS = ("WRITE", "DESCRIBE")
#: her board topic: her kernel sends its results there and reads it back for twin ids (workshop/)
BOARD_TOPIC_OPERATIONS = ("WRITE", "READ", "DESCRIBE")
#: the one topic of hers that may get more partitions (CreatePartitions needs ALTER on the topic, and Kafka's
#: topic policy never sees that request): lesson 02's, which adds one partition (modules/m02/limits.py)
GROWN_TOPIC = "02-anatomy.grown"
#: every learner's board topic starts with this; no learner's prefix can (learner ids never start with "_")
BOARD_TOPIC_PREFIX = f"{TOPIC_PREFIX}_board."


def learner_prefix(name: str) -> str:
    """``xo.<name>.``, as config.Settings.learner_prefix makes it."""
    return f"{TOPIC_PREFIX}{name}."


def board_topic(name: str) -> str:
    """``xo._board.<name>``: where learner ``name``'s kernel sends her results for the class board."""
    return f"{BOARD_TOPIC_PREFIX}{name}"


def learner_rules(name: str) -> list[Rule]:
    user, prefix = f"User:{name}", learner_prefix(name)
    return ([Rule(user, "TOPIC", prefix, "PREFIXED", op) for op in TOPIC_OPERATIONS]
            + [Rule(user, "GROUP", prefix, "PREFIXED", op) for op in GROUP_OPERATIONS]
            + [Rule(user, "TRANSACTIONAL_ID", prefix, "PREFIXED", op) for op in TRANSACTIONAL_ID_OPERATIONS]
            + [Rule(user, "TOPIC", prefix + GROWN_TOPIC, "LITERAL", "ALTER")]
            + [Rule(user, "TOPIC", board_topic(name), "LITERAL", op) for op in BOARD_TOPIC_OPERATIONS])


def board_rules(roster: list[str]) -> list[Rule]:
    """The board reads each roster learner's board topic from its beginning, with no consumer group
    (workshop/feed.py), and nothing else: a made-up learner has no topic it could read."""
    return [Rule(f"User:{BOARD}", "TOPIC", board_topic(name), "LITERAL", op)
            for name in roster for op in ("READ", "DESCRIBE")]


def class_rules(roster: list[str]) -> list[Rule]:
    """Every ACL of a class: the board's and each learner's (admin is a super user and needs none)."""
    return board_rules(roster) + [rule for name in roster for rule in learner_rules(name)]


# --------------------------------------------------------------------------- refusals, in one line


_WHAT = {"TOPIC_AUTHORIZATION_FAILED": "this topic", "GROUP_AUTHORIZATION_FAILED": "this consumer group",
         "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "this transactional id",
         "CLUSTER_AUTHORIZATION_FAILED": "this cluster-wide action"}


#: refusals that are a limit of the class broker (stack/classlimits.py), not a missing right
LIMITS = ("POLICY_VIOLATION", "THROTTLING_QUOTA_EXCEEDED")


def refusal_line(code: str, username: str, action: str, resource: str = "", detail: str = "") -> str:
    """What a learner reads when the class broker refuses ``action`` (Kafka's error ``code``); for a limit, the
    broker's own words (``detail``: the topic policy's message names the limit) or the mutation quota's."""
    target = f" {resource}" if resource else ""
    if code in LIMITS:
        from .classlimits import throttled_line

        why = throttled_line() if code == "THROTTLING_QUOTA_EXCEEDED" else " ".join(detail.split()) or "a limit"
        return f"Kafka refused: {username} may not {action}{target} ({code}): {why.rstrip('.')}."
    if code == "SASL_AUTHENTICATION_FAILED":
        return (f"Kafka refused the password of {username!r} ({code}). Ask your instructor for your join token and "
                "run `python -m deliverylab workshop join <token>` again.")
    if username in RESERVED:
        return f"Kafka refused: {username} may not {action}{target} ({code})."
    where = _WHAT.get(code, "this")
    return (f"Kafka refused: {username} may not {action}{target} ({code}). Your credential covers {where} only "
            f"when its name starts with {learner_prefix(username)}; name it so (the course's lessons do).")
