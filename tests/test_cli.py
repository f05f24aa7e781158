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


@pytest.mark.parametrize("argv, archive_recorded", [(["setup"], True), (["setup", "--jars-only"], False)])
def test_setup_resolves_the_jars_and_records_the_archive_unless_told_jars_only(monkeypatch, argv, archive_recorded):
    from deliverylab.stack import classarchive, jars

    calls = []
    monkeypatch.setattr(jars, "ensure_all", lambda: calls.append("jars"))
    monkeypatch.setattr(classarchive, "build", lambda: calls.append("archive"))
    assert main(argv) == 0
    assert calls == (["jars", "archive"] if archive_recorded else ["jars"])
