"""Existence tests (Theorems 4.2, 4.5, Corollary 4.6, Theorem 4.9) on worked examples."""

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from econ.privacy import existence as E
from econ.privacy.models import DPSGD, Bayes, DPMean
from econ.privacy.optimal import optimal_protocol

LAM = np.array([0.1, 0.2, 0.3, 0.4, 0.5])


def test_theorem_4_2_numbers():
    model = DPMean()
    np.testing.assert_allclose(
        model.zeta(LAM), [0.117003, 0.209495, 0.284447, 0.346417, 0.398508], atol=1e-6
    )
    result = E.exists(model, LAM)
    assert (
        result.exists
        and result.statistic == pytest.approx(1.355870, abs=1e-6)
        and result.threshold == 1
    )
    bmax = E.zeta_family_max_scale(model, LAM)
    assert bmax == pytest.approx(0.287254, abs=1e-6)
    gains = model.gain(model.zeta(LAM) * bmax, LAM)
    np.testing.assert_allclose(gains, [0, 0.001222, 0.003452, 0.006519, 0.010287], atol=1e-6)
    assert E.zeta_family_max_scale(model, [0.5, 1, 2, 4, 8]) * model.zeta(
        [0.5, 1, 2, 4, 8]
    ).sum() == pytest.approx(2.769469, abs=1e-6)
    assert not E.exists(model, [0.05, 0.1, 0.2, 0.2, 0.3]).exists


def _psi_model(psi):
    model = DPSGD(n_clients=len(psi))
    rho, kappa = model.rho(len(psi))[0], model.kappa(len(psi))[0]
    return model, np.asarray(psi) * model.L * model.mu * model.dim * kappa**2 * rho**2


def test_theorem_4_5_and_corollary_4_6_numbers():
    psi = [0.2, 0.3, 0.5, 0.8, 1, 1.5, 2, 3, 4, 5]
    model, lam = _psi_model(psi)
    np.testing.assert_allclose(model.psi(lam), psi)
    value, g = E.sgd_f_max(model, lam)
    assert value == pytest.approx(1.950196, abs=1e-6) and g - 1 == pytest.approx(0.980270, abs=1e-6)
    assert E.corollary_4_6(psi) == pytest.approx((3.949915, 9.590811), abs=1e-6)
    assert E.exists(model, lam).exists
    for psi_, best in (([0.05] * 10, -1.0), ([0.6] * 4, -0.811492), ([1.0] * 6, 0.050510)):
        model, lam = _psi_model(psi_)
        assert E.sgd_f_max(model, lam)[0] == pytest.approx(best, abs=1e-6)
        assert E.exists(model, lam).exists == (best >= 0)
    assert E.corollary_4_6([1.0] * 6)[0] == pytest.approx(2.0, abs=1e-12)


def test_theorem_4_9_numbers_and_its_local_nature():
    model = Bayes(n=1.0, sigma=1.0, tau=1.0)
    lam = np.array([5.0, 8, 12, 20, 50])
    np.testing.assert_allclose(model.xi(lam), (lam - 4) / (lam + 12))
    result = E.exists(model, lam)
    assert result.exists and result.statistic == pytest.approx(1.834092, abs=1e-6)
    for b in (1e-3, 1e-2):
        assert model.gain(model.xi(lam) * b, lam).min() > 0
    assert not E.exists(model, np.full(5, 4.5)).exists
    assert model.gain(np.clip(model.xi(np.full(5, 4.5)), 0, None) * 1e-3, np.full(5, 4.5)).max() < 0
    local = np.array([3.0, 20, 20, 20, 20])
    assert not E.exists(model, local).exists
    assert optimal_protocol(model, local, "accuracy").gamma == pytest.approx(4.142857, abs=1e-6)


@settings(max_examples=25)
@given(
    lam=st.lists(st.floats(1e-3, 30.0), min_size=2, max_size=7),
    n=st.lists(st.sampled_from([20.0, 50.0, 100.0, 400.0]), min_size=7, max_size=7),
)
def test_sum_zeta_decides_existence_also_for_heterogeneous_clients(lam, n):
    """Z > 1 iff the convex max-Gamma program of the DP mean model has Gamma > 0; with per-client n_i as well."""
    lam_ = np.array(lam)
    for model in (DPMean(), DPMean(n=n[: lam_.size], sigma=10.0, bound=20.0)):
        z = model.zeta(lam_).sum()
        if abs(z - 1) < 1e-3:
            continue
        gamma = optimal_protocol(model, lam_, "accuracy", method="cvxpy").gamma
        assert (gamma > 1e-6 * model.rho(lam_.size).sum()) == (z > 1)
        assert E.exists(model, lam_).exists == (z > 1)


@given(psi=st.lists(st.floats(0.01, 50.0), min_size=2, max_size=15))
def test_corollary_4_6_sandwich(psi):
    model, lam = _psi_model(psi)
    best = E.sgd_f_max(model, lam)[0]
    suff, nec = E.corollary_4_6(psi)
    if suff >= 2:
        assert best >= -1e-12
    if best >= 0:
        assert nec >= 4 - 1e-12


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: DPMean(bound=1e-300), "privacy cost kappa^2 rho^2 of 0"),
        (lambda: DPSGD(n_clients=2, n=1e300), "privacy cost L mu d kappa^2 rho^2 of inf"),
        (lambda: DPSGD(n_clients=2, L=1e300, diam=1e300), "y0 = L mu D^2"),
    ],
)
def test_constants_whose_privacy_cost_leaves_the_floats_are_refused(make, message):
    # zeta = lambda/(lambda + kappa^2 rho^2) would be 0/0 at lambda = 0
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_existence_at_weights_near_the_largest_float():
    # huge accuracy weights: every client wants the federation; F peaks within one float of
    # G = 1, where the bisection stops and the better end of its bracket is the maximum
    model = DPSGD(n_clients=2)
    for lam in (1e30, 1e200, 1e308):
        result = E.dp_sgd_exists(model, [lam, lam])
        assert result.exists and result.statistic == pytest.approx(1.0)
    assert E.dp_mean_exists(DPMean(), [1e308, 1e308]).statistic == pytest.approx(2.0)
    with pytest.raises(ValueError, match="gives psi"):
        DPSGD(n_clients=2, bound=1e-150).psi([1e308, 1.0])


def test_an_infinite_statistic_is_none_beside_why_and_nan_stays_nan():
    out = E.Existence(False, -np.inf, 0.0, "no slack").to_dict()
    assert out["statistic"] is None and out["statistic_why"] == "no slack"
    assert math.isnan(E.Existence(False, math.nan, 0.0).to_dict()["statistic"])
    assert "statistic_why" not in E.Existence(True, 1.5, 1.0).to_dict()
