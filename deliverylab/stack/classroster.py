"""The class broker matches the roster: every ``stack up --class`` makes its logins, ACLs and board topics the
roster's, and says what it changed.

    roster: added cy; new password for ada (her old token no longer works); removed bob (his login and rights
    deleted, his topics kept)

As admin, through Kafka's Admin API (kafka-python's KafkaAdminClient on the loopback INTERNAL listener):

* logins: every roster learner and the board get the SCRAM-SHA-512 credential of their password in
  passwords.json (an upsertion replaces what the broker held: a re-added learner's new token works and her old
  one is refused from her next connection on). Every other SCRAM credential is deleted, admin's too: admin logs in
  with PLAIN on the loopback listeners only. The client salts and hashes the password (KIP-554): it never crosses
  the network, and it is never on a command line.
* ACLs: those of stack/classauth.py's ``class_rules(roster)`` are created; every other ALLOW or DENY ACL is
  deleted (a removed learner's, and those of rules the course no longer has, such as the old class topic's).
  ACLs are checked at every request, so a removed learner's open connections can do nothing more either.
* board topics: ``xo._board.<learner>`` for every roster learner, one partition, with the broker's own time on
  every record (message.timestamp.type=LogAppendTime): the learner may write it, not create, configure or
  delete it (workshop/events.py, feed.py).

A removed learner's own topics stay (``stack wipe --class`` deletes everything); nobody can use them any more.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import classauth
from ..config import CourseError

#: the board topics' settings: one partition, and each record stamped with the broker's clock
BOARD_TOPIC_CONFIG = {"message.timestamp.type": "LogAppendTime"}


@dataclass
class Changes:
    added: list[str] = field(default_factory=list)
    new_password: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    acls_created: int = 0
    acls_deleted: int = 0

    def line(self) -> str:
        """One line for the instructor: who was added, who got a new password, who was removed."""
        parts = []
        if self.added:
            parts.append(f"added {', '.join(self.added)}")
        if self.new_password:
            parts.append(f"new password for {', '.join(self.new_password)} (the old token no longer works)")
        if self.removed:
            parts.append(f"removed {', '.join(self.removed)} (login and rights deleted, topics kept)")
        return "roster: " + ("; ".join(parts) if parts else "no change")


def changes(roster: list[str], drawn: set[str], stored: set[str]) -> Changes:
    """What making the broker match ``roster`` changes, given the learners whose password was ``drawn`` now and the
    users the broker holds a SCRAM credential for (``stored``)."""
    return Changes(added=[n for n in roster if n not in stored],
                   new_password=[n for n in roster if n in drawn and n in stored],
                   removed=sorted(stored - set(roster) - {classauth.BOARD, classauth.ADMIN}))


def _acl(rule: classauth.Rule):
    from kafka.admin import ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern, ResourceType

    return ACL(principal=rule.principal, host=rule.host, operation=ACLOperation[rule.operation],
               permission_type=ACLPermissionType.ALLOW,
               resource_pattern=ResourcePattern(ResourceType[rule.resource], rule.name,
                                                ACLResourcePatternType[rule.pattern]))


def _key(acl) -> tuple:
    p = acl.resource_pattern
    return (acl.principal, acl.host, int(acl.operation), int(acl.permission_type), int(p.resource_type),
            p.resource_name, int(p.pattern_type))


def _every_acl(client) -> list:
    from kafka.admin import (ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             ResourcePatternFilter, ResourceType)

    acls, _ = client.describe_acls(ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                                             permission_type=ACLPermissionType.ANY,
                                             resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                                                    ACLResourcePatternType.ANY)))
    return acls


def _credentials(client, passwords: dict[str, str], desired: list[str], stored: set[str]) -> None:
    from kafka.admin import ScramMechanism, UserScramCredentialDeletion, UserScramCredentialUpsertion

    alterations = [UserScramCredentialUpsertion(name, ScramMechanism.SCRAM_SHA_512, passwords[name])
                   for name in desired]
    alterations += [UserScramCredentialDeletion(name, ScramMechanism.SCRAM_SHA_512) for name in sorted(stored)
                    if name not in desired]
    failed = {user: error for user, error in client.alter_user_scram_credentials(alterations).items() if error}
    if failed:
        raise CourseError(f"The class broker refused to store {len(failed)} login(s): "
                          + "; ".join(f"{u}: {e}" for u, e in sorted(failed.items())[:3]))


def _acls(client, roster: list[str], changes_: Changes) -> None:
    wanted = {_key(acl): acl for acl in map(_acl, classauth.class_rules(roster))}
    have = {_key(acl): acl for acl in _every_acl(client)}
    stale = [acl for key, acl in have.items() if key not in wanted]
    if stale:
        client.delete_acls(stale)  # a concrete ACL is a filter that matches itself only
    missing = [acl for key, acl in wanted.items() if key not in have]
    if missing:
        result = client.create_acls(missing)
        if result["failed"]:
            raise CourseError(f"The class broker refused {len(result['failed'])} ACL(s): {result['failed'][:3]}")
    changes_.acls_created, changes_.acls_deleted = len(missing), len(stale)


def _board_topics(client, roster: list[str]) -> None:
    from kafka.admin import NewTopic

    from . import kafka

    have = set(client.list_topics())
    missing = [NewTopic(classauth.board_topic(n), num_partitions=1, replication_factor=-1,
                        topic_configs=dict(BOARD_TOPIC_CONFIG)) for n in roster if classauth.board_topic(n) not in have]
    if missing:
        failed = kafka._failures(client.create_topics(missing, raise_errors=False)["topics"])
        if failed:
            raise failed[0]


def reconcile(client, roster: list[str], passwords: dict[str, str], drawn: set[str]) -> Changes:
    """Make the broker behind ``client`` (an admin client) match ``roster``; what changed."""
    described = client.describe_user_scram_credentials() or {}
    stored = {name for name, info in described.items() if info.get("credential_infos")}
    found = changes(roster, drawn, stored)
    _credentials(client, passwords, [*roster, classauth.BOARD], stored)
    _acls(client, roster, found)
    _board_topics(client, roster)
    return found
