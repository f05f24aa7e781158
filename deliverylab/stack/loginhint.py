"""A Kafka client that left out the class broker's login gets no answer, only a timeout: say so in one line.

Every listener of a class broker with logins (stack/classbroker.py) asks for SASL/SCRAM. A client built
without the login is never refused in words: the broker closes its connection, and the client gives up
after its own timeout. Measured on the class broker: kafka-python's constructors (3.0.12) raise
``KafkaTimeoutError: Unable to bootstrap from <address>`` after 30 s; a Spark 4.2 batch read of a Kafka
topic ends after about 3 minutes in a Py4JJavaError with Kafka's ``TimeoutException: Timed out waiting
for a node assignment. Call: listNodes``. Neither names the login. In a notebook whose settings carry one
(``workshop join``), :func:`hint` adds the line that does, but only when the broker answers that same
login: a broker that is down, or an address mistyped, is not blamed on the login. A broker that hangs up on
every new connection of this machine at once is over its connection limit for it: the line says so.
"""
from __future__ import annotations

from typing import Callable

from ..config import KafkaLogin

#: what the error of a client without the login says (kafka-python, then the Java client under Spark)
SIGNS = ("Unable to bootstrap from", "NoBrokersAvailable",
         "org.apache.kafka.common.errors.TimeoutException", "Timed out waiting for a node assignment")


def looks_like_no_answer(error: BaseException) -> bool:
    """Is this what a Kafka client that got no answer raises (kafka-python's or Spark's)?"""
    text = f"{type(error).__name__}: {error}"
    return any(sign in text for sign in SIGNS)


def hint(error: BaseException, login: KafkaLogin | None, answers: Callable[..., bool] | None = None,
         closed: Callable[[str], bool | None] | None = None) -> str | None:
    """The line to show under ``error`` when it is likely a client that left out ``login``, or a machine over the
    class broker's connection limit (stack/classlimits.py); None otherwise. ``answers`` and ``closed``: the probes
    (stack/kafka.py's answers, loginprobe.closed_at_once), for tests."""
    if login is None or not looks_like_no_answer(error):
        return None
    if answers is None:
        from .kafka import answers
    if not answers(login.broker, login=login):
        from .classlimits import connections_line

        if closed is None:
            from .loginprobe import closed_at_once as closed
        return connections_line(login.broker) if closed(login.broker) else None
    return (f"The class broker at {login.broker} answers your login, but this client got no answer: every client "
            f"there must log in. If you built it yourself, pass your login: KafkaProducer(..., **lesson.login) "
            f"(also KafkaConsumer and KafkaAdminClient), or .options(**lesson.spark_login) on Spark's Kafka reads "
            f"and writes (.options(**out.login_options) in a crash-lab pipeline), then run the cell again.")
