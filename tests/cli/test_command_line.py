"""The command line itself: a group without its sub-command names the sub-commands, a typo gets "did you mean"."""

import pytest

from forum_atlas.cli.main import main


def _refused(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    assert exit_.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("group, named", [("sources", "{list,update}"), ("brief", "{show,list}"),
                                          ("db", "{status,migrate,install-kernel}")])
def test_a_group_without_its_sub_command_names_the_sub_commands(capsys, group, named):
    err = _refused(capsys, group)
    assert f"the following arguments are required: {named}" in err
    assert "_command" not in err, "an internal argument name"


@pytest.mark.parametrize("argv, meant", [(["serch", "vitamin D"], "search"), (["sources", "lst"], "list"),
                                         (["ingest", "x", "--format", "jsnl"], "jsonl")])
def test_a_typo_gets_did_you_mean(capsys, argv, meant):
    assert f"did you mean {meant!r}?" in _refused(capsys, *argv)


def test_a_word_close_to_nothing_gets_the_plain_list(capsys):
    err = _refused(capsys, "zzzzzz")
    assert "invalid choice: 'zzzzzz' (choose from" in err and "did you mean" not in err
