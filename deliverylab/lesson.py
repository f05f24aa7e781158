"""One call at the top of every notebook: ``lesson = deliverylab.setup("02-anatomy")``.

It makes sure the broker is up, gives the lesson its own topics and folders (prefixed by
the learner id, so several learners can share one broker), resets that lesson's state,
and prints a five-line summary. Running it twice is safe: the second run stops the
lesson's streams and starts clean again.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .config import TOPIC_PREFIX, settings
from .course import check_lesson_name, title
from .stack import broker, kafka


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

    # ---- names -------------------------------------------------------------
    @property
    def topic_prefix(self) -> str:
        return f"{TOPIC_PREFIX}{self.learner}.{self.name}."

    def topic(self, name: str = "orders") -> str:
        """This lesson's topic called ``name``, e.g. ``xo.ada.02-anatomy.orders``."""
        return self.topic_prefix + name

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

    # ---- progress ----------------------------------------------------------
    def complete(self) -> None:
        """The last cell of a lesson: record that the learner ran it to the end.

        It stops nothing: pipelines keep running so the crash panel still works; they end
        with the kernel, or at ``lesson.cleanup()``.
        """
        from . import progress

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


def _reset_topics(prefix: str) -> None:
    bootstrap = settings().bootstrap
    kafka.delete_topics(bootstrap, kafka.topics(bootstrap, prefix=prefix) or [])


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
        _reset_topics(lesson.topic_prefix)
        shutil.rmtree(folder, ignore_errors=True)
    for sub in ("checkpoints", "tables"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    _current[name] = lesson
    if not quiet:
        print(f"lesson    {name}: {title(name)}")
        print(f"learner   {s.learner}")
        print(f"broker    Apache Kafka on {status.bootstrap} ({'answering' if status.answering else 'NOT answering'})")
        print(f"topics    {lesson.topic_prefix}*  ({'emptied' if reset else 'kept'})")
        print(f"folders   {_rel(folder)}/  ({'emptied' if reset else 'kept'})")
    return lesson


def reset(all_learners: bool = False, log=print) -> None:
    """Delete the course's own topics, tables and checkpoints, and nothing else.

    By default only this learner's (``xo.<learner>.*`` topics and ``.state/lessons/<learner>``);
    ``all_learners=True`` removes every learner's course data on this broker.
    """
    s = settings()
    prefix = TOPIC_PREFIX if all_learners else s.learner_prefix()
    if kafka.answers(s.bootstrap):
        names = kafka.topics(s.bootstrap, prefix=prefix) or []
        kafka.delete_topics(s.bootstrap, names)
        log(f"deleted {len(names)} course topics ({prefix}*)")
    else:
        log("broker not running: topics left as they are (start it and reset again to delete them)")
    target = s.lessons_dir if all_learners else s.lessons_dir / s.learner
    shutil.rmtree(target, ignore_errors=True)
    log(f"deleted lesson tables and checkpoints under {_rel(target)}/")
