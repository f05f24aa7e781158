"""Finding a usable Java (a JDK 17 or newer; Spark 4.2 supports 17, 21 and 25)."""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from ..config import CourseError

MIN_JAVA = 17
#: The Java versions Spark 4.2 supports ("Spark runs on Java 17/21/25", its docs' overview page);
#: others may work, with a warning. The course's own tests run on Java 17.
SUPPORTED_JAVA = (17, 21, 25)
#: Spark 4.2 deprecates Java 25 builds older than 25.0.3.
OLDEST_JAVA_25 = (25, 0, 3)

#: JIT flags of every course JVM (Spark kernels and drivers, executors, brokers): the quick tier (C1)
#: only. They live for minutes on a few hundred rows, so the optimising compiler never pays back the
#: CPU it burns. With C1 alone the JVM reserves only 48 MB for compiled code, and a long-lived Spark
#: JVM fills that: the unit tests' session did after seven minutes and died ("Out of space in
#: CodeCache for adapters"). So the code cache keeps the size it has with the full JIT.
QUICK_JIT_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")
QUICK_JIT = " ".join(QUICK_JIT_FLAGS)


def path_option(option: str, path) -> str:
    """``-Dname=<path>`` for an option string Spark splits at spaces (spark.driver.extraJavaOptions):
    quoted when the path has a space, as a course folder such as ``~/My Courses/eo`` does."""
    text = f"{option}={path}"
    return f'"{text}"' if any(c.isspace() for c in text) else text


FIX_JAVA = (
    "Install a Java 17 or newer JDK (for example `sudo apt-get install openjdk-17-jdk`, "
    "`brew install openjdk@17`, or Temurin 17 from adoptium) and put its `bin` first on PATH, "
    "or set JAVA_HOME to it."
)


def java_executable(name: str = "java") -> str:
    """The java (or javac) the course will use: $JAVA_HOME/bin first, then PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).exists():
        return str(Path(home) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise CourseError(f"No `{name}` found on PATH. {FIX_JAVA}")
    return found


def parse_java_version(version_text: str) -> tuple[int, ...]:
    """The version numbers from `java -version` output: '25.0.2' -> (25, 0, 2), '21' -> (21,)."""
    match = re.search(r'version "([\d.]+)', version_text)
    return tuple(int(part) for part in match.group(1).split(".") if part) if match else ()


def parse_java_major(version_text: str) -> int:
    """The major version from `java -version` output: '1.8.0_392' -> 8, '17.0.15' -> 17."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_text)
    if not match:
        raise CourseError(f"Could not read the Java version from: {version_text.strip()[:200]!r}. {FIX_JAVA}")
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    return major


@functools.lru_cache(maxsize=None)
def version_text(java: str) -> str:
    """What ``java -version`` prints (asked once per process: every Spark start needs it twice)."""
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    return out.stderr + out.stdout


def java_major(java: str | None = None) -> int:
    return parse_java_major(version_text(java or java_executable()))


def require_java() -> str:
    """Return the java path, or raise a CourseError that says how to get Java 17+."""
    java = java_executable()
    major = java_major(java)
    if major < MIN_JAVA:
        raise CourseError(f"`{java}` is Java {major}; Spark 4 and Kafka 4 need Java {MIN_JAVA} or newer. {FIX_JAVA}")
    return java
