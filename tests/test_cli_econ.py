"""``collabecon duopoly`` and ``collabecon bargain``."""

import json
import warnings

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


def test_bargain_firms_json_with_the_path(capsys):
    argv = ["bargain", "--firms", "0.1,0.3", "0.6", "--path", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["firms"] == [0.1, 0.3, 0.6] and out["quality"][2] == pytest.approx(1.0)
    assert all(g >= 0 for g in out["gains"]) and out["nash_product"] > 0
    assert out["path_settled"] and out["path_worst_drop"] <= 0
    assert out["path_final"] == pytest.approx(out["quality"], abs=1e-6)


def test_bargain_firms_under_a_population_with_the_path(capsys):
    argv = ["bargain", "--firms", "0.2", "0.4", "0.6", "--population", "beta:2,5"]
    assert main([*argv, "--path", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["population"] == "beta:2,5" and out["quality"][2] == pytest.approx(1.0)
    assert all(g >= 0 for g in out["gains"]) and out["path_worst_drop"] <= 0


def test_bargain_two_firms_agree_with_the_closed_form(capsys):
    assert main(["bargain", "--ql0", "0.2", "--qh0", "0.6", "--json"]) == 0
    closed = json.loads(capsys.readouterr().out)
    assert main(["bargain", "--firms", "0.2", "0.6", "--json"]) == 0
    firms = json.loads(capsys.readouterr().out)
    assert firms["quality"] == pytest.approx([closed["q_l_star"], closed["q_h_star"]], abs=1e-6)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bargain", "--firms", "0.2", "0.6", "--ql0", "0.1"], "--firms takes no --ql0"),
        (["bargain", "--qh0", "0.6"], "pass --ql0 and --qh0"),
        (["bargain", "--ql0", "0.2", "--qh0", "0.6", "--path"], "--path needs --firms"),
        (["bargain", "--ql0", "0.2", "--qh0", "0.6", "--population", "uniform"], "needs --firms"),
        (["bargain", "--firms", "0.2", "0.6", "--population", "gamma:2"], "unknown population"),
        (["bargain", "--firms", "0.2", "0.9", "--qmax", "0.8"], "--firms quality must be"),
        (
            ["bargain", "--firms", "0.2", "0.5", "--population", "lognorm:1,1e200"],
            "above 1e+150: its prices, revenues and surplus overflow floats",
        ),
        (
            ["bargain", "--firms", "0.2", "0.5", "--population", "beta:1e308,1e308"],
            "a + b must be a finite number",
        ),
    ],
)
def test_bargain_firms_bad_input_exits_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_bargain_firms_of_a_subnormal_quality_answer_without_a_numeric_warning(capsys):
    argv = ["bargain", "--firms", "0", "5e-324", "--path", "--json"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["nash_product"] > 0 and result["path_settled"] is True


@pytest.mark.slow
def test_bargain_firms_refuse_a_population_without_certified_prices_at_the_start(capsys):
    # near a point mass (Beta(1e300, 1)) no prices pass their certificate: every market the
    # bargain scores would iterate best responses, for hours over its thousands of markets
    argv = ["bargain", "--firms", "0.2", "0.5", "--population", "beta:1e300,1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the market of the disagreement point has no certified equilibrium" in err
    assert err.count("\n") == 1
