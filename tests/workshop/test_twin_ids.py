"""Two machines with one learner id: a warning at setup, naming the other machine and the fix."""
from datetime import datetime, timedelta, timezone

from deliverylab.workshop import presence

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)


def hello(learner, machine, host, minutes_ago):
    return {"kind": "hello", "learner": learner, "machine": machine, "host": host,
            "at": (NOW - timedelta(minutes=minutes_ago)).isoformat()}


def test_another_machine_with_the_same_id_is_a_twin():
    items = [hello("ada", "m-mine", "my-pc", 5), hello("ada", "m-other", "pc-12", 30),
             hello("bob", "m-bob", "pc-13", 1), hello("ada", "m-old", "pc-7", 60 * 24 * 3)]
    found = presence.twins(items, "ada", "m-mine", now=NOW)
    assert list(found) == ["m-other"]  # not this machine, not another learner, not a machine from days ago
    warning = presence.twin_warning(found, "ada", "your OS user name")
    assert "pc-12" in warning and "'ada'" in warning and "workshop join" in warning


def test_no_twin_no_warning():
    assert presence.twin_warning(presence.twins([hello("ada", "m-mine", "me", 1)], "ada", "m-mine", NOW),
                                 "ada", "DELIVERYLAB_LEARNER") is None
