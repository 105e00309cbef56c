"""The subcommand contract, checked on every entry of :data:`collabecon.cli.COMMANDS`.

A subcommand module has ``add_arguments(parser)`` and ``run(args)``, and optionally
``render(result)`` and ``exit_status(result)``; a small valid invocation of each (the bases of
``tests/test_cli_bad_inputs.py``, whose table holds every subcommand to a one-line refusal
with exit code 2 on bad input) exits 0 and, with ``--json``, prints one JSON object whose
rendering is text.
"""

import argparse
import importlib
import inspect
import json

import pytest

from collabecon.cli import COMMANDS, main
from tests.test_cli_bad_inputs import BASE, CONFIG


def _module(name):
    return importlib.import_module(COMMANDS[name][0])


def _one_parameter(fn):
    return callable(fn) and len(inspect.signature(fn).parameters) == 1


def _has_the_shape(name):
    module = _module(name)
    assert _one_parameter(module.add_arguments) and _one_parameter(module.run)
    for optional in ("render", "exit_status"):
        assert not hasattr(module, optional) or _one_parameter(getattr(module, optional))
    parser = argparse.ArgumentParser(prog=f"collabecon {name}")
    module.add_arguments(parser)
    assert parser.format_help()


def check_subcommand(name):
    """The checks every subcommand passes without running (each called with its name)."""
    return [_has_the_shape]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_subcommand_keeps_the_contract(name):
    for check in check_subcommand(name):
        check(name)


#: marks by base: slow for the demo (``tests/test_demo.py`` runs a small demo with ``--json``
#: in the fast suite and checks every part of its output) and for table1 (it trains for
#: minutes); flower's needs its extra
MARKS = {"demo": pytest.mark.slow, "table1": pytest.mark.slow, "flower": pytest.mark.flower}


@pytest.mark.parametrize(
    "base",
    [pytest.param(base, marks=MARKS[base]) if base in MARKS else base for base in sorted(BASE)],
)
def test_a_small_invocation_prints_one_json_object(base, tmp_path, monkeypatch, capsys):
    # the rows of the bad-input table fail because of the value they add, not the base
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    argv = [str(config) if a == "@config" else a for a in BASE[base]]
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert isinstance(result, dict)
    module = _module(argv[0])
    if hasattr(module, "render"):
        assert isinstance(module.render(result), str)
