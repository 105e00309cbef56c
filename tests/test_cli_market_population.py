"""``collabecon market --population``: the market under other consumer types (econ.population)."""

import json
import warnings

import numpy as np
import pytest

from collabecon.cli import main
from econ.population_market import population_equilibrium


def _market(capsys, *argv):
    code = main(["market", "--json", *argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_population_prints_the_equilibrium_and_its_certificate(capsys):
    result = _market(capsys, "--qualities", "0.2", "0.5", "0.9", "--population", "beta:2,5")
    row = result["rounds"][0]
    eq = population_equilibrium([0.2, 0.5, 0.9], "beta:2,5")
    prices = [row[f"price_{n}"] for n in result["names"]]
    np.testing.assert_allclose(prices, eq.price)
    assert result["population"] == "beta:2,5" and result["certificate"]["holds"] is True
    assert main(["market", "--qualities", "0.2", "0.5", "0.9", "--population", "beta:2,5"]) == 0
    text = capsys.readouterr().out
    assert "best-response certificate holds" in text and "firm2" in text


def test_a_sampled_population_agrees(capsys):
    result = _market(
        capsys, "--qualities", "0.3", "0.8", "--population", "lognorm:0.5,0.4",
        "--consumers", "20000", "--seed", "3",
    )  # fmt: skip
    sampled = result["sampled_last_round"]
    assert sampled["within"] is True and sampled["n_consumers"] == 20000
    assert sampled["max_share_error"] <= max(sampled["four_standard_errors"])


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--qualities", "0.3", "--population", "pareto:2"], "unknown population"),
        (["--qualities", "0.3", "--population", "beta:1"], "beta takes"),
    ],
)
def test_bad_population_exits_2(capsys, argv, match):
    assert main(["market", *argv]) == 2
    assert match in capsys.readouterr().err


def test_population_needs_qualities(capsys, tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps({"a": 0.3, "b": 0.8}))
    assert main(["market", "--from", str(path), "--population", "uniform"]) == 2
    assert "--population solves one market" in capsys.readouterr().err


def test_prices_that_fail_their_certificate_exit_1(capsys):
    """Near a point mass (Beta(1e300, 1): every type near 1) the best-response iteration
    finds no certified prices; they are printed with the failed certificate, exit 1."""
    argv = ["market", "--qualities", "0.2", "0.5", "--population", "beta:1e300,1", "--json"]
    assert main(argv) == 1
    assert json.loads(capsys.readouterr().out)["certificate"]["holds"] is False


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("beta:1e308,1e308", "a + b must be a finite number"),  # its mean read 0
        ("lognorm:1,1e308", "has mean type 1.65e+308, above 1e+150"),
        ("truncnorm:0,1e308", "above 1e+150: its prices, revenues and surplus overflow"),
    ],
)
def test_a_population_beyond_the_floats_is_refused(capsys, spec, match):
    assert main(["market", "--qualities", "0.3", "0.8", "--population", spec]) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1


def test_a_population_market_too_large_for_memory_is_refused(capsys):
    qualities = ",".join(f"{(i + 1) / 30001:.6f}" for i in range(30_000))
    assert main(["market", "--qualities", qualities, "--population", "lognorm:1"]) == 2
    assert "--population with 30000 firms needs about" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("qualities", "spec"),
    [
        (["0", "5e-324"], "beta:2,5"),  # a subnormal price range: no geometric grid from 0
        (["0.3", "0.8"], "truncnorm:0,1,1e308"),  # z^2 of the far end beyond the floats
    ],
)
def test_extreme_but_valid_markets_answer_without_a_numeric_warning(capsys, qualities, spec):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = _market(capsys, "--qualities", *qualities, "--population", spec)
    assert result["certificate"]["holds"] is True
