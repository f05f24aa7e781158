"""Lesson 07's warnings reader, its pure part: which class logged what."""
from deliverylab.modules.m07 import logs


def test_warning_lines_are_told_apart_by_the_class_that_logged_them():
    text = ("26/11/27 04:50:01 WARN KafkaDataConsumer: Some data may be lost. Recovering from the earliest offset: 100\n"
            "java.lang.Exception: a stack trace line\n"
            "26/11/27 04:50:01 WARN KafkaDataConsumer: Offset 0 is out of range, and records in [0, 100) will be skipped\n"
            "26/11/27 04:50:02 ERROR TaskSetManager: not a warning\n")
    run = logs.Logged("finished", [(m.group(1), m.group(2)) for m in map(logs._WARNING.search, text.splitlines()) if m])
    assert run.by() == ["KafkaDataConsumer"]
    assert run.said("KafkaDataConsumer", "Some data may be lost")
    assert not run.said("KafkaMicroBatchStream", "")
