"""Fixtures for the workshop tests: a learner of their own, in a state folder of their own.

The workshop file is pointed at a temporary path, so a workshop.ini in the project never
changes what these tests see, and no test ever writes one there.
"""
from __future__ import annotations

import uuid

import pytest

from deliverylab.workshop import events


@pytest.fixture(autouse=True)
def own_learner(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("DELIVERYLAB_WORKSHOP_FILE", str(tmp_path / "workshop.ini"))
    monkeypatch.setenv("DELIVERYLAB_LEARNER", "test-ws-" + uuid.uuid4().hex[:8])
    monkeypatch.delenv("DELIVERYLAB_BROKER", raising=False)
    yield
    events.flush(5)
    events._lesson.clear()
    events._last_verdict.clear()
    events._problems.clear()
    events._senders.clear()


@pytest.fixture
def sent(monkeypatch):
    """Events as they would reach the broker, without one (the background thread still runs)."""
    items: list[dict] = []

    def fake_send(sender, item):
        items.append(item)

    monkeypatch.setattr(events, "_send_one", fake_send)
    events._senders.clear()
    return items
