"""m02.LineFeed: a TCP server on 127.0.0.1 that sends each line once (no broker, no Spark)."""
from __future__ import annotations

import socket

import pytest

from deliverylab.config import CourseError
from deliverylab.modules.m02 import LineFeed, wait_until


def read_lines(conn: socket.socket, n: int) -> list[str]:
    conn.settimeout(10)
    data = b""
    while data.count(b"\n") < n:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.decode().splitlines()


@pytest.fixture
def feed():
    feed = LineFeed()
    yield feed
    feed.close()


def test_lines_queued_before_a_reader_go_to_the_first_reader(feed):
    assert feed.send(["a", "b"]) == 2 and feed.pending == 2
    with socket.create_connection((feed.host, feed.port)) as reader:
        assert read_lines(reader, 2) == ["a", "b"]
        feed.wait_until_sent(timeout_s=10)
        assert feed.sent == 2 and feed.connections == 1


def test_a_reader_that_connects_again_never_gets_a_line_twice(feed):
    first = socket.create_connection((feed.host, feed.port))
    feed.wait_for_connections(1, timeout_s=10)
    feed.send(f"o-{n}" for n in range(5))
    assert read_lines(first, 5) == [f"o-{n}" for n in range(5)]
    first.close()
    with socket.create_connection((feed.host, feed.port)) as second:
        feed.wait_for_connections(2, timeout_s=10)
        feed.send(["o-5"])
        assert read_lines(second, 1) == ["o-5"]  # only the new line: o-0..o-4 are gone for good


def test_newlines_and_a_closed_feed_are_refused(feed):
    with pytest.raises(CourseError, match="newline"):
        feed.send(["two\nlines"])
    feed.close()
    with pytest.raises(CourseError, match="closed"):
        feed.send(["late"])


def test_waiting_for_a_reader_that_never_comes_says_what_to_check(feed):
    with pytest.raises(CourseError, match="query.isActive"):
        feed.wait_for_connections(1, timeout_s=0.2)
    feed.send(["x"])
    with pytest.raises(CourseError, match="still wait for a reader"):
        feed.wait_until_sent(timeout_s=0.2)


def test_wait_until(feed):
    wait_until(lambda: True, "nothing")
    with pytest.raises(CourseError, match="Waited 0 s for: the impossible"):
        wait_until(lambda: False, "the impossible", timeout_s=0.1)
