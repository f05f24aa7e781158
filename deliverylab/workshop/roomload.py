"""A full room, measured: one class broker with logins, ACLs and quotas, and simulated learners doing to Kafka what
the lessons do, then the same with one learner's producer loop running flat out.

    python -m deliverylab.workshop.roomload --learners 30 --seconds 60

Loopback only; it starts its own class broker (stack/classbroker.py, in a temporary state folder, on ports of its
own, never the course broker's) and stops it at the end, so it ends by itself (about 2 x seconds + 30 s).

Each simulated learner (a kafka-python thread; learners are spread over a few processes) repeats a lesson's cycle
with its own login: create her topics (``xo.<learner>.roomload.*``), produce a burst of 300 orders (acks=all,
linger 50 ms, like orders.produce), send a progress event to her board topic, relay 100 orders in transactions of
50, read her topic in a consumer group and commit, then reset (delete the group; every third cycle delete and
recreate the topics) and think for 2-5 s. The board reads every board topic every 2 s as the board login.
Reported: p50/p99 of the produce latency (send to acknowledgement, per record), errors, the broker's CPU and RSS
(from /proc of its pid), the board's refresh time. The second run adds one learner, ``runaway``, whose producer
sends 16 KB records as fast as it can: the quotas (stack/classquota.py) should keep the others' p99 within 2x of
the calm runs' (by default a calm run before and one after, since a run's p99 also depends on what ran before).
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import tempfile
import threading
import time
from collections import Counter

from ..config import HOST, KafkaLogin
from ..stack.classauth import client_options
from .roomfigures import (LIMIT, RUNAWAY, Run, cpu_percent, machine, percentile, phases, proc_cpu_ticks,  # noqa: F401
                          proc_rss_kb, report, throttle_ms, verdict)

BURST = 300
RELAY_BATCH, RELAY_BATCHES = 50, 2
THINK_S = (2.0, 5.0)
BOARD_EVERY_S = 2.0
RUNAWAY_RECORD = 16 * 1024


# --------------------------------------------------------------------------- a producer loop, flat out


def abandon(producer) -> None:
    """Close a producer whose buffer still holds records the broker is holding back (a throttled loop), at once:
    kafka-python 3's close(timeout=0) raises while records are pending, so its sender is told to drop them first."""
    from kafka.errors import KafkaTimeoutError

    sender = getattr(producer, "_sender", None)
    if sender is not None:
        sender.force_close()
    try:
        producer.close(timeout=5)
    except KafkaTimeoutError:
        pass


def flood(producer, topic: str, seconds: float, record: int = RUNAWAY_RECORD, pending: int = 64) -> tuple[int, float]:
    """A producer loop flat out for ``seconds``: ``record``-byte values as fast as the broker acknowledges them, with
    at most ``pending`` unacknowledged (kafka-python 3 has no buffer.memory to block a loop the way Java's producer
    does: without a bound its buffer would grow by gigabytes). Bytes acknowledged, seconds taken."""
    from collections import deque

    from kafka.errors import KafkaError

    value, waiting, acked, started = os.urandom(record), deque(), 0, time.monotonic()
    while (left := seconds - (time.monotonic() - started)) > 0:
        if len(waiting) >= pending:
            try:
                waiting.popleft().get(timeout=left)  # the broker holds a throttled producer back here
            except KafkaError:
                break
            acked += record
            continue
        waiting.append(producer.send(topic, value=value))
    acked += record * sum(1 for future in waiting if future.succeeded())
    return acked, time.monotonic() - started


# --------------------------------------------------------------------------- a simulated learner (in a worker process)


def _burst(login: KafkaLogin, topic: str, start: int, latencies: list[float]) -> float:
    from kafka import KafkaProducer

    from ..orders import encode, generate_orders

    producer = KafkaProducer(bootstrap_servers=login.broker, acks="all", linger_ms=50, batch_size=1 << 20,
                             **client_options(login))
    try:
        for order in generate_orders(BURST, start=start):
            sent = time.perf_counter()
            future = producer.send(topic, key=order["order_id"].encode(), value=encode(order))
            future.add_callback(lambda _md, t=sent: latencies.append((time.perf_counter() - t) * 1000))
        producer.flush(timeout=60)
        return throttle_ms(producer.metrics())
    finally:
        producer.close(timeout=5)


def _event(login: KafkaLogin, cycle: int) -> None:
    import json

    from kafka import KafkaProducer

    from ..stack.classauth import board_topic

    producer = KafkaProducer(bootstrap_servers=login.broker, **client_options(login))
    try:
        event = {"v": 1, "learner": login.username, "kind": "progress", "module": "roomload",
                 "checks_passed": cycle % 10}
        producer.send(board_topic(login.username), key=login.username.encode(),
                      value=json.dumps(event).encode()).get(timeout=30)
    finally:
        producer.close(timeout=5)


def _relay(login: KafkaLogin, topic: str, start: int) -> int:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=login.broker, transactional_id=f"xo.{login.username}.roomload.relay",
                             **client_options(login))
    try:
        producer.init_transactions()
        for batch in range(RELAY_BATCHES):
            producer.begin_transaction()
            for n in range(RELAY_BATCH):
                producer.send(topic, key=f"o-{start + batch * RELAY_BATCH + n}".encode(), value=b'{"relayed":true}')
            producer.commit_transaction()
        return RELAY_BATCHES * RELAY_BATCH
    finally:
        producer.close(timeout=5)


def _read(login: KafkaLogin, topic: str, group: str) -> tuple[int, float]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=login.broker, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, **client_options(login))
    try:
        seen, deadline, quiet = 0, time.monotonic() + 15, 0
        while time.monotonic() < deadline and quiet < 3:
            got = sum(len(batch) for batch in consumer.poll(timeout_ms=500).values())
            seen, quiet = seen + got, (quiet + 1 if got == 0 and seen else 0)
        consumer.commit()
        return seen, throttle_ms(consumer.metrics())
    finally:
        consumer.close(autocommit=False)


def _learner(login: KafkaLogin, until: float, out: dict, lock: threading.Lock, seed: int) -> None:
    from ..stack import kafka

    rng = random.Random(seed)
    prefix = f"xo.{login.username}.roomload."
    orders, relayed, group = prefix + "orders", prefix + "relayed", prefix + "readers"
    latencies: list[float] = []
    cycle, throttled = 0, 0.0
    time.sleep(rng.uniform(0, THINK_S[1]))  # learners do not start in step
    while time.monotonic() < until:
        steps = [("create", lambda: (kafka.ensure_topic(login.broker, orders, partitions=3, login=login),
                                     kafka.ensure_topic(login.broker, relayed, partitions=1, login=login))),
                 ("burst", lambda: _burst(login, orders, cycle * BURST, latencies)),
                 ("event", lambda: _event(login, cycle)),
                 ("relay", lambda: _relay(login, relayed, cycle * BURST)),
                 ("read", lambda: _read(login, orders, group)),
                 ("reset", lambda: _reset(login, group, [orders, relayed] if cycle % 3 == 2 else []))]
        for name, step in steps:
            if time.monotonic() >= until:
                break
            try:
                result = step()
            except Exception as error:  # counted and reported: a load test goes on
                with lock:
                    out["errors"][f"{name}: {type(error).__name__}"] += 1
                continue
            with lock:
                if name == "burst":
                    throttled = max(throttled, result)
                elif name == "relay":
                    out["relayed"] += result
                elif name == "read":
                    out["read"] += result[0]
                    throttled = max(throttled, result[1])
        cycle += 1
        time.sleep(rng.uniform(*THINK_S))
    with lock:
        out["latencies_ms"] += latencies
        out["cycles"] += cycle
        out["throttled_ms"] = max(out["throttled_ms"], throttled)


def _reset(login: KafkaLogin, group: str, topics: list[str]) -> None:
    from ..stack import kafka

    with kafka.admin(login.broker, login=login) as client:
        client.delete_groups([group])
    if topics:
        kafka.delete_topics(login.broker, topics, login=login)


def learners_process(logins: list[tuple[str, str, str]], seconds: float, seed: int) -> dict:
    """One worker process: a thread per learner for ``seconds``; their figures merged."""
    import logging

    logging.getLogger("kafka").setLevel(logging.CRITICAL)  # throttling and retries are counted, not printed
    out = {"latencies_ms": [], "errors": Counter(), "cycles": 0, "relayed": 0, "read": 0, "throttled_ms": 0.0}
    lock, until = threading.Lock(), time.monotonic() + seconds
    threads = [threading.Thread(target=_learner, args=(KafkaLogin(b, u, p), until, out, lock, seed + i), daemon=True)
               for i, (b, u, p) in enumerate(logins)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 120)
    out["errors"] = dict(out["errors"])
    return out


def runaway_process(bootstrap: str, password: str, seconds: float) -> dict:
    """One learner's producer loop, flat out (:func:`flood`): 16 KB records, as fast as the broker acknowledges them."""
    import logging

    from kafka import KafkaProducer

    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    login = KafkaLogin(bootstrap, RUNAWAY, password)
    from ..stack import kafka

    topic = f"xo.{RUNAWAY}.roomload.flood"
    kafka.ensure_topic(bootstrap, topic, partitions=3, login=login)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, batch_size=256 * 1024,
                             **client_options(login))
    try:
        sent, took = flood(producer, topic, seconds)
        return {"bytes": sent, "seconds": took, "throttled_ms": throttle_ms(producer.metrics())}
    finally:
        abandon(producer)


# --------------------------------------------------------------------------- the room: broker, board, samples, runs


class Sampler:
    """The broker's CPU (% of one core) and RSS, from /proc/<pid>, once a second, into the run being measured."""

    def __init__(self, pid: int):
        self.pid, self.into, self.stop = pid, None, threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        hz = os.sysconf("SC_CLK_TCK")
        before, then = None, time.monotonic()
        while not self.stop.wait(1.0):
            try:
                with open(f"/proc/{self.pid}/stat") as stat, open(f"/proc/{self.pid}/status") as status:
                    ticks, rss = proc_cpu_ticks(stat.read()), proc_rss_kb(status.read())
            except OSError:
                return
            now, into = time.monotonic(), self.into
            if before is not None and into is not None:
                into.cpu.append(cpu_percent(before, ticks, now - then, hz))
                into.rss_kb.append(rss)
            before, then = ticks, now


def _board(bootstrap: str, password: str, until: float, into: Run) -> None:
    from .feed import ClassFeed

    login = KafkaLogin(bootstrap, "board", password)
    with ClassFeed(bootstrap, login=login) as source:
        while time.monotonic() < until:
            started = time.perf_counter()
            source.read_available(timeout_s=5.0)
            into.board_ms.append((time.perf_counter() - started) * 1000)
            time.sleep(BOARD_EVERY_S)


def measure(name: str, room: dict, names: list[str], seconds: float, workers: int, sampler: Sampler,
            runaway: bool) -> tuple[Run, dict | None]:
    """One run: the learners in ``workers`` processes, the board here, the runaway in a process of its own."""
    run = Run(name, seconds)
    sampler.into = run
    bootstrap, passwords = room["bootstrap"], room["passwords"]
    ctx = multiprocessing.get_context("spawn")
    groups = [[(bootstrap, n, passwords[n]) for n in names[i::workers]] for i in range(workers)]
    with ctx.Pool(workers + (1 if runaway else 0)) as pool:
        parts = [pool.apply_async(learners_process, (g, seconds, 1000 * i)) for i, g in enumerate(groups) if g]
        flood = pool.apply_async(runaway_process, (bootstrap, passwords[RUNAWAY], seconds)) if runaway else None
        board = threading.Thread(target=_board, args=(bootstrap, passwords["board"], time.monotonic() + seconds, run))
        board.start()
        for part in parts:
            run.merge(part.get(timeout=seconds + 180))
        flooded = flood.get(timeout=seconds + 180) if flood else None
        board.join(timeout=30)
    sampler.into = None
    return run, flooded


def use_folder(folder: str) -> None:
    """Point this process's course settings (and the learner processes', which inherit them) at ``folder``: the
    class broker's state, passwords and ports there are the load test's own, never the instructor's."""
    from .. import config
    from ..stack import broker, classbroker

    os.environ["DELIVERYLAB_JARS"] = str(config.settings().jars)
    os.environ["DELIVERYLAB_STATE"] = os.path.join(folder, "state")
    for name in ("DELIVERYLAB_BROKER", "DELIVERYLAB_KAFKA_USER", "DELIVERYLAB_KAFKA_PASSWORD", "DELIVERYLAB_LEARNER"):
        os.environ.pop(name, None)
    # below Linux's ephemeral range; clear of the tests' 19610-19990 and the course's 9092-9095
    base = next(p for p in range(19410, 19600, 10) if all(broker.port_is_free(q) for q in classbroker.Ports(p).bound()))
    os.environ["DELIVERYLAB_CLASS_PORT"] = str(base)


def start_room(names: list[str], folder: str, quotas: bool = True, log=print) -> dict:
    """A class broker (in :func:`use_folder`'s settings) with a login for each of ``names`` and the runaway, ACLs and
    quotas (without the learners' quota when ``quotas`` is False: a control run)."""
    from .. import config
    from ..stack import classauth, classbroker

    roster = os.path.join(folder, "class.txt")
    with open(roster, "w") as f:
        f.write("\n".join([*names, RUNAWAY]) + "\n")
    started = time.monotonic()
    st = classbroker.up(roster, HOST, log=log)
    log(f"class broker up in {time.monotonic() - started:.0f} s (pid {st.pid}, {st.bootstrap})")
    if not quotas:
        from ..config import CourseError
        from ..stack import classquota, jars
        from ..stack.java import require_java

        failed = classquota.remove_default(require_java(), str(jars.classpath_dir("kafka") / "*"),
                                           classbroker.admin_login())
        if failed:
            raise CourseError("Removing the learners' quota failed: " + "; ".join(failed))
        log("the learners' quota removed: a control run without quotas")
    passwords = classauth.read_passwords(classbroker.paths(config.settings())["passwords"])
    return {"bootstrap": st.bootstrap, "passwords": passwords, "pid": st.pid}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deliverylab.workshop.roomload", description=(
        "A full room, measured: simulated learners on a class broker of its own with logins, ACLs and quotas, calm "
        "and then with one learner's producer loop flat out. Loopback only; ends by itself."))
    parser.add_argument("--learners", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60, help="length of each run (calm, then with a runaway)")
    parser.add_argument("--workers", type=int, default=3, help="processes the simulated learners are spread over")
    parser.add_argument("--runs", default="calm,runaway,calm",
                        help="the runs, in order (default calm,runaway,calm: the verdict compares with both calm runs)")
    parser.add_argument("--without-quotas", action="store_true",
                        help="a control: remove the learners' default quota before the runs")
    args = parser.parse_args(argv)
    from ..stack import classbroker
    from ..stack.classquota import describe

    names = [f"l{n:02d}" for n in range(1, args.learners + 1)]
    runs, flooded = [], None
    with tempfile.TemporaryDirectory(prefix="deliverylab-roomload-") as folder:
        use_folder(folder)
        try:
            room = start_room(names, folder, quotas=not args.without_quotas)
            sampler = Sampler(room["pid"])
            sampler.start()
            for name, runaway in phases(args.runs):
                print(f"{name} run: {args.learners} learners for {args.seconds:g} s ...", flush=True)
                run, got = measure(name, room, names, args.seconds, args.workers, sampler, runaway)
                runs.append(run)
                flooded = got or flooded
            sampler.stop.set()
        finally:
            classbroker.down(log=lambda m: None)  # the load test's own broker (use_folder's state)
    setting = "WITHOUT the learners' quotas" if args.without_quotas else f"with the learners' quotas ({describe()})"
    print("\n".join(report(runs, args.learners, args.seconds, machine(), flooded, setting)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
