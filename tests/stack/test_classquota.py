"""The learners' quotas on the class broker (stack/classquota.py): the numbers, pinned, and what kafka-configs is
given, without a broker. The real broker's throttling: tests/stack/test_class_broker.py."""
from __future__ import annotations

import stat

import pytest

from deliverylab.config import CourseError, KafkaLogin
from deliverylab.stack import classquota


def test_the_numbers_are_the_ones_the_instructor_guide_states():
    # changing one is a decision: measure with `python -m deliverylab.workshop.roomload`, then update the guide
    assert classquota.QUOTAS == {"producer_byte_rate": 1 << 20, "consumer_byte_rate": 2 << 20,
                                 "request_percentage": 25.0, "controller_mutation_rate": 2.0}
    assert classquota.describe() == ("produces up to 1 MiB/s, fetches up to 2 MiB/s, uses up to 25 % of one "
                                     "request thread, creates or deletes up to 2 partitions a second")


def test_every_learner_shares_one_default_and_admin_and_board_are_exempt():
    plan = classquota.plan()
    assert plan[0] == (None, classquota.QUOTAS)
    assert {user: quotas for user, quotas in plan[1:]} == {"admin": classquota.UNLIMITED, "board": classquota.UNLIMITED}
    # Kafka's own "no quota" values (QuotaConfig: Long.MAX_VALUE bytes/s, Integer.MAX_VALUE %)
    assert classquota.UNLIMITED["producer_byte_rate"] == 9223372036854775807
    assert classquota.UNLIMITED["request_percentage"] == 2147483647.0
    assert classquota.UNLIMITED["controller_mutation_rate"] == 2147483647.0


def test_kafka_configs_gets_the_entity_and_the_numbers():
    assert classquota.alter_args(None, classquota.QUOTAS) == [
        "--alter", "--add-config", "consumer_byte_rate=2097152,controller_mutation_rate=2,producer_byte_rate=1048576,"
                                   "request_percentage=25",
        "--entity-type", "users", "--entity-default"]
    assert classquota.alter_args("board", classquota.UNLIMITED)[-4:] == ["--entity-type", "users", "--entity-name", "board"]
    assert classquota.add_config({"request_percentage": 12.5}) == "request_percentage=12.5"


def test_the_admin_password_is_in_a_0600_file_never_on_the_command_line(tmp_path):
    java = tmp_path / "java"  # stands in for java: keeps its arguments and the mode of the --command-config file
    java.write_text('#!/bin/sh\nfor a; do [ "$prev" = --command-config ] && stat -c %a "$a" >> "$0.mode"; prev=$a; done\n'
                    'echo "$@" >> "$0.args"\n')
    java.chmod(0o755)
    admin = KafkaLogin("127.0.0.1:19726", "admin", "s3cret-pw", mechanism="PLAIN")
    assert classquota.run_config_commands(str(java), "jars/*", admin, {"x": classquota.alter_args(None, {"a": 1})}) == []
    args = (tmp_path / "java.args").read_text()
    assert "kafka.admin.ConfigCommand --bootstrap-server 127.0.0.1:19726 --command-config" in args
    assert "s3cret-pw" not in args and (tmp_path / "java.mode").read_text().strip() == "600"


def test_the_admin_login_goes_in_a_properties_file():
    text = classquota.command_config(KafkaLogin("127.0.0.1:19726", "admin", "s3cret", mechanism="PLAIN"))
    assert "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" in text
    assert 'PlainLoginModule required username="admin" password="s3cret";' in text


def test_a_burst_passes_up_to_about_ten_seconds_of_the_quota():
    assert classquota.window_seconds(0) == 10 and classquota.window_seconds(25) == 25
    assert classquota.free_burst_bytes(1 << 20) == 10 << 20
    assert classquota.allowed_bytes(1 << 20, 6) == 11 << 20  # the first 6 s: the window is still 10 s, + 1 sample
    lesson_burst = 300 * 200  # 300 orders of ~200 bytes
    assert lesson_burst < classquota.free_burst_bytes(classquota.PRODUCER_BYTE_RATE) / 100


def test_quotas_already_set_on_this_cluster_run_no_jvm(tmp_path):
    record = tmp_path / "quotas.json"
    admin = KafkaLogin("127.0.0.1:1", "admin", "x", mechanism="PLAIN")
    classquota.classauth.write_secret_file(record, __import__("json").dumps(classquota.wanted("c1")))
    assert classquota.apply("/no/java", "/no/jars", admin, "c1", record) is False
    with pytest.raises((CourseError, OSError)):  # another cluster (storage formatted anew): set again
        classquota.apply("/no/java", "/no/jars", admin, "c2", record)
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
