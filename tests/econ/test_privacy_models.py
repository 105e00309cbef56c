"""Models, conversions and mechanisms of econ.privacy on worked examples."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from econ.privacy import conversions as C
from econ.privacy import mechanisms as M
from econ.privacy import sgd
from econ.privacy.models import DPSGD, Bayes, DPMean

LAM = np.array([0.1, 0.2, 0.3, 0.4, 0.5])


def test_privacy_constants():
    assert M.kappa_mean(100, 20) == pytest.approx(0.86872246, abs=1e-8)
    model = DPSGD()
    assert model.y0 == pytest.approx(5e4)
    assert model.rounds == pytest.approx(37.610193, abs=1e-6)
    assert model.rho(10)[0] == pytest.approx(265.88537, abs=1e-5)
    assert model.kappa(10)[0] == pytest.approx(0.96104761, abs=1e-8)
    assert (model.kappa(10)[0] * model.rho(10)[0]) ** 2 == pytest.approx(65294.81, abs=0.01)
    assert DPSGD(integer_rounds=True).rounds == 38


def test_dp_mean_at_the_papers_range_end():
    model = DPMean()
    zeta = model.zeta(LAM)
    beta = zeta * (1 - 1 / zeta.sum())
    np.testing.assert_allclose(
        model.alpha(beta, 5), [5.61813, 4.14569, 3.52058, 3.16202, 2.92587], atol=1e-5
    )
    np.testing.assert_allclose(
        model.utility(beta, LAM), [-0.099372, -0.197652, -0.295042, -0.391699, -0.487749], atol=1e-6
    )
    np.testing.assert_allclose(
        model.gain(beta, LAM), [0.000628, 0.002348, 0.004958, 0.008301, 0.012251], atol=1e-6
    )
    np.testing.assert_allclose(model.utility_alone(LAM), -LAM)
    np.testing.assert_allclose(model.epsilon(beta, 5), model.kappa(5) / model.alpha(beta, 5))


def test_bayes_breakdown():
    model, lam = Bayes(n=1.0, sigma=1.0, tau=1.0), np.array([5.0, 8, 12, 20, 50])
    beta = model.xi(lam) * 0.5
    np.testing.assert_allclose(
        model.leak2(beta, lam), [0.538009, 0.677475, 0.804420, 0.956580, 1.164566], atol=1e-6
    )
    np.testing.assert_allclose(
        model.err2(beta, lam), [0.346304, 0.354982, 0.363586, 0.374947, 0.392761], atol=1e-6
    )
    np.testing.assert_allclose(
        model.gain(beta, lam), [0.230470, 0.482671, 0.832546, 1.544487, 4.197390], atol=1e-6
    )
    # zero noise (beta = rho) has a finite leak in the Bayesian model
    assert np.all(np.isfinite(model.utility(np.ones(5), lam)))


def test_sgd_errors():
    model = DPSGD()
    lam = np.full(10, 2e5)
    beta = np.full(10, 52.752309)
    assert model.err2(beta, lam)[0] == pytest.approx(3.7913e-3, rel=1e-4)
    assert -model.utility_alone(lam)[0] / lam[0] == pytest.approx(7.5220e-3, rel=1e-4)


def test_heterogeneous_clients_reduce_to_the_paper():
    lam = np.array([0.5, 1.0, 2.0])
    beta = np.array([0.1, 0.2, 0.3])
    same = DPMean(n=[100, 100, 100], sigma=[10, 10, 10], bound=20)
    np.testing.assert_allclose(same.utility(beta, lam), DPMean().utility(beta, lam))
    mixed = DPMean(n=[50, 100, 400], sigma=[10, 10, 5], bound=20)
    np.testing.assert_allclose(mixed.rho(3), [0.5, 1.0, 16.0])
    np.testing.assert_allclose(mixed.utility_alone(lam), -lam / mixed.rho(3))


def test_heterogeneous_sgd_clients_reduce_to_the_paper():
    lam = np.full(4, 2e5)
    beta = np.full(4, 40.0)
    same = DPSGD(n_clients=4, n=[1e4] * 4, sigma=[1.0] * 4)
    np.testing.assert_allclose(same.utility(beta, lam), DPSGD(n_clients=4).utility(beta, lam))
    mixed = DPSGD(n_clients=4, n=[5e3, 1e4, 1e4, 2e4], sigma=[1.0, 1.0, 2.0, 1.0])
    assert mixed.y0 == pytest.approx(0.5 * (5e3 + 1e4 + 2.5e3 + 2e4))
    from econ.privacy.optimal import optimal_protocol

    proto = optimal_protocol(mixed, np.full(4, 5e6), "welfare")
    assert proto.exists and proto.gain.min() >= -1e-6 * np.abs(proto.utility_alone).max()


def test_algorithm1_simulation_is_seeded_and_below_the_bound():
    kwargs = {"n": 2000, "rounds": 39, "sigma": 1.0, "diam": 2.0, "reps": 300}
    first = sgd.simulate_algorithm1(np.linspace(1, 2, 5), [0.01, 0.05, 0.1, 0.2], seed=5, **kwargs)
    second = sgd.simulate_algorithm1(np.linspace(1, 2, 5), [0.01, 0.05, 0.1, 0.2], seed=5, **kwargs)
    assert first == second and first[0] <= first[1]


@pytest.mark.parametrize(
    "build",
    [
        lambda: DPMean().gain([0.1, 0.2], [1.0, -1.0]),
        lambda: DPMean().gain([], []),
        lambda: DPMean(n=0.5),
        lambda: DPMean(sigma=0.0),
        lambda: Bayes(sigma=-1.0),
        lambda: Bayes(tau=0.0),
        lambda: DPSGD(n_clients=0),
        lambda: DPSGD(mu=2.0, L=1.0),
        lambda: DPMean().gain([2.0, 0.1], [1.0, 1.0]),  # beta above rho
        lambda: DPMean().gain([0.1], [1.0, 1.0]),
        lambda: DPSGD(n_clients=3).gain(np.zeros(4), np.ones(4)),
    ],
)
def test_bad_input_is_a_clear_value_error(build):
    with pytest.raises(ValueError, match=r"must|shape|has|got"):
        build()


@given(
    alpha=st.floats(1e-3, 1e3),
    rho=st.floats(1e-2, 1e3),
    dim=st.integers(1, 20),
)
def test_alpha_beta_round_trip(alpha, rho, dim):
    beta = C.beta_of_alpha(alpha, rho, dim)
    assert 0 < beta <= rho
    assert C.alpha_of_beta(beta, rho, dim) == pytest.approx(alpha, rel=1e-6)


def test_edge_conversions():
    assert C.beta_of_alpha(np.inf, 2.0) == 0.0
    assert C.alpha_of_beta(0.0, 2.0) == np.inf
    assert C.alpha_of_beta(2.0, 2.0) == 0.0
    assert C.epsilon_of_alpha(np.inf, 0.5) == 0.0
    assert C.alpha_of_epsilon(C.epsilon_of_alpha(2.0, 0.5), 0.5) == pytest.approx(2.0)


@given(eps=st.floats(0.05, 5.0), log_delta=st.floats(-12, -2), sens=st.floats(0.1, 10.0))
def test_analytic_gaussian_is_tight_and_beats_the_classical_calibration(eps, log_delta, sens):
    delta = 10.0**log_delta
    sigma = C.analytic_gaussian_sigma(eps, delta, sens)
    assert C.analytic_gaussian_delta(eps, sigma, sens) == pytest.approx(delta, rel=1e-6)
    assert C.analytic_gaussian_epsilon(sigma, delta, sens) == pytest.approx(eps, rel=1e-6)
    if eps < 1:
        assert sigma <= C.classical_gaussian_sigma(eps, delta, sens)


def test_sgd_recursion_and_privacy_numbers():
    y = sgd.bound_recursion(64000, 0.5, 156)
    assert y[39] == pytest.approx(0.0957557, abs=1e-7)
    assert y[78] == pytest.approx(0.0339929, abs=1e-7)
    assert sgd.step_sizes(64000, 2.0, 1.0, 1)[0] == pytest.approx(0.499992, abs=1e-6)
    for (n, m, bound, alpha), (e0, exact, loose) in {
        (1e4, 38, 2, 0.5): (0.1015, 0.2775, 1.9325),
        (1e4, 38, 2, 0.1): (0.5073, 1.0769, 9.6624),
        (1e6, 200, 1, 0.01): (0.1629, 0.2409, 1.6364),
    }.items():
        eps0 = M.round_epsilon(n, m, bound, alpha)
        assert eps0 == pytest.approx(e0, abs=1e-4)
        assert M.shuffle_epsilon(eps0, m, 1 / n**2) == pytest.approx(exact, abs=1e-4)
        assert M.kappa_sgd(n, m, bound) / alpha == pytest.approx(loose, abs=1e-4)


@given(
    n=st.floats(1.0, 1e4),
    sigma=st.floats(0.1, 100.0),
    lam=st.lists(st.floats(0.0, 100.0), min_size=2, max_size=6),
    frac=st.floats(0.0, 0.99),
)
def test_dimensionless_dp_mean_form(n, sigma, lam, frac):
    """Scaled form: rho u_i = -c b/(1-b) - lam_i/(1 + g_i) with c = kappa^2 rho^2, b = beta/rho."""
    model = DPMean(n=n, sigma=sigma, bound=1.0)
    lam_ = np.array(lam)
    rho, kappa = model.rho(lam_.size)[0], model.kappa(lam_.size)[0]
    b = np.linspace(0, frac, lam_.size)
    g = b.sum() - b
    expected = -(kappa**2) * rho**2 * b / (1 - b) - lam_ / (1 + g)
    np.testing.assert_allclose(rho * model.utility(b * rho, lam_), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("make", [DPMean, Bayes])
def test_precision_must_be_a_finite_float(make) -> None:
    with pytest.raises(ValueError, match="sigma"):
        make(n=1.0, sigma=5e-324)
    with pytest.raises(ValueError, match="sigma"):
        make(n=1.0, sigma=1e200)
    with pytest.raises(ValueError, match="sigma"):
        DPSGD(n_clients=2, sigma=1e-200)


def test_bayes_xi_without_cancellation() -> None:
    """xi = A/(lam/(rho+tau)^2 + 2/(rho tau) + 1/rho^2): at lam = 0, rho = 1e12, tau = 1e-8 the
    printed denominator A + (rho+tau)^2/(rho tau)^2 cancels to 0 in floating point."""
    from fractions import Fraction

    rho, tau = Fraction(10**12), Fraction(1, 10**8)
    a = -1 / tau**2
    exact = a / (a + (rho + tau) ** 2 / (rho**2 * tau**2))
    got = Bayes(n=1.0, sigma=1e-6, tau=1e-8).xi([0.0])[0]
    assert got == pytest.approx(float(exact), rel=1e-9)


def test_conversions_at_the_float_edges() -> None:
    assert C.beta_of_alpha(0.0, 0.95) == 0.95
    assert C.beta_of_alpha(0.0, 5e-324) == 5e-324
    assert C.alpha_of_beta(0.0, 5e-324) == np.inf
    assert C.alpha_of_beta(5e-324, 5e-324) == 0.0
    assert C.alpha_of_beta(5e-324, 1.0) == pytest.approx(1 / np.sqrt(5e-324), rel=1e-12)
    sigma = C.analytic_gaussian_sigma(1e-8, 1 - 1e-16, 1.0)
    assert C.analytic_gaussian_delta(1e-8, sigma, 1.0) == pytest.approx(1 - 1e-16, abs=1e-15)


def test_bayes_precisions_have_a_stated_range() -> None:
    """Eq. 3 squares tau and rho = n/sigma^2: outside BAYES_RANGE it is a ValueError naming them."""
    from econ.privacy.models import BAYES_RANGE

    low, high = BAYES_RANGE
    for kwargs in ({"tau": 5e-324}, {"tau": 1e300}, {"n": 1.0, "sigma": 1e-60}):
        with pytest.raises(ValueError, match="tau and the precision"):
            Bayes(**kwargs)
    assert Bayes(n=1.0, sigma=1e-50, tau=low).tau == low
    assert Bayes(tau=high).tau == high


def test_bayes_xi_at_the_ends_of_its_range() -> None:
    """rho = 1e100, tau = 1e-100, lam = 0: xi = -1/(2s + s^2) with s = tau/rho = 1e-200."""
    from fractions import Fraction

    s = Fraction(1, 10**200)
    got = Bayes(n=1.0, sigma=1e-50, tau=1e-100).xi([0.0])[0]
    assert got == pytest.approx(float(-1 / (2 * s + s * s)), rel=1e-9)
