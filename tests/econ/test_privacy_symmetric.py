"""Symmetric optima (Theorems 5.1-5.4) against worked examples and the convex programs."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from econ.privacy import symmetric as Y
from econ.privacy.models import DPSGD, DPMean
from econ.privacy.optimal import optimal_protocol


def test_theorem_5_1_numbers():
    model = DPMean()
    opt = Y.dp_mean_symmetric_optimum(model, 1.0, 5)
    assert opt.beta == pytest.approx(0.20663019, abs=1e-8)
    assert opt.alpha2 == pytest.approx(3.8395638, abs=1e-7)
    assert opt.gain == pytest.approx(0.25595777, abs=1e-8)
    beta = np.full(5, opt.beta)
    assert model.utility(beta, np.ones(5))[0] == pytest.approx(-0.744042, abs=1e-6)
    assert model.epsilon(beta, 5)[0] == pytest.approx(0.443343, abs=1e-6)
    other = Y.dp_mean_symmetric_optimum(model, 0.5, 10)
    assert (other.beta, other.alpha2, other.gain) == pytest.approx(
        (0.126018, 6.935366, 0.156900), abs=1e-6
    )
    assert not Y.dp_mean_symmetric_optimum(model, 0.2, 3).profitable
    assert not Y.dp_mean_symmetric_optimum(model, 0.5, 2).profitable


def test_theorem_5_1_equals_cvxpy_and_scipy():
    model = DPMean()
    opt = Y.dp_mean_symmetric_optimum(model, 1.0, 5)
    cvx = optimal_protocol(model, np.ones(5), "welfare")
    np.testing.assert_allclose(cvx.beta, opt.beta, rtol=1e-4)
    res = minimize_scalar(
        lambda b: -model.gain(np.full(5, b), np.ones(5))[0],
        bounds=(0, 0.999),
        method="bounded",
        options={"xatol": 1e-12},
    )
    assert res.x == pytest.approx(opt.beta, abs=1e-7)


def test_theorem_5_1_comparative_statics_signs():
    import sympy as sp

    from econ.privacy import symbolic as S

    def alpha2(n=100.0, n_clients=5, lam=1.0):
        return Y.dp_mean_symmetric_optimum(
            DPMean(n=n, sigma=10.0, bound=20.0), lam, n_clients
        ).alpha2

    kappa = float(DPMean().kappa(1)[0])
    continuous = sp.lambdify((S.n_clients, S.lam, S.rho, S.kappa), S.DP_MEAN_SYM_ALPHA2)
    h = 1e-4
    for lam, n_clients, d_n, d_big_n in (
        (1.0, 5, -3.12e-2, -8.06e-2),
        (0.5, 10, -5.69e-2, 4.10e-2),
    ):
        fd_n = (alpha2(100 + h, n_clients, lam) - alpha2(100 - h, n_clients, lam)) / (2 * h)
        assert fd_n == pytest.approx(d_n, rel=1e-2)
        fd_big_n = (
            continuous(n_clients + h, lam, 1.0, kappa) - continuous(n_clients - h, lam, 1.0, kappa)
        ) / (2 * h)
        assert fd_big_n == pytest.approx(d_big_n, rel=1e-2)
        sign = (n_clients - 2) * np.sqrt(lam) - 2 * np.sqrt(n_clients - 1) * kappa
        assert np.sign(sign) == np.sign(fd_big_n)


def test_theorem_5_2_numbers_and_threshold():
    model = DPSGD()
    assert not Y.dp_sgd_symmetric_optimum(model, 1e5).profitable
    for lam, beta, alpha2, gain in (
        (2e5, 52.752309, 1.5195497e-3, 138.32719),
        (1e6, 94.727001, 6.7956328e-4, 4051.5816),
    ):
        opt = Y.dp_sgd_symmetric_optimum(model, lam)
        assert opt.beta == pytest.approx(beta, rel=1e-7)
        assert opt.alpha2 == pytest.approx(alpha2, rel=1e-7)
        assert opt.gain == pytest.approx(gain, rel=1e-7)
        cvx = optimal_protocol(model, np.full(10, lam), "welfare")
        np.testing.assert_allclose(cvx.beta / model.rho(10), beta / model.rho(10)[0], atol=1e-5)
    base = Y.dp_sgd_symmetric_optimum(model, 2e5).alpha2
    assert Y.dp_sgd_symmetric_optimum(DPSGD(n_clients=15), 2e5).alpha2 == pytest.approx(
        1.89718e-3, rel=1e-5
    )
    assert Y.dp_sgd_symmetric_optimum(model, 4e5).alpha2 == pytest.approx(1.07448e-3, rel=1e-5)
    assert Y.dp_sgd_symmetric_optimum(DPSGD(sigma=np.sqrt(2)), 2e5).alpha2 == pytest.approx(
        1.46788e-3, rel=1e-5
    )
    assert Y.dp_sgd_symmetric_optimum(DPSGD(n=2e4), 2e5).alpha2 == pytest.approx(
        8.36643e-4, rel=1e-5
    )
    assert base == pytest.approx(1.51955e-3, rel=1e-5)


def test_dp_sgd_below_the_threshold_has_no_protocol():
    model = DPSGD()
    lam = np.full(10, 0.3 * 326474.07)  # psi = 0.3
    for objective in ("welfare", "accuracy"):
        proto = optimal_protocol(model, lam, objective)
        assert not proto.exists
        np.testing.assert_allclose(proto.utility, proto.utility_alone)


@pytest.mark.parametrize(
    ("lam", "beta", "gain", "case"),
    [
        (2.0, 0.0, 0.0, 5),
        (6.0, 0.590920, 0.076411, 4),
        (7.0, 0.750792, 0.363158, 4),
        (8.5, 0.943084, 0.834942, 3),
        (8.9, 0.988837, 0.966729, 3),
        (9.5, 1.0, 1.166667, 1),
        (20.0, 1.0, 4.666667, 1),
    ],
)
def test_theorem_5_3_table(lam, beta, gain, case):
    opt = Y.bayes_symmetric_optimum(1.0, 1.0, lam, 5)
    assert opt.beta == pytest.approx(beta, abs=1e-6)
    assert opt.gain == pytest.approx(gain, abs=1e-6)
    assert opt.case == case


def test_theorem_5_3_thresholds_and_5_4_asymptotics():
    import sympy as sp

    from econ.privacy import symbolic as S

    at = {S.n_clients: 5, S.rho: 1, S.tau: 1}
    assert [
        S.BAYES_LAMBDA_LOW.subs(at),
        S.BAYES_LAMBDA_0.subs(at),
        S.BAYES_LAMBDA_RHO.subs(at),
        S.BAYES_LAMBDA_CC.subs(at),
    ] == [
        sp.Rational(9, 4),
        8,
        9,
        18,
    ]
    for n, lam, beta, gain in (
        (10**3, 5, 0.0610405, 1.373779),
        (10**4, 5, 0.0197765, 1.460026),
        (10**6, 3, 0.00141171, 0.497172),
    ):
        opt = Y.bayes_symmetric_optimum(1.0, 1.0, lam, n)
        assert opt.beta == pytest.approx(beta, rel=1e-5) and opt.gain == pytest.approx(
            gain, abs=1e-6
        )
    assert Y.bayes_symmetric_optimum(1.0, 1.0, 1.5, 10**4).beta == 0
    for rho, ratio, gain in (
        (0.01, 0, 0),
        (0.1, 0.03694, 0.0558),
        (1, 0.24091, 0.9411),
        (10, 0, 0),
    ):
        opt = Y.bayes_symmetric_optimum(rho, 1.0, 5.0, 50)
        assert opt.beta / rho == pytest.approx(ratio, abs=1e-5) and opt.gain == pytest.approx(
            gain, abs=1e-4
        )
