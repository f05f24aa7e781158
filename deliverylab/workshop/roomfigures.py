"""The room load test's figures: percentiles, the broker's CPU and memory from /proc, a client's throttle time, one
line per run and the verdict (workshop/roomload.py measures; this file only counts and words it, without a broker).
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

RUNAWAY = "runaway"
LIMIT = 2.0  # the others' p99 with a runaway may be at most this many times the calm run's


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank percentile (p in 0..100) of ``values``; 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))  # ceil(n p / 100), at least 1
    return float(ordered[int(min(rank, len(ordered))) - 1])


def proc_cpu_ticks(stat_text: str) -> int:
    """utime + stime of /proc/<pid>/stat (fields 14 and 15; the command name may contain spaces)."""
    fields = stat_text.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def proc_rss_kb(status_text: str) -> int:
    """VmRSS of /proc/<pid>/status, in kB (0 when absent)."""
    for line in status_text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_percent(ticks_before: int, ticks_after: int, seconds: float, hz: int = 100) -> float:
    """CPU of a process between two samples, in percent of one core (200 % = both cores of a 2-core machine)."""
    return 100.0 * (ticks_after - ticks_before) / hz / seconds if seconds > 0 else 0.0


def throttle_ms(metrics: dict) -> float:
    """The largest ``throttle-time-max`` among a kafka-python client's metrics (0.0 when never throttled)."""
    found = [v for group in metrics.values() if isinstance(group, dict)
             for k, v in group.items() if k == "throttle-time-max" and isinstance(v, (int, float)) and v == v]
    return float(max(found, default=0.0))


def verdict(calm_p99: float, runaway_p99: float, limit: float = LIMIT) -> str:
    if calm_p99 <= 0:
        return "verdict: no calm run to compare with"
    ratio = runaway_p99 / calm_p99
    word = "PASS" if ratio <= limit else "FAIL"
    return f"verdict: the others' p99 with a runaway is {ratio:.2f}x the calm run's (limit {limit:g}x): {word}"


@dataclass
class Run:
    """One run's figures, merged from every learner process, the board and the broker samples."""
    name: str
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)
    cycles: int = 0
    relayed: int = 0
    read: int = 0
    throttled_ms: float = 0.0
    board_ms: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_kb: list[int] = field(default_factory=list)

    def merge(self, part: dict) -> None:
        self.latencies_ms += part["latencies_ms"]
        self.errors.update(part["errors"])
        self.cycles += part["cycles"]
        self.relayed += part["relayed"]
        self.read += part["read"]
        self.throttled_ms = max(self.throttled_ms, part["throttled_ms"])

    def line(self) -> str:
        lat, board = self.latencies_ms, self.board_ms
        cpu_avg = sum(self.cpu) / len(self.cpu) if self.cpu else 0.0
        return (f"{self.name:<8} {len(lat):>8} {percentile(lat, 50):>7.0f} {percentile(lat, 99):>7.0f} "
                f"{sum(self.errors.values()):>6} {self.cycles:>6} {cpu_avg:>6.0f}/{max(self.cpu, default=0):<4.0f} "
                f"{max(self.rss_kb, default=0) / 1024:>7.0f} {percentile(board, 50):>6.0f}/{max(board, default=0):<6.0f}"
                f" {self.throttled_ms:>6.0f}")


HEADER = ("run       records  p50 ms  p99 ms errors cycles CPU% avg/max RSS MiB board ms p50/max  thr ms")


def report(runs: list[Run], learners: int, seconds: float, machine: str, runaway: dict | None,
           quotas: str = "with the learners' quotas") -> list[str]:
    lines = [f"room load: {learners} learners, {seconds:g} s a run, one class broker on loopback {quotas}; {machine}",
             "(records: orders acknowledged; p50/p99: send to acknowledgement; CPU: the broker's, % of one core; "
             "thr ms: the largest throttle any simulated learner's producer or consumer was told to wait)", HEADER]
    lines += [run.line() for run in runs]
    for run in runs:
        if run.errors:
            lines.append(f"{run.name} errors: " + ", ".join(f"{k} x{n}" for k, n in run.errors.most_common(5)))
    if runaway:
        rate = runaway["bytes"] / max(runaway["seconds"], 1e-9) / (1 << 20)
        lines.append(f"runaway learner: {runaway['bytes'] / (1 << 20):.1f} MiB acknowledged in {runaway['seconds']:.0f} s "
                     f"= {rate:.2f} MiB/s, throttled up to {runaway['throttled_ms']:.0f} ms a response")
    calm = [percentile(r.latencies_ms, 99) for r in runs if not r.name.startswith(RUNAWAY)]
    loud = [percentile(r.latencies_ms, 99) for r in runs if r.name.startswith(RUNAWAY)]
    if calm and loud:  # against the calm runs' mean: a run's p99 also depends on what ran before it
        lines.append(verdict(sum(calm) / len(calm), sum(loud) / len(loud)))
    return lines


def phases(text: str) -> list[tuple[str, bool]]:
    """``calm,runaway,calm`` as (run name, with a runaway?) pairs, repeated names numbered: calm 1, runaway, calm 2."""
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    if not kinds or any(k not in ("calm", RUNAWAY) for k in kinds):
        raise SystemExit(f"--runs takes calm and runaway, separated by commas, e.g. calm,runaway,calm (not {text!r})")
    seen: Counter = Counter()
    named = []
    for k in kinds:
        seen[k] += 1
        named.append((f"{k} {seen[k]}" if kinds.count(k) > 1 else k, k == RUNAWAY))
    return named


def machine() -> str:
    try:
        kb = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal:"))
    except (OSError, StopIteration, ValueError):
        kb = 0
    return f"machine: {os.cpu_count()} cores, {kb / (1 << 20):.0f} GB"
