"""``collabecon pricing``: JSON shapes of equilibrium / repeated / figures, and bad input."""

import json

import pytest

from collabecon.cli import main


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_equilibrium_json(capsys):
    out = _json(capsys, ["pricing", "equilibrium", "--alpha", "0.49", "--json"])
    assert set(out) == {
        "convention",
        "is_equilibrium",
        "profile",
        "regime",
        "alpha_star",
        "evasion_rate",
        "seller",
        "seller_total",
        "high_buyer",
        "low_buyer",
        "buyer_avg",
        "U1_star",
        "deviation_gains",
    }
    assert out["convention"] == "strict" and out["is_equilibrium"]
    assert out["regime"] == "B" and out["seller"] == 8.725 and out["U1_star"] == 8.75
    assert out["seller_total"] == 87.25  # eq. (4.2): the 10 buyers of a round
    assert set(out["deviation_gains"].values()) == {0}
    assert out["evasion_rate"] == 0  # truthful below alpha*: no q_star to report


def test_equilibrium_default_is_an_equilibrium(capsys):
    out = _json(capsys, ["pricing", "equilibrium", "--alpha", "0.75", "--json"])
    assert out["profile"] == "equilibrium" and out["is_equilibrium"]
    assert out["high_buyer"] == 0 and out["seller"] == 6.25
    assert out["evasion_rate"] == out["q_star"] == 0.5
    assert out["aware_prob_theta_low_after_s_low"] == pytest.approx(2 / 3)  # alpha*/alpha
    assert max(out["deviation_gains"].values()) == 0
    strict = _json(
        capsys, ["pricing", "--json", "equilibrium", "--alpha", "1", "--convention", "strict"]
    )
    assert strict["seller"] == 6.25 and strict["high_buyer"] == 0


def test_equilibrium_thesis_profile_is_labelled(capsys):
    out = _json(
        capsys, ["pricing", "equilibrium", "--alpha", "0.75", "--convention", "thesis", "--json"]
    )
    assert out["convention"] == "thesis" and not out["is_equilibrium"]
    assert (
        out["profile"]
        == "thesis profile; not an equilibrium: the high buyer gains 1.25 by deviating"
    )
    assert out["high_buyer"] == 1.25 and out["deviation_gains"]["high_buyer"] == 1.25
    assert "failed" not in out  # the thesis's profile is labelled, not a failure
    assert out["seller"] == 6.25  # the seller's utility is the same in both profiles
    p3 = ["--mu", "3/5", "--theta-low", "4", "--theta-high", "12", "--cb", "3", "--cs", "1"]
    thesis = _json(
        capsys, ["pricing", "equilibrium", "--json", "--alpha", "1", "--convention", "thesis", *p3]
    )
    assert thesis["seller"] == 7 and thesis["high_buyer"] == pytest.approx(5 / 3)
    below = _json(
        capsys, ["pricing", "equilibrium", "--alpha", "0.25", "--convention", "thesis", "--json"]
    )
    assert below["is_equilibrium"] and below["profile"].endswith("an equilibrium at this alpha")
    # the text table carries the same label
    assert main(["pricing", "equilibrium", "--alpha", "0.75", "--convention", "thesis"]) == 0
    assert "not an equilibrium: the high buyer gains" in capsys.readouterr().out


def test_repeated_json_and_out(capsys, tmp_path):
    argv = [
        "pricing",
        "repeated",
        "--seller",
        "cexp3",
        "--rounds",
        "300",
        "--seeds",
        "3",
        "--json",
        "--out",
        str(tmp_path),
        "--policy-regret",
    ]
    out = _json(capsys, argv)
    assert set(out) == {
        "seller_utility_mean",
        "seller_utility_se",
        "buyer_utility_mean",
        "alpha_hat_final",
        "alpha_bar_final",
        "action_freq",
        "regret",
        "seconds",
    }
    assert set(out["action_freq"]) == {"high", "low", "PD", "reversePD"}
    assert out["regret"]["policy_fixed_mixed"] is not None
    assert (tmp_path / "repeated.csv").read_text().startswith("t,seller_utility")
    again = _json(capsys, argv[:-3])
    assert again["seller_utility_mean"] == out["seller_utility_mean"]  # same seed, same run


def test_repeated_bias_and_seller_flags(capsys):
    out = _json(
        capsys,
        [
            "pricing",
            "repeated",
            "--seller",
            "alpha-pd",
            "--alpha",
            "0.3",
            "--rounds",
            "200",
            "--seeds",
            "2",
            "--bias",
            "-1",
            "-0.9",
            "--json",
        ],
    )
    assert out["alpha_hat_final"] == 0
    assert main(["pricing", "repeated", "--seller", "exp3", "--alpha", "0.3", "--rounds", "5"]) == 2
    assert "does not apply" in capsys.readouterr().err
    assert main(["pricing", "repeated", "--seller", "always-pd", "--alpha", "0.3"]) == 2
    assert "does not apply" in capsys.readouterr().err
    ix = _json(
        capsys,
        [
            "pricing",
            "repeated",
            "--seller",
            "exp3-ix",
            "--eta",
            "0.01",
            "--gamma",
            "0.005",
            "--rounds",
            "100",
            "--seeds",
            "2",
            "--json",
        ],
    )
    assert ix["action_freq"]["PD"] == 0


def test_bad_input_exits_2(capsys):
    assert main(["pricing", "equilibrium", "--alpha", "2"]) == 2
    assert "alpha must lie in [0, 1]" in capsys.readouterr().err
    assert main(["pricing", "equilibrium", "--alpha", "0.5", "--mu", "1"]) == 2


def test_figures_at_a_short_horizon(capsys, tmp_path):
    out = _json(capsys, ["pricing", "figures", "--out", str(tmp_path), "--rounds", "200", "--json"])
    names = sorted(p.split("/")[-1] for p in out["files"])
    assert names == sorted(f"fig4_{k}.{ext}" for k in range(1, 6) for ext in ("png", "csv"))
    header = (tmp_path / "fig4_5.csv").read_text().splitlines()
    assert header[0] == "bias,seller_exp3,seller_cexp3,seller_alpha-pd" and len(header) == 21
    fig41 = (tmp_path / "fig4_1.csv").read_text().splitlines()
    assert len(fig41) == 10_001
    columns = fig41[0].split(",")
    # the equilibrium's buyer curve, and the thesis profile's where it differs (regime B)
    assert {"high_buyer_B", "high_buyer_thesis_B"} <= set(columns)
    last = dict(zip(columns, map(float, fig41[-1].split(",")), strict=True))
    assert last["high_buyer_B"] == 0 and last["high_buyer_thesis_B"] == 2.5
    # every claim of section 4.4 about the figures, held or not
    keys = {"paper", "id", "statement", "published", "measured", "holds", "note"}
    assert len(out["claims"]) == 29 and all(set(c) == keys for c in out["claims"])
    assert {"fig4.1.B.seller_drops_beyond_alpha_star", "fig4.5.cexp3_gains"} <= {
        c["id"] for c in out["claims"]
    }


def test_figures_render_the_claims(capsys, tmp_path):
    argv = ["pricing", "figures", "--out", str(tmp_path), "--rounds", "50", "--seeds", "2"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "claims of the thesis (section 4.4):" in text
    assert "[ok] fig4.4.exp3.no_pd" in text and "claims hold" in text


def test_a_negative_seller_utility_is_checked_not_assumed(capsys):
    # c_S = 100: the evaders cost the seller more than it earns (Definition 4, eq. (4.2)); the
    # costs fall at the signalling stage, so no price, not selling included, gains anything
    out = _json(capsys, ["pricing", "equilibrium", "--alpha", "3/4", "--cs", "100", "--json"])
    assert out["seller"] == -17.5 and out["seller_total"] == -175
    assert out["is_equilibrium"] and max(out["deviation_gains"].values()) == 0
    assert "no option to stay out" in out["seller_note"]
    positive = _json(capsys, ["pricing", "equilibrium", "--alpha", "3/4", "--json"])
    assert "seller_note" not in positive


def test_a_strict_profile_that_fails_its_check_exits_1(capsys, monkeypatch):
    from games.price_discrimination import equilibrium as eq

    real = eq.equilibrium
    # a defective solver: the thesis's profile where the equilibrium is asked for
    monkeypatch.setattr(
        eq, "equilibrium", lambda game, alpha, convention="strict": real(game, alpha, "thesis")
    )
    assert main(["pricing", "equilibrium", "--alpha", "3/4", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert not out["is_equilibrium"] and out["failed"].endswith(
        "the high buyer gains 1.25 by deviating"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["equilibrium", "--alpha", "1e400"],
            "argument --alpha: '1e400' lies beyond the largest float",
        ),
        (["equilibrium", "--alpha", "1/0"], "argument --alpha: '1/0' divides by zero"),
        (["equilibrium", "--alpha", "1/2", "--mu", "1e-99999999"], "argument --mu"),
        (["repeated", "--eta", "1e400"], "argument --eta: '1e400' is not a finite number"),
        (["repeated", "--rounds", "10", "--buyers", "2000"], "--buyers 2000 is more than the 1000"),
    ],
)
def test_number_flags_refuse_what_no_float_holds(capsys, argv, message):
    try:
        code = main(["pricing", *argv])
    except SystemExit as stop:  # argparse's refusal of a flag's value
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
