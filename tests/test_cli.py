import pytest

from deliverylab.__main__ import main


def test_options_after_a_pass_through_command_reach_it(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["chaos", "--pipeline", "no_such_pipeline", "--json"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'no_such_pipeline'" in err and "at_least_once" in err


def test_labs_check_runs_through_the_cli(capsys):
    assert main(["labs", "check"]) == 0
    assert "labs match their solutions" in capsys.readouterr().out


def test_unknown_stack_action_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["stack", "sideways"])
    assert "invalid choice" in capsys.readouterr().err
