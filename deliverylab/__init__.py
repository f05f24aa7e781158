"""Helpers for the course "Exactly Once, For Real".

Notebooks call this package in a line or two; the logic lives here, one module per concern:

    config    where state lives, ports, learner id      broker   the real Kafka broker
    jars      JVM jars resolved once from Maven Central  session  the course's SparkSession
    lesson    per-lesson setup, names and reset          orders   seeded order events + producer
    streams   waiting for streaming queries              doctor   the environment check
"""
from .config import CourseError
from .lesson import setup

__all__ = ["CourseError", "setup", "get_spark"]


def get_spark(app_name: str = "exactly-once-for-real"):
    """The course's SparkSession (built once per kernel)."""
    from .session import get_spark as _get_spark

    return _get_spark(app_name)
