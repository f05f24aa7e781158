"""Learners' answers to lab 03's exercises 1 and 2, shared by its pure tests (a simulated pipeline) and its planted
tests (the real one): the same functions judged on both, so the two never drift apart."""
from __future__ import annotations

from decimal import Decimal

from deliverylab.modules.m03 import race


# --------------------------------------------------------------------------- exercise 1: lose_orders(pipe)

def right(pipe):
    pipe.crash("now")
    down = pipe.produce(150)
    pipe.restart()
    pipe.produce(100)
    pipe.drain()
    return down


def right_in_steps(pipe):  # drained first, orders while down in three sends, ids returned
    pipe.produce(20)
    pipe.drain()
    pipe.crash("now")
    down = [o["order_id"] for _ in range(3) for o in pipe.produce(50)]
    pipe.restart()
    pipe.produce(100)
    pipe.drain()
    return down


def produced_before_the_crash(pipe):  # kind 4: right only when the kill beats the driver to the orders
    down = pipe.produce(150)
    pipe.crash("now")
    pipe.restart()
    pipe.produce(100)
    pipe.drain()
    return down


def orders_in_flight(pipe):  # kind 4: right only when the driver had written them before the kill
    pipe.produce(100)
    pipe.crash("now")
    down = pipe.produce(150)
    pipe.restart()
    pipe.produce(100)
    pipe.drain()
    return down


def no_drain(pipe):  # kind 4: right only when the driver has caught up by the time the sink is read
    pipe.crash("now")
    down = pipe.produce(150)
    pipe.restart()
    pipe.produce(100)
    return down


def produced_after_a_restart_not_waited_for(pipe):  # kind 4: the new query may or may not have fixed its start
    pipe.crash("now")
    # the lab's cell hands it a race.Racing, which waits anyway; on an unforced run the race could go its way
    pipe.restart(wait=False) if isinstance(pipe, race.Racing) else pipe.restart()
    down = pipe.produce(150)
    pipe.drain()
    return down


# --------------------------------------------------------------------------- exercise 2: what_was_lost(produced, rows)

def by_sets(produced, rows):
    in_sink = {order_id for order_id, _ in rows}
    lost = {o["order_id"] for o in produced} - in_sink
    return lost, sum(Decimal(o["amount"]) for o in produced if o["order_id"] in lost)


def by_loop(produced, rows):  # a list, floats, a loop, two answers in a list
    seen, lost, missing = {r[0] for r in rows}, [], 0.0
    for order in produced:
        if order["order_id"] not in seen:
            lost.append(order["order_id"])
            missing += float(order["amount"])
    return [lost, round(missing, 2)]
