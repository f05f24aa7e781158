"""Lab 03's exercise 1 run: the learner's ``lose_orders(pipe)`` called with its race forced both ways.

A function that produces orders into a running at-most-once driver and then kills it, or reads the sink without
waiting for it, depends on a race: had the driver read and written those orders yet? Left alone, the timing
decides, so the same wrong answer passes on one run and fails on the next. So the exercise's cell
(lab.forced_race) hands the function a :class:`Racing` pipeline instead of the real one, and the check judges
that run. Every time the function produces orders while a driver runs, the driver first catches up with part of
them (Racing drains it), then is held still (SIGSTOP of its process group, the driver and its JVM) while the
rest arrive. So at the function's next step the driver has
written the first part and not even read the second, whatever the timing: both sides of the race are on the run,
and the run is the same for one seed. A step that needs the driver working (drain, stop, restart, a crash at a
named point) lets it go on first (SIGCONT); ``crash("now")`` kills it where it is held. A restart always waits
until the new query has fixed where it starts.

``Racing`` also records which orders were produced while no driver ran (``down``): the orders a crash-and-restart
at-most-once pipeline must lose, known here without asking the learner.
"""
from __future__ import annotations

import os
import random
import signal

#: Pipeline methods that need a driver that works: a held driver is let go before them.
NEEDS_DRIVER = frozenset({"drain", "arm", "wait_for_crash", "stop", "restart", "start", "delete_checkpoint"})


class Racing:
    """The pipeline as ``lose_orders`` gets it in the exercise's cell (see the module docstring); everything else is
    the real pipeline's."""

    def __init__(self, pipe, rng: random.Random):
        self._pipe, self._rng = pipe, rng
        self._held: int | None = None  # the process group held still (the driver's pid), if any
        self.down: list[dict] = []  # orders produced while no driver ran
        self.splits: list[tuple[int, int]] = []  # per produce into a running driver: (caught up with, held back)

    def __repr__(self) -> str:
        return repr(self._pipe)

    def __getattr__(self, name: str):
        value = getattr(self._pipe, name)
        if name in NEEDS_DRIVER and callable(value):
            def with_the_driver_going(*args, **kwargs):
                self.release()
                return value(*args, **kwargs)
            return with_the_driver_going
        return value

    # ---- orders ------------------------------------------------------------
    def produce(self, n: int, progress: bool = False) -> list[dict]:
        return self._split(n, lambda part: self._pipe.produce(part, progress=progress))

    def send(self, orders: list[dict]) -> list[dict]:
        orders, sent = list(orders), []

        def part(k: int) -> list[dict]:
            chunk = orders[len(sent): len(sent) + k]
            sent.extend(chunk)
            return self._pipe.send(chunk) if chunk else []

        return self._split(len(orders), part)

    def _split(self, n: int, produce) -> list[dict]:
        if not self._pipe.running:
            orders = produce(n)
            self.down.extend(orders)
            return orders
        if n < 1:
            return produce(n)
        self.release()
        caught = self._rng.randint(1, n - 1) if n > 1 else 0
        first = produce(caught) if caught else []
        if caught:
            self._pipe.drain()
        self.hold()
        self.splits.append((caught, n - caught))
        return first + produce(n - caught)

    # ---- the driver --------------------------------------------------------
    def restart(self, wait: bool = True):
        """Always waits until the new query has fixed where it starts, so what comes next is produced after that
        (``wait=False`` would leave it to the timing whether a latest-offsets query sees those orders)."""
        self.release()
        self._pipe.restart(wait=True)
        return self

    def start(self, wait: bool = True):
        self.release()
        self._pipe.start(wait=True)
        return self

    def crash(self, point: str, batch: int | None = None, orders: int = 500):
        if point != "now":
            self.release()  # an armed crash needs a batch to run
        crash = self._pipe.crash(point, batch, orders)
        self._held = None  # the process group is gone
        return crash

    def hold(self) -> None:
        """Hold the running driver still (SIGSTOP), if it is not held already."""
        pid = self._pipe.pid
        if pid and self._held != pid:
            os.killpg(pid, signal.SIGSTOP)
            self._held = pid

    def release(self) -> None:
        """Let a held driver go on (SIGCONT). Safe to call at any time, also after the driver died."""
        pid, self._held = self._held, None
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
