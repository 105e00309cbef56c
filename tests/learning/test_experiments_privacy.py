"""Tsoy et al. (2024), section 6: the paper's claims about Figure 1, their thresholds, and the
claims on the authors' notebook setting (300 draws per m, seed 179)."""

import numpy as np
import pytest

from collabecon.reproductions import privacy as V
from econ.privacy.effectiveness import BAYES_GRID, DP_GRID, Panel


def _panel(model, grid, pers, sym):
    zeros = np.zeros(len(grid))
    columns = {
        "personalised": (np.asarray(pers, dtype=float), zeros),
        "symmetric": (np.asarray(sym, dtype=float), zeros),
        "optimum": (np.maximum(pers, sym), zeros),
    }
    return Panel(model, np.asarray(grid, dtype=float), columns)


#: Figure 1 as the paper draws it: DP personalised above, its lead shrinking relatively; the
#: Bayesian curves crossing once between m = 2.625 and 3.375.
DP_PERS = [0.003, 0.04, 0.16, 0.34, 0.52, 0.69, 0.80, 0.89, 0.94]
DP_SYM = [0.0, 0.001, 0.016, 0.11, 0.28, 0.49, 0.65, 0.81, 0.89]
BAYES_PERS = [0.06, 0.17, 0.26, 0.45, 0.58, 0.67, 0.75, 0.79, 0.85]
BAYES_SYM = [0.02, 0.05, 0.15, 0.37, 0.57, 0.74, 0.89, 0.95, 0.98]


def _claims(dp_pers=DP_PERS, dp_sym=DP_SYM, bayes_pers=BAYES_PERS, bayes_sym=BAYES_SYM):
    streams = [
        (
            _panel("dp-mean", DP_GRID, dp_pers, dp_sym),
            _panel("bayes", BAYES_GRID, bayes_pers, bayes_sym),
        )
    ]
    return {c.id: c for c in V.claims(V.measure(streams))}


def test_the_papers_figure_holds_every_claim():
    claims = _claims()
    assert len(claims) == 5 and all(c.holds for c in claims.values())
    assert claims["fig1.bayes.one_reversal"].measured["crossing m"] == pytest.approx(3.0, abs=0.1)


def test_holds_is_computed_from_the_numbers():
    tie = list(DP_SYM)
    tie[0] = DP_PERS[0]  # equal at the smallest m: not "always more beneficial"
    assert not _claims(dp_sym=tie)["fig1.dp.personalised_always_better"].holds
    # a lead growing relatively with m: 10% of personalised at m = -2.5, 50% at m = 3.5
    growing = [p * f for p, f in zip(DP_PERS, np.linspace(0.9, 0.5, 9), strict=True)]
    claims = _claims(dp_sym=growing)
    assert claims["fig1.dp.personalised_always_better"].holds
    assert not claims["fig1.dp.especially_small_lambda"].holds
    late = list(BAYES_SYM)
    late[5] = BAYES_PERS[5] - 0.01  # the reversal only from m = 3.75
    claims = _claims(bayes_sym=late)
    assert not claims["fig1.bayes.reversed_large_lambda"].holds
    assert claims["fig1.bayes.one_reversal"].holds
    wiggle = list(BAYES_SYM)
    wiggle[1] = BAYES_PERS[1] + 0.01  # symmetric ahead at m = 1.875 too
    claims = _claims(bayes_sym=wiggle)
    assert not claims["fig1.bayes.personalised_better_small_lambda"].holds
    assert not claims["fig1.bayes.one_reversal"].holds


def test_published_is_the_papers_comparison():
    # the paper prints no number for Figure 1: each claim carries its comparison
    claims = _claims()
    assert claims["fig1.dp.personalised_always_better"].published == (
        "personalised > symmetric at every m"
    )
    assert (
        claims["fig1.bayes.reversed_large_lambda"].published == "symmetric > personalised for m > 3"
    )
    assert all(c.paper.startswith("Tsoy et al. 2024, section 6") for c in claims.values())


@pytest.mark.slow
def test_claims_hold_on_the_notebook_setting(tmp_path):
    rep = V.reproduce("small", tmp_path)
    failed = [(c.id, c.measured) for c in rep.claims if not c.holds]
    assert not failed, failed
    assert (tmp_path / "figure1.png").stat().st_size > 0
    assert rep.data["repetitions"] == 300 and rep.data["seeds"] == [179]


def test_cli_figure1_reports_the_claims(tmp_path, capsys):
    from collabecon.cli import main

    code = main(["privacy", "figure1", "--out", str(tmp_path), "--repetitions", "2", "--seed", "3"])
    assert code == 0
    text = capsys.readouterr().out
    assert "claims of the paper:" in text and "fig1.bayes.one_reversal" in text
    assert "claims hold" in text
