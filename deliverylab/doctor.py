"""The environment check (lesson zero, and ``python -m deliverylab doctor``).

Each check says ok or FAIL; a failing check says how to fix it.
"""
from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass

from .config import CourseError, settings
from .stack import broker, flaky, jars, kernels
from .stack.java import (MIN_JAVA, OLDEST_JAVA_25, SUPPORTED_JAVA, java_executable, java_major,
                         parse_java_version, version_text)

MIN_MEMORY_GB = 4.0


@dataclass
class Finding:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def lines(self) -> list[str]:
        head = f"{'ok  ' if self.ok else 'FAIL'}  {self.name:<8} {self.detail}"
        return [head] if self.ok or not self.fix else [head, f"      fix: {self.fix}"]


def check_python() -> Finding:
    v = sys.version_info
    ok = v >= (3, 10)
    return Finding("python", ok, f"{v.major}.{v.minor}.{v.micro}", "" if ok else "Use Python 3.10 or newer for the venv.")


def check_java() -> Finding:
    try:
        java = java_executable()
        major = java_major(java)
    except CourseError as err:
        return Finding("java", False, "not found", str(err))
    ok = major >= MIN_JAVA
    if ok and major not in SUPPORTED_JAVA:
        listed = ", ".join(map(str, SUPPORTED_JAVA[:-1])) + " or " + str(SUPPORTED_JAVA[-1])
        return Finding("java", True, f"Java {major} ({java}); warning: Spark 4.2 supports Java {listed}. "
                                     f"If Spark fails to start, put a Java {listed} JDK first on PATH.")
    if major == 25 and parse_java_version(version_text(java)) < OLDEST_JAVA_25:
        return Finding("java", True, f"Java {major} ({java}); warning: Spark 4.2 deprecates Java 25 before "
                                     "25.0.3. Update the JDK, or put a Java 17 or 21 JDK first on PATH.")
    return Finding("java", ok, f"Java {major} ({java})",
                   "" if ok else f"Install Java {MIN_JAVA} or 21 and put it first on PATH (or set JAVA_HOME).")


def available_memory_gb() -> float | None:
    """What the machine can still give (running.available_gb: MemAvailable), or None."""
    from . import running

    return running.available_gb()


def check_memory() -> Finding:
    """Free memory against what the course needs, counting what it holds already (open kernels, the broker):
    with lessons open, the 4 GB are partly in use by them. Warns when the open kernels leave less than one
    more lesson takes (running.memory_warning), naming them."""
    from . import running

    gb = available_memory_gb()
    if gb is None:
        return Finding("memory", True, f"unknown on this system (about {MIN_MEMORY_GB:.0f} GB free is needed)")
    rows = running.classify(running.course_procs())
    held = sum(r["pss_mb"] for r in rows) / 1024
    needed = max(0.0, MIN_MEMORY_GB - held)
    ok = gb >= needed
    detail = f"{gb:.1f} GB available" + (f"; the course holds {held:.1f} GB already" if held >= 0.1 else "")
    if ok:
        from .stack import jupyter

        kernels = any(r["role"] == "notebook kernel" for r in rows)
        warning = running.memory_warning(rows, gb, jupyter.kernel_notebooks() if kernels else {})
        detail += "".join(f"\n      {line}" for line in warning)
    return Finding("memory", ok, detail,
                   "" if ok else f"Close other programs: the course (the broker, JupyterLab, a lesson's kernel with its "
                                 f"Spark session and a crash-lab driver) needs about {MIN_MEMORY_GB:.0f} GB.")


def check_ports() -> Finding:
    s = settings()
    proxy = s.flaky_proxy_port
    # the flaky-network proxy listens only while a lesson's or a test's demo runs; it holds a lock meanwhile
    proxy_busy = not broker.port_is_free(proxy) and not flaky.running(s)
    proxy_note = " (a lesson's flaky-network demo is using it now)" if flaky.running(s) else ""
    if s.shared:  # no broker of our own: only the flaky-network proxy listens on this machine
        return Finding("ports", not proxy_busy,
                       f"{proxy} ({'in use by another program' if proxy_busy else 'free'}{proxy_note}; "
                       "for the flaky-network proxy; the broker is shared)",
                       f"Stop the program using port {proxy}." if proxy_busy else "")
    ours = broker.status().running
    ports = (s.kafka_port, s.controller_port, s.flaky_listener_port, proxy)
    busy = [p for p in ports[:3] if not ours and not broker.port_is_free(p)]
    busy += [proxy] if proxy_busy else []
    if busy:
        return Finding("ports", False, f"{', '.join(map(str, busy))} in use by another program",
                       "Stop that program, or set DELIVERYLAB_KAFKA_PORT / DELIVERYLAB_CONTROLLER_PORT to free ports.")
    owner = "the course's broker" if ours else "free"
    return Finding("ports", True, f"{', '.join(map(str, ports))} ({owner}){proxy_note}")


#: The main kernel's classpaths (module 10's, spark41, is checked with its kernel: check_iceberg_kernel).
MAIN_CLASSPATHS = (jars.MAIN_SPARK_KIND, "kafka")


def check_jars() -> Finding:
    missing = [kind for kind in MAIN_CLASSPATHS if not jars.is_resolved(kind)]
    if missing:
        return Finding("jars", False, f"not set up: {', '.join(missing)}", "Run `make setup` once (it needs network once).")
    counts = ", ".join(f"{kind} {len(jars.jars(kind))}" for kind in MAIN_CLASSPATHS)
    return Finding("jars", True, f"cached ({counts} jars)")


def check_kernel() -> Finding:
    """The main kernel (every module but 10): this venv's pyspark, its kernelspec, the jars for that pyspark."""
    from pathlib import Path

    version, kind = jars.pyspark_version(), jars.spark_kind()
    spec = Path(sys.prefix) / "share" / "jupyter" / "kernels" / kernels.MAIN_KERNEL / "kernel.json"
    problems = [p for p, bad in (("pyspark is not installed", version is None),
                                 (f"no kernelspec {kernels.MAIN_KERNEL} in {sys.prefix}", not spec.exists()),
                                 (f"the {kind} jars are not resolved", not jars.is_resolved(kind))) if bad]
    detail = f"{kernels.MAIN_KERNEL} (every module but 10): pyspark {version}, {kind} jars"
    return Finding("kernel", not problems, "; ".join([detail] + problems), "Run `make setup`." if problems else "")


def check_iceberg_kernel() -> Finding:
    """Module 10's kernel, "Python 3 (Spark 4.1 + Iceberg)": its venv and pyspark, its jars, its kernelspec here.

    A machine without its venv at all (a course image built before module 10) gets a warning, not a failure:
    every other module runs without it."""
    python = kernels.iceberg_python()
    name = f"{kernels.ICEBERG_KERNEL} (module 10, \"{kernels.ICEBERG_DISPLAY_NAME}\")"
    if not python.exists():
        return Finding("iceberg", True, f"{name}: warning: not set up ({kernels.ICEBERG_VENV} is missing); "
                                        "module 10 runs on it: `make setup` builds it")
    wanted, version = kernels.pinned_pyspark(), kernels.venv_pyspark(python)
    kind = jars.spark_kind(version or wanted)
    spec = kernels.installed_kernelspec()
    problems = [p for p, bad in (
        (f"its pyspark is {version}, {kernels.ICEBERG_REQUIREMENTS} pins {wanted}", version != wanted),
        (f"the {kind} jars are not resolved", not jars.is_resolved(kind)),
        (f"JupyterLab does not know it (no kernelspec in {kernels.main_prefix()})", spec is None),
        (f"its kernelspec runs {spec['argv'][0] if spec else ''}, not {python}", spec is not None
         and spec.get("argv", [""])[0] != str(python))) if bad]
    detail = f"{name}: {kernels.ICEBERG_VENV}, pyspark {version}, {kind} jars"
    return Finding("iceberg", not problems, "; ".join([detail] + problems), "Run `make setup`." if problems else "")


def check_broker() -> Finding:
    st = broker.status()
    if st.shared_by:
        if st.answering:
            return Finding("broker", True, f"the shared broker at {st.bootstrap} (set by {st.shared_by}) is answering")
        return Finding("broker", False, f"the shared broker at {st.bootstrap} (set by {st.shared_by}) does not answer",
                       str(broker.shared_broker_error(settings())))
    if st.running and st.answering:
        return Finding("broker", True, f"the course's own broker, answering on {st.bootstrap}")
    if st.running:
        return Finding("broker", False, f"running (pid {st.pid}) but not answering on {st.bootstrap}",
                       "Run `python -m deliverylab stack down` then `stack up`; see .state/kafka/broker.log.")
    return Finding("broker", False, "not running", "Run `python -m deliverylab stack up` (or `make lab`).")


def check_learner() -> Finding:
    """The learner id, and (on a shared broker) whether another machine uses it too."""
    s = settings()
    detail = f"{s.learner} (from {s.learner_source})"
    if not s.shared:
        return Finding("learner", True, detail)
    from .workshop import events, feed, presence

    try:
        found = presence.twins(feed.read_events(s.bootstrap), s.learner, events.machine_id())
    except Exception:  # noqa: BLE001 - the broker check above says what is wrong with the broker
        found = {}
    warning = presence.twin_warning(found, s.learner, s.learner_source)
    return Finding("learner", warning is None, detail + ("" if warning is None else ", used by another machine too"),
                   warning or "")


def check_disk() -> Finding:
    free_gb = shutil.disk_usage(settings().root).free / 1024**3
    ok = free_gb >= 2
    return Finding("disk", ok, f"{free_gb:.0f} GB free", "" if ok else "Free at least 2 GB for jars, broker data and tables.")


def check_user() -> Finding:
    from .stack.jupyter import running_as_root

    if running_as_root():
        return Finding("user", True, "root: `make lab` starts JupyterLab with allow_root (it refuses root otherwise)")
    return Finding("user", True, "not root")


CHECKS = (check_python, check_java, check_memory, check_disk, check_ports, check_jars, check_kernel, check_iceberg_kernel,
          check_broker, check_learner, check_user)


def run(print_fn=print) -> list[Finding]:
    findings = [check() for check in CHECKS]
    for finding in findings:
        for line in finding.lines():
            print_fn(line)
    return findings


def verdict(findings: list[Finding]) -> str:
    failed = [f.name for f in findings if not f.ok]
    return "environment: ready" if not failed else f"environment: NOT ready ({', '.join(failed)})"


def main() -> int:
    findings = run()
    print(verdict(findings))
    return 0 if all(f.ok for f in findings) else 1
