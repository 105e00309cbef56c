"""``collabecon privacy account``: epsilon with subsampling, and its inverse, in-process."""

import json

import pytest

from collabecon.cli import main

pytest.importorskip("dp_accounting")


def _json(argv, capsys):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_epsilon_and_the_noise_that_reaches_it(capsys):
    base = ["privacy", "account", "--steps", "500", "--sampling-rate", "0.01", "--delta", "1e-5"]
    out = _json([*base, "--noise", "1.1", "--accountant", "rdp"], capsys)
    assert out["solved_for"] == "epsilon" and 0 < out["epsilon"] < 5
    back = _json([*base, "--epsilon", str(out["epsilon"]), "--accountant", "rdp"], capsys)
    assert back["noise_multiplier"] == pytest.approx(1.1, rel=1e-6)


def test_fixed_size_batches(capsys):
    out = _json(
        [
            "privacy",
            "account",
            "--noise",
            "1",
            "--steps",
            "100",
            "--sampling-rate",
            "0.01",
            "--delta",
            "1e-5",
            "--sampling",
            "fixed",
            "--dataset-size",
            "5000",
            "--accountant",
            "rdp",
        ],
        capsys,
    )
    assert out["sampling"] == "fixed" and out["epsilon"] > 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--noise", "-1", "--steps", "10", "--delta", "1e-5"],
            "--noise must be a finite number > 0",
        ),
        (["--noise", "1", "--steps", "0", "--delta", "1e-5"], "--steps must be"),
        (["--noise", "1", "--steps", "10", "--delta", "2"], "--delta must lie"),
        (
            ["--noise", "1", "--steps", "10", "--delta", "1e-5", "--sampling-rate", "0"],
            "--sampling-rate",
        ),
        (
            ["--noise", "1", "--epsilon", "1", "--steps", "10", "--delta", "1e-5"],
            "not allowed with",
        ),
        (
            ["--steps", "10", "--delta", "1e-5"],
            "one of the arguments --noise --epsilon is required",
        ),
        (
            [
                "--noise",
                "1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
                "--sampling-rate",
                "0.1",
                "--sampling",
                "fixed",
                "--dataset-size",
                "100",
            ],
            "no fixed-size sampling",
        ),
        (
            ["--noise", "0.001", "--steps", "1", "--delta", "0.5"],
            "--noise 0.001 over --steps 1 at --sampling-rate 1: the PLD accountant needs",
        ),
        (
            ["--epsilon", "1e6", "--steps", "1", "--delta", "1e-5"],
            "needs a noise multiplier below",
        ),
        (
            ["--noise", "1", "--steps", "10", "--delta", "1e-5", "--dataset-size", "100"],
            "--dataset-size 100 has no effect with --sampling poisson",
        ),
        (
            ["--noise", "1e-200", "--steps", "1", "--delta", "1e-5", "--accountant", "rdp"],
            "--noise 1e-200 (in units of the sensitivity) gives no finite epsilon",
        ),
        (  # dp-accounting's subsampled loss cancels in floats at such rates
            [
                *("--noise", "1", "--steps", "10", "--delta", "1e-5"),
                *("--accountant", "pld", "--sampling-rate", "1e-300"),
            ],
            "--sampling-rate=1e-300 is below 3.6e-15, where the PLD accountant's",
        ),
        (  # the RDP of order a, a / (2 z^2), squares the noise beyond the floats
            ["--noise", "1e300", "--steps", "10", "--delta", "1e-5", "--accountant", "rdp"],
            "--noise 1e+300 (in units of the sensitivity) is beyond what the rdp accountant",
        ),
    ],
)
def test_bad_input_is_one_line(extra, message, capsys):
    try:
        code = main(["privacy", "account", *extra])
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_pld_reports_its_interval(capsys):
    out = _json(["privacy", "account", "--noise", "2", "--steps", "1", "--delta", "1e-5"], capsys)
    assert out["pld_interval"] == 1e-4
    rdp = ["privacy", "account", "--noise", "2", "--steps", "1", "--delta", "1e-5"]
    assert "pld_interval" not in _json([*rdp, "--accountant", "rdp"], capsys)


@pytest.mark.slow
def test_little_noise_widens_the_grid(capsys):
    argv = ["privacy", "account", "--noise", "0.05", "--steps", "1", "--delta", "0.5"]
    out = _json(argv, capsys)
    assert 1e-4 < out["pld_interval"] <= 1e-2 and out["epsilon"] >= 199.0


def test_pld_is_cross_checked_against_rdps_bound(capsys):
    base = ["privacy", "account", "--noise", "1", "--delta", "1e-5"]
    usual = _json([*base, "--steps", "1000", "--sampling-rate", "0.01"], capsys)
    assert usual["epsilon"] <= usual["epsilon_rdp"] and "epsilon_note" not in usual
    # 10^12 steps at rate 1e-9: one step's loss is far below the grid's interval, and the
    # pessimistic rounding of 10^12 steps lifts PLD's figure above RDP's bound
    coarse = _json([*base, "--steps", str(10**12), "--sampling-rate", "1e-9"], capsys)
    assert coarse["epsilon"] > coarse["epsilon_rdp"] > 0
    assert "RDP's figure is the tighter bound" in coarse["epsilon_note"]
