"""What Spark's Kafka source writes to the log while a run goes on (lesson 07, topic changes and retention).

The course's SparkSessions log at level ERROR (``stack/session.py`` sets it), so a warning is never
written. :func:`kafka_warnings` raises the level of Spark's Kafka source (``org.apache.spark.sql.kafka010``)
to WARN for the length of one run, reads what the JVM added to this notebook's Spark log meanwhile, and
puts the level back. It returns the run's result and, per warning, the class that logged it, e.g.
``KafkaDataConsumer`` (the reader inside a task: on a cluster it runs in an executor) or
``KafkaMicroBatchStream`` (the driver, while it plans a batch). In ``local`` mode both run in this
notebook's JVM, so both land in the same file.

Spark 4.2 logs with its default pattern ``%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex``
(``log4j2-defaults.properties``), so a warning line reads ``... WARN KafkaDataConsumer: ...``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

KAFKA_SOURCE = "org.apache.spark.sql.kafka010"
_WARNING = re.compile(r" WARN (\w+): (.*)")


@dataclass
class Logged:
    result: object
    warnings: list[tuple[str, str]] = field(default_factory=list)   # (class, message) per WARN line

    def by(self) -> list[str]:
        """The classes that logged a warning, each once, in order."""
        return list(dict.fromkeys(cls for cls, _ in self.warnings))

    def said(self, cls: str, text: str) -> bool:
        return any(c == cls and text in message for c, message in self.warnings)


def kafka_warnings(spark, run, logger: str = KAFKA_SOURCE) -> Logged:
    """Call ``run()`` with ``logger`` at WARN, and return its result and the warnings logged meanwhile."""
    from ...stack.session import log_path

    log = log_path(spark.sparkContext.appName)
    jvm = spark._jvm
    configurator, level = jvm.org.apache.logging.log4j.core.config.Configurator, jvm.org.apache.logging.log4j.Level
    start = log.stat().st_size if log.exists() else 0
    configurator.setLevel(logger, level.WARN)
    try:
        result = run()
    finally:
        configurator.setLevel(logger, level.ERROR)
    with open(log, "rb") as handle:
        handle.seek(start)
        text = handle.read().decode("utf-8", errors="replace")
    return Logged(result, [(m.group(1), m.group(2)) for m in map(_WARNING.search, text.splitlines()) if m])
