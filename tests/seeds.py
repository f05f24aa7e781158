"""The hidden-run seed a lab's pure tests run under: each test once per seed (checks/hidden.py)."""
import pytest

from deliverylab.checks import hidden

#: Three seeds: enough to meet each lab's hidden variations in more than one shape.
SEEDS = ["11", "4711", "90210"]


def seed_fixture(seeds=SEEDS):
    """A ``seed`` fixture for a test module: ``seed = seed_fixture()``. It sets DELIVERYLAB_HIDDEN_SEED, forgets
    the hidden runs kept for another seed (``checks.hidden.once``), and gives the seed as a number."""

    @pytest.fixture(params=[str(s) for s in seeds])
    def seed(request, monkeypatch):
        monkeypatch.setenv(hidden.SEED_ENV, request.param)
        hidden._kept.clear()
        return int(request.param)

    return seed
