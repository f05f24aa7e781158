"""A line feed on 127.0.0.1: the far end of Spark's socket source, and a source that cannot replay.

    feed = LineFeed()                      # listens on 127.0.0.1, on a free port (feed.port)
    feed.send(["o-000000", "o-000001"])    # each line goes out once, to whoever is connected now
    feed.wait_for_connections(1)           # Spark's socket source connects on its first batch
    feed.close()
    wait_until(lambda: len(lines) == 100, "100 lines read")   # block until a condition holds

The feed is what makes a socket source non-replayable: it writes each line to the open
connection and forgets it. Lines sent while nobody is connected wait in a queue until the
next connection (so a demo can send them early), but nothing is ever sent twice: a reader
that connects again gets only lines it was not sent before. A new connection replaces the
old one (a restarted query is a new reader).
"""
from __future__ import annotations

import socket
import threading
import time

from ...config import HOST, CourseError

POLL_S = 0.02


class LineFeed:
    """A small TCP server thread that sends text lines, each exactly once."""

    def __init__(self, host: str = HOST):
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind((host, 0))
        self._server.listen(4)
        self._server.settimeout(POLL_S * 10)
        self.host = host
        self.port: int = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._conn: socket.socket | None = None
        self._closed = False
        self.connections = 0   # readers that connected so far
        self.sent = 0          # lines handed to a reader (each line at most once)
        self._threads = [threading.Thread(target=self._accept, name="line-feed-accept", daemon=True),
                         threading.Thread(target=self._pump, name="line-feed-send", daemon=True)]
        for thread in self._threads:
            thread.start()

    def __repr__(self) -> str:
        return (f"<LineFeed {self.host}:{self.port}: {self.connections} connection(s), "
                f"{self.sent} line(s) sent, {self.pending} waiting>")

    @property
    def pending(self) -> int:
        """Lines queued for the next reader, not sent yet."""
        with self._lock:
            return len(self._pending)

    def send(self, lines) -> int:
        """Queue lines for the connected reader (or the next one). Returns how many were queued."""
        if self._closed:
            raise CourseError("This LineFeed is closed; create a new one (m02.LineFeed()).")
        lines = [str(line) for line in lines]
        if any("\n" in line for line in lines):
            raise CourseError("A line cannot contain a newline: the socket source splits its input at newlines.")
        with self._lock:
            self._pending.extend(lines)
        return len(lines)

    def wait_for_connections(self, n: int, timeout_s: float = 180) -> None:
        """Block until ``n`` readers have connected in total (a CourseError after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while self.connections < n:
            if time.monotonic() > deadline:
                raise CourseError(f"Only {self.connections} of {n} readers connected to the feed on port {self.port} "
                                  f"within {timeout_s:.0f} s. Is the socket query running (query.isActive)?")
            time.sleep(POLL_S)

    def wait_until_sent(self, timeout_s: float = 180) -> None:
        """Block until every queued line has gone out to a reader."""
        deadline = time.monotonic() + timeout_s
        while self.pending:
            if time.monotonic() > deadline:
                raise CourseError(f"{self.pending} lines still wait for a reader on port {self.port}. "
                                  "Is the socket query running (query.isActive)?")
            time.sleep(POLL_S)

    def close(self) -> None:
        """Stop listening and drop the connection (lines still queued are dropped too)."""
        self._closed = True
        with self._lock:
            if self._conn is not None:
                _close_quietly(self._conn)
                self._conn = None
        _close_quietly(self._server)

    # ---- the two threads ---------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except socket.timeout:
                continue
            except OSError:  # closed
                return
            with self._lock:
                if self._conn is not None:
                    _close_quietly(self._conn)
                self._conn = conn
                self.connections += 1

    def _pump(self) -> None:
        while not self._closed:
            with self._lock:
                if self._conn is not None and self._pending:
                    data = "".join(line + "\n" for line in self._pending).encode()
                    try:
                        self._conn.sendall(data)
                        self.sent += len(self._pending)
                        self._pending.clear()
                    except OSError:  # the reader went away: keep the lines for the next one
                        _close_quietly(self._conn)
                        self._conn = None
            time.sleep(POLL_S)


def wait_until(condition, what: str, timeout_s: float = 180) -> None:
    """Block until ``condition()`` is true; a CourseError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise CourseError(f"Waited {timeout_s:.0f} s for: {what}. Is the query still running (query.isActive)?")
        time.sleep(POLL_S * 5)


def _close_quietly(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass
