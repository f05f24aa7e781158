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


def test_flags_take_1_or_0_and_fall_back_to_their_default(monkeypatch):
    monkeypatch.delenv("DELIVERYLAB_REDUCED", raising=False)
    monkeypatch.delenv("DELIVERYLAB_STANDBY_WARM_UP", raising=False)
    s = config.settings()
    assert s.reduced is False and s.standby_warm_up is True   # a learner's run: every variant, warm standbys
    monkeypatch.setenv("DELIVERYLAB_REDUCED", "1")
    monkeypatch.setenv("DELIVERYLAB_STANDBY_WARM_UP", "0")
    s = config.settings()
    assert s.reduced is True and s.standby_warm_up is False    # what make test sets
    monkeypatch.setenv("DELIVERYLAB_STANDBY_WARM_UP", "off")
    with pytest.raises(CourseError, match="DELIVERYLAB_STANDBY_WARM_UP='off' is not a flag: set it to 1"):
        config.settings()
