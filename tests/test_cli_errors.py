"""One error style on every path out of the command line."""

import subprocess
import sys

import pytest

import collabecon.cli.duopoly
from collabecon.cli import main


def _raising(exc):
    def run(args):
        raise exc

    return run


@pytest.mark.parametrize(
    ("exc", "code", "text"),
    [
        (KeyboardInterrupt(), 130, "collabecon: interrupted"),
        (ValueError("--ql must lie in [0, 1], got 2"), 2, "--ql must lie in [0, 1], got 2"),
        (
            FileNotFoundError(2, "No such file or directory", "run.csv"),
            2,
            "No such file or directory: run.csv",
        ),
    ],
)
def test_each_way_out_is_one_line(monkeypatch, capsys, exc, code, text):
    monkeypatch.setattr(collabecon.cli.duopoly, "run", _raising(exc))
    assert main(["duopoly", "--ql", "0.3", "--qh", "0.8"]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and text in err and "Traceback" not in err


def test_a_closed_pipe_ends_quietly():
    # the reader of stdout goes away after 10 bytes: no traceback, no message
    pipeline = f"{sys.executable} -m collabecon.cli duopoly --ql 0.3 --qh 0.8 --json | head -c 10"
    out = subprocess.run(["bash", "-c", pipeline], capture_output=True, text=True, check=True)
    assert out.stdout == '{"q_l": 0.' and out.stderr == ""


def test_unknown_subcommand_and_bad_flag_are_one_line(capsys):
    for argv in (["nope"], ["duopoly", "--ql", "x", "--qh", "0.8"]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "usage" not in err
