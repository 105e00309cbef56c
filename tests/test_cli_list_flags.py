"""Every list flag of every subcommand parses words and commas alike, and rejects the rest.

Each row names a subcommand's list flag, the flags that must accompany it, the items as
separate words, and the value the subcommand receives. The subcommand's ``run`` is replaced
by one that records the parsed arguments, so no row trains or plays anything.
"""

import importlib
import json

import pytest

from collabecon.cli import COMMANDS, main

# (subcommand words, flag, items, parsed value, a bad word with a space, an empty item)
LIST_FLAGS = [
    (["market"], "--qualities", ["0.2", "0.5", "0.9"], [0.2, 0.5, 0.9], "0.2 0.5", "0.2,,0.5"),
    (
        ["market", "--qualities", "0.2", "0.5"],
        "--names",
        ["low", "high"],
        ["low", "high"],
        "firm A",
        "low,",
    ),
    (["pricing", "repeated"], "--bias", ["0", "0.1"], [0.0, 0.1], "0 0.1", ",0.1"),
    (["bargain"], "--firms", ["0.2", "0.6"], [0.2, 0.6], "0.2 0.6", "0.2,"),
    (["cobo"], "--methods", ["cobo", "local"], ["cobo", "local"], "cobo local", "cobo,,local"),
]


def _parsed(monkeypatch, capsys, argv):
    """The namespace the subcommand of ``argv`` receives."""
    module = importlib.import_module(COMMANDS[argv[0]][0])
    seen = []
    monkeypatch.setattr(module, "run", lambda args: seen.append(args) or {})
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {}
    return seen[0]


def _dest(flag):
    return flag[2:].replace("-", "_")


@pytest.mark.parametrize(("command", "flag", "items", "value", "_s", "_e"), LIST_FLAGS)
def test_words_and_commas_give_the_same_list(
    command, flag, items, value, _s, _e, monkeypatch, capsys
):
    words = _parsed(monkeypatch, capsys, [*command, flag, *items])
    commas = _parsed(monkeypatch, capsys, [*command, flag, ",".join(items)])
    mixed = _parsed(monkeypatch, capsys, [*command, flag, ",".join(items[:-1]), items[-1]])
    assert getattr(words, _dest(flag)) == getattr(commas, _dest(flag)) == value
    assert getattr(mixed, _dest(flag)) == value


@pytest.mark.parametrize(("command", "flag", "_i", "_v", "spaced", "empty"), LIST_FLAGS)
def test_a_space_or_an_empty_item_is_one_line_and_exit_2(
    command, flag, _i, _v, spaced, empty, capsys
):
    for word, message in ((spaced, "holds a space"), (empty, "empty item")):
        with pytest.raises(SystemExit) as stop:
            main([*command, flag, word])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and flag in err and message in err, err


def test_names_must_be_distinct(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["market", "--qualities", "0.2", "0.5", "--names", "a,a"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--names" in err and "repeated: a" in err


@pytest.mark.parametrize("bias", [["0.1"], ["0", "0.1", "0.2"]])
def test_bias_takes_two_numbers(bias, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["pricing", "repeated", "--bias", *bias])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--bias: takes 2 items" in err


def test_a_negative_first_item_goes_after_an_equals_sign(monkeypatch, capsys):
    args = _parsed(monkeypatch, capsys, ["pricing", "repeated", "--bias=-1,-0.9"])
    assert args.bias == [-1.0, -0.9]


def test_market_from_the_command_line_either_way(capsys):
    outs = []
    for argv in (["0.711", "0.778", "0.711"], ["0.711,0.778,0.711"]):
        assert main(["market", "--qualities", *argv, "--names", "a,b,c", "--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1]
    assert outs[0]["names"] == ["a", "b", "c"]
