"""``collabecon duopoly`` and ``collabecon bargain``."""

import json

import pytest

from collabecon.cli import main


def test_duopoly_json(capsys):
    assert main(["duopoly", "--ql", "0.3", "--qh", "0.8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["U_l"] == pytest.approx(12 / 841) and out["p_h"] == pytest.approx(8 / 29)
    assert {"p_l", "p_h", "D_l", "D_h", "U_l", "U_h", "consumer_surplus"} <= set(out)


def test_bargain_json(capsys):
    assert main(["bargain", "--ql0", "0", "--qh0", "0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rho_star"] == pytest.approx(4 / 13) and out["nash_product"] == pytest.approx(
        5 / 4096
    )
    assert {"rho_star", "q_l_star", "q_h_star", "nash_product"} <= set(out)


def test_bad_input_exits_2(capsys):
    assert main(["duopoly", "--ql", "0.9", "--qh", "0.8"]) == 2
    assert "--ql must not exceed --qh" in capsys.readouterr().err
    assert main(["bargain", "--ql0", "0.2", "--qh0", "0.5", "--qmax", "1.5"]) == 2
