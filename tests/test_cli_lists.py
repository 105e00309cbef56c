"""List flags take words or commas, and every bad one is one line on stderr with exit 2."""

import json

import pytest

from collabecon.cli import main


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("lam", [["0.5", "1", "2"], ["0.5,1,2"], ["0.5,1", "2"], [" 0.5,1,2 "]])
def test_one_list_however_it_is_written(lam, capsys):
    code, out, _ = _run(
        ["privacy", "exists", "--model", "dp-mean", "--lam", *lam, "--json"], capsys
    )
    assert code == 0
    reference = main(
        ["privacy", "exists", "--model", "dp-mean", "--lam", "0.5", "1", "2", "--json"]
    )
    assert reference == 0
    again, _ = capsys.readouterr()
    assert json.loads(out) == json.loads(again)


@pytest.mark.parametrize(
    ("lam", "message"),
    [
        ("0.5 1 2", "holds a space"),
        ("0.5,,1", "empty item"),
        ("nan", "not a finite number"),
        ("1,x", "'x' is not a number"),
    ],
)
def test_a_bad_list_is_one_line_and_exit_2(lam, message, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["privacy", "exists", "--model", "dp-mean", "--lam", lam])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "--lam" in err and "usage" not in err
