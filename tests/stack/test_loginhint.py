"""stack/loginhint.py without a broker: which errors get the login's line, and only when the broker answers it.
The real errors (kafka-python's, on a real class broker) are in tests/stack/test_class_broker.py."""
from __future__ import annotations

from deliverylab.config import KafkaLogin
from deliverylab.stack import loginhint

ADA = KafkaLogin("192.168.1.20:9092", "ada", "pw")
KAFKA_PYTHON = Exception("KafkaTimeoutError: Unable to bootstrap from 192.168.1.20:9092")
SPARK = Exception("An error occurred while calling o71.count.\n: org.apache.kafka.common.errors.TimeoutException: "
                  "Timed out waiting for a node assignment. Call: describeTopics")


def test_a_client_without_the_login_is_told_to_pass_it_when_the_broker_answers_the_login():
    asked = []
    line = loginhint.hint(KAFKA_PYTHON, ADA, answers=lambda broker, login: asked.append((broker, login)) or True)
    assert asked == [("192.168.1.20:9092", ADA)]
    assert line.startswith("The class broker at 192.168.1.20:9092 answers your login, but this client got no answer")
    assert "**lesson.login" in line and ".options(**lesson.spark_login)" in line and "\n" not in line
    assert loginhint.hint(SPARK, ADA, answers=lambda broker, login: True) == line


def test_no_line_on_the_course_broker_for_other_errors_or_when_the_broker_does_not_answer_the_login_either():
    assert loginhint.hint(KAFKA_PYTHON, None, answers=lambda broker, login: True) is None
    assert loginhint.hint(ValueError("could not convert string to float: 'forty'"), ADA,
                          answers=lambda broker, login: True) is None
    assert loginhint.hint(KAFKA_PYTHON, ADA, answers=lambda broker, login: False,
                          closed=lambda broker: None) is None  # down, or a wrong address


def test_a_machine_the_broker_hangs_up_on_at_once_is_told_it_is_over_the_connection_limit():
    line = loginhint.hint(KAFKA_PYTHON, ADA, answers=lambda broker, login: False, closed=lambda broker: True)
    assert line.startswith("The class broker at 192.168.1.20:9092 closes this machine's new connections at once")
    assert "max.connections.per.ip" in line and "\n" not in line
