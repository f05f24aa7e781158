"""Does the broker accept this login? One SASL exchange on a plain socket, nothing else.

kafka-python retries a refused login until its bootstrap timeout and then reports only the timeout;
and Kafka 4.3 often closes the connection after a wrong SCRAM proof without sending its error
response, so the client's own log cannot be relied on either. stack/kafka.py asks here when a client
with a login could not start: SaslHandshake (v1), then SaslAuthenticate (v0) until the broker
accepts, refuses, or hangs up right after the proof (which is a refusal too).

A class broker also hangs up at once on a machine that already holds as many connections as it allows
(max.connections.per.ip, stack/classlimits.py), before any Kafka request is read: Kafka has no error
for it, so :func:`closed_at_once` asks whether that is what happens.
"""
from __future__ import annotations

import socket
import struct

from ..config import KafkaLogin

CLIENT_ID = b"deliverylab-login-check"
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionResetError("the broker closed the connection")
        data += chunk
    return data


def _call(sock: socket.socket, api_key: int, version: int, correlation: int, body: bytes) -> bytes:
    """One request (header v1) and its response body (after the correlation id of header v0)."""
    message = struct.pack(">hhih", api_key, version, correlation, len(CLIENT_ID)) + CLIENT_ID + body
    sock.sendall(struct.pack(">i", len(message)) + message)
    size = struct.unpack(">i", _read(sock, 4))[0]
    return _read(sock, size)[4:]


def _authenticate(sock: socket.socket, token: bytes, correlation: int) -> tuple[int, bytes]:
    """SaslAuthenticate v0: (error code, the server's auth bytes)."""
    body = _call(sock, SASL_AUTHENTICATE, 0, correlation, struct.pack(">i", len(token)) + token)
    error, text_size = struct.unpack(">hh", body[:4])
    rest = body[4 + max(text_size, 0):]
    size = struct.unpack(">i", rest[:4])[0]
    return error, rest[4:4 + max(size, 0)]


def refused(bootstrap: str, login: KafkaLogin, timeout_s: float = 3.0) -> bool | None:
    """True when the broker at ``bootstrap`` refuses ``login``, False when it accepts it, None when this cannot
    tell (nothing listens, the mechanism is not enabled there, no answer in time)."""
    from kafka.net.sasl.scram import ScramClient

    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout_s)
    except (OSError, ValueError):
        return None
    with sock:
        try:
            mechanism = login.mechanism.encode()
            body = _call(sock, SASL_HANDSHAKE, 1, 1, struct.pack(">h", len(mechanism)) + mechanism)
            if struct.unpack(">h", body[:2])[0] != 0:
                return None
            if login.mechanism == "PLAIN":
                error, _ = _authenticate(sock, b"\0" + login.username.encode() + b"\0" + login.password.encode(), 2)
                return error != 0
            scram = ScramClient(login.username, login.password, login.mechanism)
            error, server_first = _authenticate(sock, scram.first_message(), 2)
            if error:
                return True
            scram.process_server_first_message(server_first)
        except (OSError, ValueError, struct.error):
            return None
        try:
            error, server_final = _authenticate(sock, scram.final_message(), 3)
            if error:
                return True
            scram.process_server_final_message(server_final)
        except ConnectionResetError:
            return True  # the broker hung up on the proof: a wrong password
        except ValueError:
            return True  # the broker's signature does not match: not the server this password is for
        except (OSError, struct.error):
            return None
        return False


def closed_at_once(bootstrap: str, timeout_s: float = 3.0, source: str | None = None) -> bool | None:
    """True when the broker at ``bootstrap`` accepts a connection and closes it without answering a first request
    (what Kafka does when this machine is over its connection limit), False when it answers, None when nothing
    listens or no answer comes in time. ``source``: the local address to connect from (tests)."""
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout_s,
                                        source_address=(source, 0) if source else None)
    except (OSError, ValueError):
        return None
    with sock:
        try:
            _call(sock, SASL_HANDSHAKE, 1, 1, struct.pack(">h", 5) + b"PLAIN")
        except (ConnectionResetError, BrokenPipeError):
            return True
        except (OSError, struct.error):
            return None
        return False
