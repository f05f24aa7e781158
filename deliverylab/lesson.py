"""One call at the top of every notebook: ``lesson = deliverylab.setup("02-anatomy")``.

It makes sure the broker is up, gives the lesson its own topics and folders (prefixed by
the learner id, so several learners can share one broker), resets that lesson's state,
and prints a five-line summary. Running it twice is safe: the second run stops the
lesson's streams and starts clean again. ``lesson.reset()`` (the "Reset lesson" button under
the setup cell) does the same without re-running the cell.

A reset deletes only what carries the lesson's own prefix: topics and consumer groups under
``xo.<learner>.<lesson>.`` and the folder ``.state/lessons/<learner>/<lesson>/``. On a shared
broker, a reset of another learner's data is refused.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .config import TOPIC_PREFIX, CourseError, learner_id, settings
from .course import check_lesson_name, title
from .stack import broker, kafka, processes


def _rel(path: Path) -> str:
    """A path as the learner sees it: relative to the project (no machine paths in outputs)."""
    try:
        return str(path.relative_to(settings().root))
    except ValueError:
        return str(path)


@dataclass
class Lesson:
    name: str
    learner: str
    bootstrap: str
    folder: Path
    _queries: list = field(default_factory=list, repr=False)
    _cleanups: list = field(default_factory=list, repr=False)
    _on_complete: list = field(default_factory=list, repr=False)

    # ---- names -------------------------------------------------------------
    @property
    def topic_prefix(self) -> str:
        return f"{TOPIC_PREFIX}{self.learner}.{self.name}."

    def topic(self, name: str = "orders") -> str:
        """This lesson's topic called ``name``, e.g. ``xo.ada.02-anatomy.orders``."""
        return self.topic_prefix + name

    # ---- your login on a class broker with logins ({} on your own broker) ----
    @property
    def login(self) -> dict:
        """kafka-python keyword arguments with your login: ``KafkaProducer(..., **lesson.login)``."""
        return kafka.security(self.bootstrap)

    @property
    def spark_login(self) -> dict:
        """Options of Spark's Kafka source and sink with your login: ``.options(**lesson.spark_login)``."""
        return kafka.spark_security(self.bootstrap)

    def checkpoint(self, name: str) -> str:
        return str(self.folder / "checkpoints" / name)

    def table(self, name: str) -> str:
        return str(self.folder / "tables" / name)

    def path(self, *parts: str) -> str:
        return str(self.folder.joinpath(*parts))

    def show_path(self, path) -> str:
        return _rel(Path(path))

    # ---- data --------------------------------------------------------------
    def produce_orders(self, n: int, topic: str = "orders", seed: int = 7, start: int = 0, progress: bool = True):
        """Write ``n`` seeded orders to this lesson's topic. Returns the orders (for the ledger)."""
        from .orders import produce_orders

        return produce_orders(self.bootstrap, self.topic(topic), n, seed=seed, start=start, progress=progress)

    # ---- streams -----------------------------------------------------------
    def track(self, query):
        """Remember a streaming query (or pipeline) so ``cleanup()`` stops it."""
        self._queries.append(query)
        return query

    def on_cleanup(self, fn) -> None:
        self._cleanups.append(fn)

    def on_complete(self, fn) -> None:
        """Call ``fn()`` at ``lesson.complete()``: what the lesson no longer needs once it ran to the end."""
        self._on_complete.append(fn)

    def cleanup(self) -> None:
        """Stop this lesson's streams and pipelines. Safe to call more than once."""
        for query in self._queries:
            try:
                if getattr(query, "isActive", True):
                    query.stop()
            except Exception:  # a query that already died has nothing to stop
                pass
        self._queries.clear()
        _stop_kernel_queries()
        for fn in self._cleanups:
            fn()
        self._cleanups.clear()

    def reset(self, log=print) -> None:
        """Stop this lesson's streams and pipelines, then delete its topics, consumer groups,
        tables and checkpoints, and nothing else. Afterwards, run the lesson's cells again
        from the one after the setup cell."""
        started = time.monotonic()
        refuse_unless_own(self.topic_prefix)
        running = sum(1 for query in self._queries if _is_active(query))
        self.cleanup()
        # leftover child processes of this lesson (a consumer, a driver) whose arguments name its folder
        leftovers = processes.stop_course_processes(str(self.folder) + os.sep)
        topics, groups = _wipe(self)
        stopped = running + leftovers
        log(f"lesson {self.name} reset in {time.monotonic() - started:.1f} s: stopped {stopped} stream(s) or "
            f"pipeline(s), deleted {topics} topic(s) ({self.topic_prefix}*) and {groups} consumer group(s), "
            f"emptied {_rel(self.folder)}/")

    # ---- progress ----------------------------------------------------------
    def complete(self) -> None:
        """The last cell of a lesson: record that the learner ran it to the end.

        What the learner no longer needs ends here (``on_complete``): the pipelines no crash panel
        shows, and the standby drivers booted for restarts. A pipeline in a crash panel keeps
        running, so the panel still works after Run All; it ends with the kernel, or at
        ``lesson.cleanup()``.
        """
        from . import progress

        for fn in self._on_complete:
            fn()

        try:
            progress.record_lesson_complete(self.name)
            print(f"lesson {self.name} complete (saved in your progress: python -m deliverylab progress)")
        except Exception as error:  # noqa: BLE001 - progress must never break a lesson
            print(f"lesson {self.name} complete (progress not saved: {error})")


_current: dict[str, Lesson] = {}


def _stop_kernel_queries() -> None:
    """Stop every streaming query of this kernel's SparkSession (a kernel runs one lesson)."""
    from .stack import session

    spark = session._session
    if spark is None:
        return
    for query in spark.streams.active:
        try:
            query.stop()
        except Exception:
            pass


def _is_active(query) -> bool:
    try:
        return bool(getattr(query, "isActive", True))
    except Exception:  # a query whose JVM side is gone is not running
        return False


def refuse_unless_own(prefix: str) -> None:
    """A CourseError when, on a shared broker, ``prefix`` is not this learner's (another learner's data)."""
    s = settings()
    if s.shared and not s.owns(prefix):
        raise CourseError(
            f"Refused: {prefix}* is not yours. On the shared broker at {s.bootstrap} a reset deletes only your "
            f"own topics ({s.learner_prefix()}*), never another learner's or the class board's. (Your learner id "
            f"is {s.learner!r}, from {s.learner_source}.)"
        )


def _delete_groups(bootstrap: str, prefix: str) -> int:
    """Delete the consumer groups named with ``prefix``; a group with a live member is left alone."""
    try:
        names = [group for group in kafka.consumer_groups(bootstrap) if group.startswith(prefix)]
    except Exception:  # noqa: BLE001 - groups hold no data a lesson reads; never fail a reset on them
        return 0
    deleted = 0
    for group in names:
        try:
            kafka.delete_group(bootstrap, group)
            deleted += 1
        except Exception:  # noqa: BLE001
            pass
    return deleted


def _wipe(lesson: Lesson) -> tuple[int, int]:
    """Delete the lesson's topics, consumer groups and folder; recreate its empty folders."""
    refuse_unless_own(lesson.topic_prefix)
    names = kafka.topics(lesson.bootstrap, prefix=lesson.topic_prefix) or []
    kafka.delete_topics(lesson.bootstrap, names)
    groups = _delete_groups(lesson.bootstrap, lesson.topic_prefix)  # also when its topics are gone already
    shutil.rmtree(lesson.folder, ignore_errors=True)
    for sub in ("checkpoints", "tables"):
        (lesson.folder / sub).mkdir(parents=True, exist_ok=True)
    return len(names), groups


def setup(name: str, *, reset: bool = True, quiet: bool = False) -> Lesson:
    """Prepare a lesson: broker up, own topics and folders, state reset, five-line summary."""
    name = check_lesson_name(name)
    s = settings()
    previous = _current.get(name)
    if previous is not None:
        previous.cleanup()
    status = broker.up(log=lambda msg: None if quiet else print(msg))
    folder = s.lessons_dir / s.learner / name
    lesson = Lesson(name=name, learner=s.learner, bootstrap=s.bootstrap, folder=folder)
    if reset:
        _wipe(lesson)
    for sub in ("checkpoints", "tables"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    _current[name] = lesson
    from .workshop import presence

    warning = presence.announce(name)  # shared-broker mode only: tell the class board, spot a twin id
    if not quiet:
        answering = "answering" if status.answering else "NOT answering"
        shared = f"; shared, set by {s.shared_source}" if s.shared else ""
        print(f"lesson    {name}: {title(name)}")
        print(f"learner   {s.learner}")
        print(f"broker    Apache Kafka on {status.bootstrap} ({answering}{shared})")
        print(f"topics    {lesson.topic_prefix}*  ({'emptied' if reset else 'kept'})")
        print(f"folders   {_rel(folder)}/  ({'emptied' if reset else 'kept'})")
        if warning:
            print(f"warning   {warning}")
    return lesson


def reset(all_learners: bool = False, log=print, learner: str | None = None) -> None:
    """Delete the course's own topics, consumer groups, tables and checkpoints, and nothing else.

    By default only this learner's (``xo.<learner>.*`` topics and ``.state/lessons/<learner>``);
    ``learner="bob"`` another learner's, ``all_learners=True`` every learner's course data on this
    broker (the class board's topic too). On a shared broker both of those are refused.
    """
    s = settings()
    other = learner_id(learner) if learner else s.learner
    prefix = TOPIC_PREFIX if all_learners else s.learner_prefix(other)
    refuse_unless_own(prefix)
    if kafka.answers(s.bootstrap):
        names = kafka.topics(s.bootstrap, prefix=prefix) or []
        kafka.delete_topics(s.bootstrap, names)
        groups = _delete_groups(s.bootstrap, prefix)
        log(f"deleted {len(names)} course topics ({prefix}*)" + (f" and {groups} consumer groups" if groups else ""))
    else:
        log("broker not running: topics left as they are (start it and reset again to delete them)")
    target = s.lessons_dir if all_learners else s.lessons_dir / other
    shutil.rmtree(target, ignore_errors=True)
    log(f"deleted lesson tables and checkpoints under {_rel(target)}/")
