"""Progress and diagnostics as log records of the ``collabecon`` logger.

The command line shows them on stderr at the level its global flags set (``--quiet``,
``--verbose``; ``--json`` as quiet as ``--quiet``); the library only logs, so a program
that uses it sees nothing unless it configures logging, and one call on the ``collabecon``
logger silences or raises everything. The commands run in-process at their smallest
settings, the defection-free one with firms that move by a rule instead of training.
"""

from __future__ import annotations

import json
import logging
import re

import pytest

from collabecon.cli import main
from econ._log import NAMESPACE, get_logger
from tests.learning._tiny_problem import initial_models, tiny_context
from tests.test_cli_progress import _ToyFirms

ARGV = ["defection-free", "--rounds", "2"]
STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"


@pytest.fixture(autouse=True)
def toy_firms(monkeypatch):
    """``TorchFirms.prepare`` hands out toy firms."""
    import learning.drivers.defection_free as driver

    monkeypatch.setattr(driver.TorchFirms, "prepare", classmethod(lambda cls, *a, **k: _ToyFirms()))


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


def test_quiet_before_or_after_the_subcommand_prints_no_progress(capsys):
    shown, progress = _run(capsys, ARGV)
    assert progress.count("collabecon defection-free: [") == 3
    for argv in (["--quiet", *ARGV], [*ARGV, "--quiet"], ["--quiet", *ARGV, "--json"]):
        out, err = _run(capsys, argv)
        assert err == ""
        assert out == shown or json.loads(out)


def test_verbose_adds_debug_lines_led_by_their_time(capsys):
    out, err = _run(capsys, ["--verbose", *ARGV])
    lines = err.splitlines()
    assert all(re.match(rf"{STAMP} (DEBUG|INFO) collabecon defection-free: ", s) for s in lines)
    assert any(" DEBUG collabecon defection-free: arguments: " in s for s in lines), err
    assert sum(" INFO collabecon defection-free: [" in s for s in lines) == 3, err
    assert "collabecon" not in out


def test_json_keeps_stdout_one_json_object_even_verbose(capsys):
    out, err = _run(capsys, [*ARGV, "--json", "--verbose"])
    assert isinstance(json.loads(out), dict)
    assert " DEBUG collabecon defection-free: " in err
    out, err = _run(capsys, [*ARGV, "--json"])
    assert isinstance(json.loads(out), dict) and err == ""


def test_quiet_and_verbose_together_are_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--quiet", *ARGV, "--verbose"])
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "--quiet and --verbose" in err


def test_the_global_flags_are_in_the_help(capsys):
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    for out in (top, capsys.readouterr().out):
        assert "--quiet" in out and "--verbose" in out


def test_a_warning_shows_with_its_label_and_the_log_is_left_as_it_was(capsys, monkeypatch):
    import collabecon.cli.defection_free as command

    real = command.run

    def run(args):
        get_logger("learning.anywhere").warning("a notice")
        return real(args)

    monkeypatch.setattr(command, "run", run)
    logger = logging.getLogger(NAMESPACE)
    before = (logger.level, list(logger.handlers))
    _, err = _run(capsys, ["--quiet", *ARGV])
    assert err == "collabecon defection-free: warning: a notice\n"
    assert (logger.level, logger.handlers) == before


# --------------------------------------------------------------------------- the library


def _rounds(rounds):
    from learning.algorithms import build_algorithm
    from learning.loop import run_rounds

    ctx = tiny_context()
    algorithm = build_algorithm("fedavg", ctx, finetune_steps=2)
    return run_rounds(algorithm, initial_models(ctx), rounds, 0)


def test_library_records_reach_caplog_and_one_call_silences_them(caplog, capsys):
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger(NAMESPACE).handlers)
    assert get_logger("learning.loop").name == "collabecon.learning.loop"
    assert get_logger("collabecon.cli.sweep").name == "collabecon.cli.sweep"
    caplog.set_level(logging.DEBUG, logger=NAMESPACE)
    _rounds(2)
    messages = [r.getMessage() for r in caplog.records if r.name == "collabecon.learning.loop"]
    assert [m.split(":")[0] for m in messages] == ["fedavg round 1", "fedavg round 2"]
    assert capsys.readouterr() == ("", "")  # the library configures no handler
    caplog.clear()
    logging.getLogger("collabecon").setLevel(logging.WARNING)
    _rounds(2)
    assert [r for r in caplog.records if r.name.startswith(NAMESPACE)] == []


def test_a_failed_sweep_run_is_a_warning_in_the_log(caplog):
    from types import SimpleNamespace

    from collabecon.cli.sweep import _reporter

    lines = []
    run = SimpleNamespace(key="k1", grid={"lr": 1.0})
    failed = SimpleNamespace(run=run, measures=None, error="Traceback\nDivergedError: boom\n")
    _reporter(lines.append)(failed)
    assert lines == ["lr=1.0: failed"]
    (record,) = [r for r in caplog.records if r.name == "collabecon.cli.sweep"]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "run k1 (lr=1.0) failed: DivergedError: boom"
