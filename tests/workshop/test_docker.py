"""docker/: the compose files and the Dockerfile, checked without a Docker engine.

Versions must equal requirements.txt and the jar pins (deliverylab/stack/ivy/), the broker must
be set up like the course's own (stack/broker.py), every published port bound to 127.0.0.1
(the class broker: only to the address the instructor gives), and JupyterLab's token left on.
"""
from __future__ import annotations

import base64
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml

from deliverylab import config
from deliverylab.stack import broker, classbroker, classlimits
from deliverylab.stack.java import SUPPORTED_JAVA

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
#: settings of the course's broker that a container broker must share (names in server.properties)
COURSE_SETTINGS = ("num.partitions", "auto.create.topics.enable", "delete.topic.enable", "offsets.topic.replication.factor",
                   "offsets.topic.num.partitions", "transaction.state.log.replication.factor",
                   "transaction.state.log.min.isr", "transaction.state.log.num.partitions",
                   "share.coordinator.state.topic.replication.factor", "share.coordinator.state.topic.min.isr",
                   "group.initial.rebalance.delay.ms")


def requirements() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def ivy(file: str, name: str) -> str:
    tree = ET.parse(ROOT / "deliverylab" / "stack" / "ivy" / file)
    return next(d.get("rev") for d in tree.iter("dependency") if d.get("name") == name)


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?error} (the last: an error when VAR is unset)."""
    def one(match):
        name, op, arg = match.group(1), match.group(2), match.group(3)
        if env.get(name):
            return env[name]
        if op == ":-":
            return arg
        raise KeyError(f"{name} is required: {arg}")
    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, str(text))


def compose(name: str) -> dict:
    return yaml.safe_load((DOCKER / name).read_text())


def kafka_env(service: dict, env: dict[str, str] | None = None) -> dict[str, str]:
    return {k: interpolate(v, env or {}) for k, v in service["environment"].items()}


def listeners(value: str) -> dict[str, tuple[str, int]]:
    found = {}
    for item in value.split(","):
        name, _, address = item.partition("://")
        host, _, port = address.rpartition(":")
        found[name] = (host, int(port))
    return found


def published(service: dict, env: dict[str, str] | None = None) -> list[tuple[str, int, int]]:
    ports = []
    for entry in service.get("ports", []):
        host_ip, host_port, container_port = interpolate(entry, env or {}).split(":")
        ports.append((host_ip, int(host_port), int(container_port)))
    return ports


def dockerfile() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    text = (DOCKER / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return [" ".join(part.strip() for part in chunk.split("\\\n")) for chunk in
            re.split(r"\n(?=[A-Z]+ )", "\n".join(lines)) if chunk.strip()]


def check_course_broker(env: dict[str, str]) -> None:
    course = dict(line.split("=", 1) for line in broker.server_properties(config.settings()).splitlines()
                  if "=" in line and not line.startswith("#"))
    for name in COURSE_SETTINGS:
        variable = "KAFKA_" + name.upper().replace(".", "_")
        assert str(env.get(variable)).lower() == course[name], f"{variable} differs from stack/broker.py"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft, one node
    assert len(base64.urlsafe_b64decode(env["CLUSTER_ID"] + "==")) == 16  # a valid cluster id
    assert env["KAFKA_HEAP_OPTS"].startswith("-Xmx")


def check_flaky(env: dict[str, str], bootstrap: str, monkeypatch) -> None:
    """The FLAKY listener is where shared-broker mode expects it, and sends clients to the local proxy."""
    monkeypatch.setenv("DELIVERYLAB_BROKER", bootstrap)
    s = config.settings()
    listen, advertised = listeners(env["KAFKA_LISTENERS"]), listeners(env["KAFKA_ADVERTISED_LISTENERS"])
    assert listen["FLAKY"][1] == s.flaky_listener_port
    assert advertised["FLAKY"] == ("127.0.0.1", s.flaky_proxy_port)
    assert (s.broker_host, int(bootstrap.rpartition(":")[2])) in advertised.values()


@pytest.mark.parametrize("name", ["compose.yaml", "class-broker.yaml"])
def test_the_compose_files_follow_the_compose_specification(name):
    schema = json.loads((Path(__file__).parent / "data" / "compose-spec.json").read_text())
    problems = [f"{'/'.join(map(str, e.path))}: {e.message}"
                for e in jsonschema.Draft7Validator(schema).iter_errors(compose(name))]
    assert not problems, problems


def test_the_broker_image_is_the_pinned_kafka_and_set_up_like_the_course(monkeypatch):
    services = compose("compose.yaml")["services"]
    assert services["kafka"]["image"] == f"apache/kafka:{ivy('kafka-broker.ivy.xml', 'kafka_2.13')}"
    env = kafka_env(services["kafka"])
    check_course_broker(env)
    check_flaky(env, interpolate(services["jupyterlab"]["environment"]["DELIVERYLAB_BROKER"], {}), monkeypatch)
    health = services["kafka"]["healthcheck"]
    assert "kafka-broker-api-versions.sh" in " ".join(health["test"]) and health["retries"] > 0
    assert services["jupyterlab"]["depends_on"]["kafka"]["condition"] == "service_healthy"


def test_ports_are_loopback_memory_is_limited_and_the_token_is_on():
    services = compose("compose.yaml")["services"]
    for name, service in services.items():
        assert service.get("mem_limit"), f"{name} has no memory limit"
        for host_ip, _, _ in published(service):
            assert host_ip == "127.0.0.1", f"{name} publishes a port on {host_ip}"
    assert (("127.0.0.1", 8888, 8888)) in published(services["jupyterlab"])
    lab = services["jupyterlab"]
    assert "JUPYTER_TOKEN" not in lab.get("environment", {}) and "command" not in lab
    cmd = next(line for line in dockerfile() if line.startswith("CMD "))
    for disabled in ("token=", "password=", "disable_check_xsrf", "allow_origin"):
        assert disabled not in cmd, f"the JupyterLab command sets {disabled}"
    assert "--ServerApp.ip=0.0.0.0" in cmd  # inside the container only; compose binds 127.0.0.1


def test_the_dockerfile_installs_exactly_the_pins():
    pins = requirements()
    lines = dockerfile()
    assert lines[0].startswith("FROM python:3.11")
    assert any("openjdk-17-jdk" in line for line in lines) and 17 in SUPPORTED_JAVA
    runs = " ".join(line for line in lines if line.startswith("RUN "))
    assert "pip install -r requirements.txt" in runs and "pip install --no-deps -e ." in runs
    assert "python -m deliverylab setup" in runs  # jars and class archive at build time
    for package, version in re.findall(r"pip install [^&]*?([A-Za-z0-9_.-]+)==([0-9][^\s&]*)", runs):
        assert pins.get(package.lower()) == version, f"the Dockerfile pins {package}=={version}"
    label = next(line for line in lines if line.startswith("LABEL "))
    labels = dict(re.findall(r'course\.([\w-]+)="([^"]+)"', label))
    for package in ("pyspark", "delta-spark", "kafka-python", "jupyterlab"):
        assert labels[package] == pins[package], f"LABEL course.{package} differs from requirements.txt"
    assert labels["kafka-broker"] == ivy("kafka-broker.ivy.xml", "kafka_2.13")
    assert (labels["python"], labels["java"]) == ("3.11", "17")


def test_the_dockerfile_is_well_formed():
    known = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER",
             "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
    lines = dockerfile()
    assert [line.split()[0] for line in lines if line.split()[0] not in known] == []
    assert lines[0].startswith("FROM ") and lines[-1].startswith("CMD ")
    command = json.loads(lines[-1][len("CMD "):])  # exec form: a JSON list, no shell in between
    assert command[:4] == ["python", "-m", "jupyter", "lab"]
    assert next(line for line in lines if line.startswith("USER ")) == "USER learner"  # not root


def test_the_jar_pins_match_the_python_packages():
    pins = requirements()
    assert ivy("spark-connectors.ivy.xml", "spark-sql-kafka-0-10_2.13") == pins["pyspark"]
    spark_minor = ".".join(pins["pyspark"].split(".")[:2])
    assert ivy("spark-connectors.ivy.xml", f"delta-spark_{spark_minor}_2.13") == pins["delta-spark"]


def test_the_build_context_leaves_out_local_state():
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", ".state", "workshop.ini"} <= set(ignored)


def server_property(variable: str) -> str:
    """The apache/kafka image's name rule, backwards: KAFKA_A_B -> a.b, __ -> _, ___ -> - (its docker/README)."""
    return variable[len("KAFKA_"):].lower().replace("___", "-").replace("__", "\0").replace("_", ".").replace("\0", "_")


def test_the_docker_class_broker_is_the_one_of_stack_up_class_published_only_where_the_instructor_says(
        monkeypatch, tmp_path):
    """Both ways of starting the class broker log everyone in the same way and trust only admin; the class
    network gets only the listeners that ask for a login."""
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    service = compose("class-broker.yaml")["services"]["kafka"]
    assert service["image"] == compose("compose.yaml")["services"]["kafka"]["image"] and service.get("mem_limit")
    assert service.get("healthcheck")
    with pytest.raises(KeyError, match="DELIVERYLAB_CLASS_ADDRESS"):
        published(service)  # no default address: never 0.0.0.0 by accident
    with pytest.raises(KeyError, match="DELIVERYLAB_CLASS_ADMIN_PASSWORD"):
        kafka_env(service, {"DELIVERYLAB_CLASS_ADDRESS": "192.168.1.20"})
    room = {"DELIVERYLAB_CLASS_ADDRESS": "192.168.1.20", "DELIVERYLAB_CLASS_ADMIN_PASSWORD": "adm"}
    # the class network gets CLASS and FLAKY; INTERNAL (the admin's PLAIN login) only this machine's loopback
    assert {(ip, port) for ip, port, _ in published(service, room)} == {
        ("192.168.1.20", 9092), ("192.168.1.20", 9094), ("127.0.0.1", classbroker.Ports(9092).internal)}
    env = kafka_env(service, room)
    check_course_broker(env)
    check_flaky(env, "192.168.1.20:9092", monkeypatch)
    assert listeners(env["KAFKA_ADVERTISED_LISTENERS"])["CLASS"] == ("192.168.1.20", 9092)
    docker = {server_property(k): str(v) for k, v in env.items() if k.startswith("KAFKA_") and k != "KAFKA_HEAP_OPTS"}
    jars = dict(line.split("=", 1) for line in classbroker.server_properties(
        config.settings(), "192.168.1.20", classbroker.Ports(9092), "adm").splitlines()
        if "=" in line and not line.startswith("#"))
    security = [k for k in jars if "sasl" in k or k in ("authorizer.class.name", "super.users",
                                                        "allow.everyone.if.no.acl.found", "listener.security.protocol.map",
                                                        "inter.broker.listener.name", "controller.listener.names")]
    assert len(security) >= 15
    for key in security:
        assert docker.get(key) == jars[key], f"{key}: docker/class-broker.yaml differs from stack/classbroker.py"
    # the limits: the same topic policy, numbers and defaults; the per-machine connection limit is left out on purpose
    # (behind Docker Desktop every learner's connection comes from one address)
    limits = classlimits.server_properties("192.168.1.20")
    per_machine = {"max.connections.per.ip", "max.connections.per.ip.overrides"}
    for key in set(limits) - per_machine:
        assert docker.get(key) == jars[key] == limits[key], f"{key}: docker/class-broker.yaml differs from classlimits.py"
    assert not per_machine & set(docker)
    policy_jar = [v for v in service["volumes"] if "deliverylab-class-policy.jar" in str(v)]
    assert policy_jar and policy_jar[0].endswith(":/opt/kafka/libs/deliverylab-class-policy.jar:ro")
    with pytest.raises(KeyError, match="DELIVERYLAB_CLASS_POLICY_JAR"):
        interpolate(policy_jar[0], room)  # `stack up --class --docker` writes it to docker.env
    listen, advertised = listeners(env["KAFKA_LISTENERS"]), listeners(env["KAFKA_ADVERTISED_LISTENERS"])
    ports = classbroker.Ports(9092)
    assert {name: port for name, (_, port) in listen.items()} == {
        "CLASS": ports.client, "FLAKY": ports.flaky, "CONTROLLER": ports.controller, "INTERNAL": ports.internal}
    assert advertised["INTERNAL"] == ("127.0.0.1", ports.internal) and listen["CONTROLLER"][0] == "127.0.0.1"
    assert "$$DELIVERYLAB_CLASS_ADMIN_PASSWORD" in " ".join(service["healthcheck"]["test"])  # the container's, at check time
