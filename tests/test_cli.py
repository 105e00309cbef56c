"""The command line: dispatch, --json, and bad input as exit code 2."""

import json

import pytest

from collabecon.cli import main


def test_help_lists_subcommands(capsys):
    assert main([]) == 0
    assert "verify" in capsys.readouterr().out


def test_unknown_subcommand_exits_2():
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2


def test_verify_json_shape(capsys):
    assert main(["verify", "--json", "--only", "thesis.ch3.lemma2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"propositions", "summary", "papers"}
    assert set(out["summary"]) >= {"proved", "checked", "refuted", "disagreeing"}
    first = out["propositions"][0]
    assert set(first) >= {"id", "source", "statement", "status", "expected", "agrees", "evidence"}


def test_verify_unknown_prefix_is_a_clear_error(capsys):
    assert main(["verify", "--only", "nowhere."]) == 2
    assert "matches no registered proposition" in capsys.readouterr().err
