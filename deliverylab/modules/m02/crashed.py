"""A copy of a crash-lab pipeline as a crash in batch N would have left it: lab 02's hidden runs.

    crashed_copy(pipe, folder, batch, ends=None)   the copy, a Pipeline reading its files from ``folder``
    planned_ends(pipe, batch, rng)                 other ends for a planned batch: an uneven share of what waits

A driver killed after it wrote ``offsets/N`` and before ``commits/N`` (at ``before_sink_write``,
``mid_sink_write`` or ``after_sink_write``) leaves: every batch before N planned and committed,
``offsets/N`` alone, and no progress record for N (Spark reports a batch once it has finished).
The copy holds exactly that, taken from the real pipeline's own files: its checkpoint up to batch
N-1, then ``offsets/N`` (the real one, or one planned over ``ends`` instead: what a driver that found
less data waiting would have planned), and its progress records of the batches before N.

The copy is the same pipeline object otherwise (its topic, lesson, orders, methods), so a learner's
reader (``pipe.checkpoint``, ``pipe.progress()``, ``pipe.batch_range(...)``, ``checkpoint.*``) reads
it as it reads the real one. Nothing is started and the real pipeline is not touched. Deterministic:
the same pipeline, batch and ends give the same files.
"""
from __future__ import annotations

import copy
import json
import random
import shutil
from pathlib import Path

from ... import checkpoint
from ...config import CourseError
from ...crashlab.files import PipelineFolder
from ...stack import processes


def _kafka_line(topic: str, ends: dict[int, int]) -> str:
    return json.dumps({topic: {str(p): int(o) for p, o in sorted(ends.items())}}, separators=(",", ":"))


def _planned_file(template: Path, topic: str, ends: dict[int, int] | None) -> str:
    """``offsets/N`` as Spark writes it (``v1``, the batch metadata, one line per source), from a real file,
    with this topic's line replaced by ``ends`` when given."""
    lines = [line for line in checkpoint.log_lines(template) if line.strip()]
    if ends is None:
        return "\n".join(lines)
    out, replaced = lines[:2], False
    for line in lines[2:]:
        if not replaced and checkpoint.topic_offsets(line, topic) is not None:
            line, replaced = _kafka_line(topic, ends), True
        out.append(line)
    if not replaced:
        raise CourseError(f"{template} has no offsets line for {topic}.")
    return "\n".join(out)


def crashed_copy(pipe, folder: str | Path, batch: int, ends: dict[int, int] | None = None):
    """The pipeline as a crash in ``batch`` would have left it (see the module docstring), in ``folder``.

    ``batch`` may be the real pipeline's next batch id (then ``ends`` is required: a batch planned over
    records the real query has not read yet)."""
    source = Path(pipe.checkpoint)
    offsets, commits = checkpoint.numbered_files(source / "offsets"), checkpoint.numbered_files(source / "commits")
    if batch < 1 or batch - 1 not in offsets:
        raise CourseError(f"a crashed copy needs batch {batch - 1} planned in {source}.")
    if batch not in offsets and ends is None:
        raise CourseError(f"batch {batch} was never planned: give the offsets it is planned up to.")
    root = Path(folder)
    shutil.rmtree(root, ignore_errors=True)
    checkpoint_root = root / "checkpoint"
    ckpt = checkpoint_root / f"start-{max(pipe.starts, 1)}" if pipe.variant.fresh_checkpoint_each_start \
        else checkpoint_root
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "commits").mkdir()
    for name in ("metadata", "sources"):
        if (source / name).is_dir():
            shutil.copytree(source / name, ckpt / name)
        elif (source / name).is_file():
            shutil.copy2(source / name, ckpt / name)
    for n, path in offsets.items():
        if n < batch:
            shutil.copy2(path, ckpt / "offsets" / str(n))
    for n, path in commits.items():
        if n < batch:
            shutil.copy2(path, ckpt / "commits" / str(n))
    template = offsets.get(batch, offsets[batch - 1])
    (ckpt / "offsets" / str(batch)).write_text(_planned_file(template, pipe.topic, ends))

    twin_folder = PipelineFolder(root)
    kept = [r for r in processes.read_jsonl(pipe.folder.progress)
            if r.get("event") != "progress" or int(r.get("batch", -1)) < batch]
    twin_folder.progress.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))

    twin = copy.copy(pipe)
    twin.checkpoint_root, twin.folder, twin.run_dir = str(checkpoint_root), twin_folder, root
    twin.crashes, twin.produced = list(pipe.crashes), list(pipe.produced)
    return twin


def planned_ends(start: dict[int, int], available: dict[int, int], rng: random.Random,
                 avoid: set[tuple[int, ...]] = frozenset()) -> dict[int, int]:
    """Ends for a batch planned from ``start`` over part of what waits (``available``: the offsets the topic
    reaches): at least one record in all, an uneven share per partition, and per-partition sizes that are
    none of ``avoid`` (the sizes of the batches the real query ran), so no batch size can stand in for it."""
    partitions = sorted(start)
    room = {p: max(0, available.get(p, start[p]) - start[p]) for p in partitions}
    if not any(room.values()):
        raise CourseError("no record waits beyond the planned batch's start: nothing to plan.")
    for _ in range(200):
        sizes = tuple(rng.randint(0, min(room[p], max(1, room[p] * 3 // 4))) for p in partitions)
        if sum(sizes) and sizes not in avoid:
            return {p: start[p] + n for p, n in zip(partitions, sizes)}
    # every share drawn was taken: one record on the first partition that has room is always new enough
    first = next(p for p in partitions if room[p])
    return {p: start[p] + (1 if p == first else 0) for p in partitions}
