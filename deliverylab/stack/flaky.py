"""A real network fault between a client and the broker: a loopback proxy that can lose replies.

The course's broker has a second listener, ``FLAKY`` (see broker.py), that tells clients
to reach it through this proxy (on a shared broker too: its FLAKY listener advertises
127.0.0.1, so each learner's clients reach their own proxy, which forwards to that broker). Whatever a client sends passes through unchanged. When
asked (:meth:`FlakyNetwork.lose_produce_replies`), the proxy lets a produce request reach
the broker, and the broker write it, but drops the connection instead of passing the
broker's reply back: exactly what a client sees when a network link fails at the wrong
moment. A producer that retries then sends the same records again; the broker has no way
to know they are the same unless the producer is idempotent.

    with flaky.FlakyNetwork() as net:
        producer = KafkaProducer(bootstrap_servers=net.bootstrap, enable_idempotence=False, ...)
        net.lose_produce_replies(1)
        producer.send(topic, value).get()     # the broker writes it twice

One proxy listens on its port at a time: a second one (another notebook, a test) waits up to
``WAIT_SECONDS`` for the first to finish, then says what to do.

The proxy reads Kafka's framing only (a 4-byte size, then for a request: api key, api
version, correlation id), never the payload.
"""
from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading

from . import locks
from ..config import HOST, CourseError, settings

PRODUCE = 0  # Kafka's api key of a produce request
#: How long a second proxy waits for the one that holds the port (a demo holds it for seconds).
WAIT_SECONDS = 120.0


def lock_file(s=None):
    """The lock a running proxy holds (one per port)."""
    s = s or settings()
    return s.state / "flaky-proxy" / f"port-{s.flaky_proxy_port}.lock"


def running(s=None) -> bool:
    """Whether one of the course's proxies (a lesson's or a test's demo) holds its port now."""
    return locks.held(lock_file(s))


class FlakyNetwork:
    """The proxy, listening on the FLAKY listener's advertised port while the ``with`` block runs."""

    def __init__(self):
        s = settings()
        self.listen_port, self.broker_port = s.flaky_proxy_port, s.flaky_listener_port
        # the proxy always listens on this machine; on a shared broker it forwards to that broker's host
        self.broker_host = s.broker_host
        self.lock_file = lock_file(s)
        self.wait_seconds = WAIT_SECONDS
        self._lose = 0
        self.lost_replies = 0
        self.produce_requests = 0
        self._lock = threading.Lock()
        self._server: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._closing = threading.Event()
        self._holding = contextlib.ExitStack()

    @property
    def bootstrap(self) -> str:
        """The address clients use to go through the proxy."""
        return f"{HOST}:{self.listen_port}"

    def lose_produce_replies(self, n: int = 1) -> None:
        """Drop the connection instead of delivering the broker's reply to the next ``n`` produce requests."""
        with self._lock:
            self._lose += n

    def __enter__(self) -> "FlakyNetwork":
        try:
            self._holding.enter_context(locks.exclusive(self.lock_file, timeout=self.wait_seconds))
        except locks.LockBusy:
            raise CourseError(f"Another notebook or test of this course has used the flaky-network proxy (port "
                              f"{self.listen_port}) for over {self.wait_seconds:g} s. Let its cell finish, or "
                              "interrupt that kernel, then run this cell again.") from None
        try:
            self._listen()
        except BaseException:
            self._holding.close()
            raise
        self._start(self._accept)
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()
        for thread in self._threads:
            thread.join(timeout=2)
        if self._server:
            self._server.close()
        self._holding.close()

    def _listen(self) -> None:
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._server.bind((HOST, self.listen_port))
        except OSError:
            self._server.close()
            raise CourseError(f"Port {self.listen_port} on {HOST} is in use by a program outside this course, so "
                              "the flaky-network proxy cannot start. Stop that program, or set "
                              "DELIVERYLAB_KAFKA_PORT to move all the course's ports.") from None
        self._server.listen()
        self._server.settimeout(0.2)  # so the accept loop notices the end of the block

    def _start(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                broker = socket.create_connection((self.broker_host, self.broker_port), timeout=5)
            except OSError:
                client.close()
                continue
            broker.settimeout(None)
            self._start(self._relay, client, broker)

    def _relay(self, client: socket.socket, broker: socket.socket) -> None:
        """Pass frames both ways; forget a produce reply (and the connection) when asked to."""
        pending_produce: set[int] = set()
        buffers = {client: b"", broker: b""}
        try:
            while not self._closing.is_set():
                ready, _, _ = select.select([client, broker], [], [], 0.2)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffers[sock] += data
                    frames, buffers[sock] = _split_frames(buffers[sock])
                    for frame in frames:
                        if sock is client:
                            api_key, _, correlation = struct.unpack(">hhi", frame[4:12])
                            if api_key == PRODUCE:
                                pending_produce.add(correlation)
                                with self._lock:
                                    self.produce_requests += 1
                            broker.sendall(frame)
                        else:
                            correlation = struct.unpack(">i", frame[4:8])[0]
                            if correlation in pending_produce:
                                pending_produce.discard(correlation)
                                with self._lock:
                                    lose = self._lose > 0
                                    if lose:
                                        self._lose -= 1
                                        self.lost_replies += 1
                                if lose:
                                    return  # the broker has written it; the client never hears so
                            client.sendall(frame)
        except OSError:
            return
        finally:
            client.close()
            broker.close()


def _split_frames(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Whole Kafka frames (size prefix included) at the start of ``buffer``, and the rest."""
    frames = []
    while len(buffer) >= 4:
        size = struct.unpack(">i", buffer[:4])[0]
        if len(buffer) < 4 + size:
            break
        frames.append(buffer[:4 + size])
        buffer = buffer[4 + size:]
    return frames, buffer
