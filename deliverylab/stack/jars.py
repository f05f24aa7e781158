"""Resolving the course's JVM jars once, into a project-local cache, so lessons run offline.

Classpaths, kept apart because their libraries clash:

* ``.state/jars/spark``: the Kafka connector and Delta, plus the crash lab's small Java
  hook (compiled here from ``deliverylab/crashlab/java``), handed to Spark through ``spark.jars``;
* ``.state/jars/spark41``: the same for module 10's kernel (``.venv-iceberg``, pyspark 4.1.3, see
  requirements-iceberg.txt), plus Iceberg's Spark runtime; its crash hook is compiled against
  pyspark 4.1.3's jars. Which of the two a Python uses follows from its pyspark (:func:`spark_kind`),
  and each is resolved by setup run with that venv's Python;
* ``.state/jars/kafka``: the Apache Kafka broker and a log4j binding;

and, in a folder of its own (only the class broker loads it), the class broker's topic policy, compiled
here from ``deliverylab/stack/classpolicy`` against the resolved kafka-clients jar (stack/classlimits.py).

Resolution uses the Ivy that ships inside pyspark (Spark's own resolver) against Maven
Central, driven by the checked-in ``deliverylab/stack/ivy/*.ivy.xml`` files. A stamp file
records what was resolved, so running setup again is quick and needs no network.
"""
from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..config import CourseError, settings
from .java import java_executable, require_java

IVY_DIR = Path(__file__).resolve().parent / "ivy"
CLASSPATHS = {
    "spark": IVY_DIR / "spark-connectors.ivy.xml",
    "spark41": IVY_DIR / "spark41-connectors.ivy.xml",
    "kafka": IVY_DIR / "kafka-broker.ivy.xml",
}
#: The Spark classpath for each pyspark minor version the course runs: the main kernel's (Spark 4.2), and
#: module 10's kernel (Spark 4.1 + Iceberg). Any other pyspark gets the main kernel's.
ICEBERG_SPARK_KIND = "spark41"
SPARK_KINDS = {"4.1": ICEBERG_SPARK_KIND}
MAIN_SPARK_KIND = "spark"
#: Java sources compiled into the spark classpath: the crash lab's hook (a data path, not an import).
CRASH_HOOK_SOURCES = Path(__file__).resolve().parent.parent / "crashlab" / "java"
CRASH_HOOK_JAR = "deliverylab-crash-hook.jar"
#: the class broker's topic policy (a data path too), compiled against the kafka classpath's kafka-clients jar
CLASS_POLICY_SOURCES = Path(__file__).resolve().parent / "classpolicy"
CLASS_POLICY_JAR = "deliverylab-class-policy.jar"


def pyspark_jars_dir() -> Path:
    """pyspark's own jars, found without importing pyspark (the Makefile resolves jars while pip
    is still installing packages an import of pyspark might reach for)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise CourseError("pyspark is not installed in this Python; run `make setup`.")
    return Path(list(spec.submodule_search_locations)[0]).resolve() / "jars"


@functools.lru_cache(maxsize=1)
def pyspark_version() -> str | None:
    """The installed pyspark's version, read from its metadata without importing it (None if absent); read once
    per process (every Spark start and class archive path asks)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pyspark")
    except PackageNotFoundError:
        return None


def spark_kind(pyspark: str | None = None) -> str:
    """The classpath (a key of CLASSPATHS) for a pyspark version, by default the one this Python runs:
    "spark41" under module 10's kernel (pyspark 4.1.x), "spark" otherwise."""
    version = pyspark if pyspark is not None else pyspark_version()
    return SPARK_KINDS.get(".".join((version or "").split(".")[:2]), MAIN_SPARK_KIND)


def is_spark_kind(kind: str) -> bool:
    """Is ``kind`` a classpath for Spark (with the crash hook), not the broker's?"""
    return kind == MAIN_SPARK_KIND or kind in SPARK_KINDS.values()


def _ivy_jar() -> Path:
    jars = sorted(pyspark_jars_dir().glob("ivy-*.jar"))
    if not jars:
        raise CourseError("pyspark's bundled Ivy jar is missing; reinstall with `make setup`.")
    return jars[-1]


def artifact_name(jar_file: str) -> str:
    """'kafka-clients-3.9.0.jar' -> 'kafka-clients'; 'scala-library-2.13.16.jar' -> 'scala-library'."""
    stem = jar_file[:-4] if jar_file.endswith(".jar") else jar_file
    return re.sub(r"-(\d+\.)+\d+[\w.\-]*$", "", stem)


def stamp(kind: str) -> str:
    digest = hashlib.sha256(CLASSPATHS[kind].read_bytes())
    if is_spark_kind(kind):
        for src in sorted(CRASH_HOOK_SOURCES.rglob("*.java")):
            digest.update(src.read_bytes())
    return digest.hexdigest()[:16]


def classpath_dir(kind: str) -> Path:
    return settings().jars / kind


def is_resolved(kind: str) -> bool:
    folder = classpath_dir(kind)
    marker = folder / ".resolved"
    return marker.exists() and marker.read_text().strip() == stamp(kind)


def _resolve_with_ivy(ivy_file: Path, target: Path, log) -> None:
    cache = settings().state / "ivy-cache" / ivy_file.name.split(".")[0]  # one per file: they resolve side by side
    staging = Path(tempfile.mkdtemp(prefix="ivy-", dir=settings().state))
    cmd = [
        require_java(), "-jar", str(_ivy_jar()),
        "-ivy", str(ivy_file), "-confs", "default",
        "-cache", str(cache),
        "-retrieve", str(staging / "[artifact]-[revision](-[classifier]).[ext]"),
    ]
    proc = _ivy_with_progress(cmd, ivy_file, log)
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise CourseError(
            f"Could not resolve the jars in {ivy_file.name}. Setup needs to reach Maven Central once "
            f"(check your network or proxy), then everything runs offline.\n--- Ivy said ---\n{tail}"
        )
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.jar"):
        old.unlink()
    for jar in staging.glob("*.jar"):
        shutil.move(str(jar), target / jar.name)
    shutil.rmtree(staging, ignore_errors=True)


#: How long a resolution takes, said before it starts (the time is mostly Maven Central's answers).
IVY_ESTIMATE = "about {mb} MB from Maven Central: usually a minute or two, seconds once in Ivy's cache"
#: What each classpath downloads the first time (MB), for the estimate.
IVY_DOWNLOAD_MB = {"spark": 105, "spark41": 150, "kafka": 45}


def _ivy_with_progress(cmd: list[str], ivy_file: Path, log) -> subprocess.CompletedProcess:
    """Run Ivy, saying every few seconds how many modules it has found and files it has fetched
    (stack/heartbeat.py). Returns what ``subprocess.run`` would, with stdout and stderr together."""
    from .heartbeat import Step

    kind = next((k for k, f in CLASSPATHS.items() if f == ivy_file), ivy_file.stem)
    counts = {"found": 0, "downloaded": 0}
    lines: list[str] = []

    def detail() -> str:
        return f"{counts['found']} modules found, {counts['downloaded']} files downloaded"

    estimate = IVY_ESTIMATE.format(mb=IVY_DOWNLOAD_MB.get(kind, 30))
    with Step(f"resolving the {kind} jars ({ivy_file.name})", estimate, detail=detail, log=log) as step:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            lines.append(line)
            text = line.strip()
            counts["found"] += text.startswith("found ")
            counts["downloaded"] += text.startswith("[SUCCESSFUL ]")
        code = proc.wait()
        step.failed = code != 0
    return subprocess.CompletedProcess(cmd, code, "".join(lines), "")


def _drop_jars_pyspark_ships(folder: Path) -> list[str]:
    """Keep one copy of each library: pyspark's own jars win over resolved duplicates."""
    shipped = {artifact_name(p.name) for p in pyspark_jars_dir().glob("*.jar")}
    dropped = []
    for jar in folder.glob("*.jar"):
        if artifact_name(jar.name) in shipped:
            jar.unlink()
            dropped.append(jar.name)
    return sorted(dropped)


def _build_crash_hook(folder: Path, log) -> None:
    """Compile the small Java class that lets a test crash the driver at exact checkpoint moments."""
    _compile(CRASH_HOOK_SOURCES, f"{pyspark_jars_dir()}/*", folder / CRASH_HOOK_JAR, "the crash hook", log)


def _compile(sources_dir: Path, classpath: str, jar: Path, what: str, log) -> None:
    """javac (Java 17 bytecode) every source under ``sources_dir`` against ``classpath``, into ``jar``."""
    sources = sorted(sources_dir.rglob("*.java"))
    if not sources:
        return
    javac = java_executable("javac")
    jar_tool = java_executable("jar")
    classes = Path(tempfile.mkdtemp(prefix="javac-", dir=settings().state))
    log(f"compiling {what} ...")
    proc = subprocess.run([javac, "--release", "17", "-nowarn", "-cp", classpath, "-d", str(classes),
                           *map(str, sources)], capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(classes, ignore_errors=True)
        raise CourseError(f"Could not compile {what} (needs a JDK's javac, not only a JRE):\n" + proc.stderr[-2000:])
    jar.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([jar_tool, "cf", str(jar), "-C", str(classes), "."], check=True)
    shutil.rmtree(classes, ignore_errors=True)


def class_policy_stamp() -> str:
    """What the class policy's jar was built from: its sources and the kafka classpath's own stamp."""
    digest = hashlib.sha256(stamp("kafka").encode())
    for src in sorted(CLASS_POLICY_SOURCES.rglob("*.java")):
        digest.update(src.read_bytes())
    return digest.hexdigest()[:16]


def class_policy_jar(log=print) -> Path:
    """The class broker's topic policy (stack/classlimits.py), compiled now if it is missing or out of date; a
    CourseError says to run setup when the kafka jars are not there."""
    jars("kafka")
    folder = settings().jars / "class-policy"
    marker, jar = folder / ".built", folder / CLASS_POLICY_JAR
    if not (jar.exists() and marker.exists() and marker.read_text().strip() == class_policy_stamp()):
        clients = sorted(classpath_dir("kafka").glob("kafka-clients-*.jar"))
        if not clients:
            raise CourseError("The kafka jars have no kafka-clients jar, which the class policy is built on. "
                              "Run `make setup` once, with network.")
        _compile(CLASS_POLICY_SOURCES, str(clients[-1]), jar, "the class broker's topic policy", log)
        marker.write_text(class_policy_stamp() + "\n")
    return jar


def ensure(kind: str, log=print) -> Path:
    """Resolve one classpath if it is missing or out of date. Returns its folder."""
    folder = classpath_dir(kind)
    if not is_resolved(kind):
        if is_spark_kind(kind) and kind != spark_kind():  # its crash hook and pyspark's own jars are this Python's
            raise CourseError(f"The {kind} jars go with another pyspark than this Python's ({pyspark_version()}): "
                              f"resolve them with that venv's Python (`make setup` does).")
        _resolve_with_ivy(CLASSPATHS[kind], folder, log)
        if is_spark_kind(kind):
            _drop_jars_pyspark_ships(folder)
            _build_crash_hook(folder, log)
        (folder / ".resolved").write_text(stamp(kind) + "\n")
        log(f"{kind} jars ready in {folder} ({len(list(folder.glob('*.jar')))} jars)")
    if kind == "kafka":
        class_policy_jar(log)  # its own folder and stamp: a change to it never resolves the broker's jars again
    return folder


def ensure_all(log=print) -> None:
    """Resolve this Python's Spark classpath and, in the main venv, the broker's, side by side (each Ivy run
    mostly waits on the network). Module 10's venv resolves its Spark classpath only: the broker is the main venv's."""
    from concurrent.futures import ThreadPoolExecutor

    settings().state.mkdir(parents=True, exist_ok=True)
    kind = spark_kind()
    if kind != MAIN_SPARK_KIND:
        ensure(kind, log)
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        kafka_jars = pool.submit(ensure, "kafka", log)
        ensure(kind, log)
        kafka_jars.result()


def jars(kind: str) -> list[Path]:
    """The resolved jars of one classpath, or a CourseError saying to run setup."""
    if not is_resolved(kind):
        raise CourseError(f"The {kind} jars are not set up (or are out of date). Run `make setup` once, with network.")
    return sorted(classpath_dir(kind).glob("*.jar"))
