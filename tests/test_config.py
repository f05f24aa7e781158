import pytest

from deliverylab import config
from deliverylab.config import CourseError


def test_learner_id_comes_from_the_environment_and_is_made_safe(monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_LEARNER", "Ada Lovelace!")
    s = config.settings()
    assert s.learner == "ada-lovelace"
    assert s.learner_prefix() == "xo.ada-lovelace."


def test_a_bad_port_setting_says_what_to_do(monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_KAFKA_PORT", "ninety")
    with pytest.raises(CourseError, match="DELIVERYLAB_KAFKA_PORT='ninety' is not a usable port"):
        config.settings()


def test_state_folder_can_be_moved(monkeypatch, tmp_path):
    monkeypatch.setenv("DELIVERYLAB_STATE", str(tmp_path))
    s = config.settings()
    assert s.state == tmp_path and s.jars == tmp_path / "jars"


