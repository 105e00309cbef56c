"""Optimal protocols: worked examples, KKT, and the two property tests."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from econ.privacy import optimal as O
from econ.privacy import optimal_dp
from econ.privacy.models import DPSGD, Bayes, DPMean

LAM2 = np.array([0.5, 1.0, 2.0, 4.0, 8.0])


@pytest.mark.parametrize(
    ("lam", "gamma", "beta"),
    [
        ([0.1, 0.2, 0.3, 0.4, 0.5], 0.462179, [0.037969, 0.069525, 0.096246, 0.119219, 0.139220]),
        (LAM2, 3.140982, [0.328301, 0.490342, 0.653995, 0.788111, 0.880234]),
    ],
)
def test_dp_mean_max_accuracy_exact_and_cvxpy(lam, gamma, beta):
    model = DPMean()
    exact = O.optimal_protocol(model, lam, "accuracy")
    cvx = O.optimal_protocol(model, lam, "accuracy", method="cvxpy")
    assert exact.gamma == pytest.approx(gamma, abs=1e-6)
    np.testing.assert_allclose(exact.beta, beta, atol=1e-6)
    assert cvx.gamma == pytest.approx(exact.gamma, abs=1e-6)
    np.testing.assert_allclose(
        exact.gain, 0, atol=1e-12
    )  # every constraint binds at the max-Gamma optimum


def test_dp_mean_max_welfare_numbers_and_kkt():
    model = DPMean()
    proto = O.optimal_protocol(model, LAM2, "welfare")
    np.testing.assert_allclose(
        proto.beta, [0.284189, 0.432010, 0.424835, 0.377671, 0.260749], atol=1e-5
    )
    np.testing.assert_allclose(
        proto.alpha, [1.58707, 1.14663, 1.16355, 1.28367, 1.68378], atol=1e-4
    )
    assert proto.utility.sum() == pytest.approx(-8.472668, abs=1e-6)
    np.testing.assert_allclose(proto.gain, [0, 0, 0.593176, 1.876582, 4.557574], atol=1e-5)
    # KKT: sum_i (nu_i + mu_i) grad gain_i = 0 at the interior optimum, mu_i >= 0, mu_i gain_i = 0
    mu = proto.multipliers
    assert mu is not None and np.all(mu >= -1e-9)
    np.testing.assert_allclose(mu * proto.gain, 0, atol=1e-6)
    h = 1e-6
    jac = np.array(
        [
            (model.gain(proto.beta + h * e, LAM2) - model.gain(proto.beta - h * e, LAM2)) / (2 * h)
            for e in np.eye(5)
        ]
    ).T
    np.testing.assert_allclose(jac.T @ (1 + mu), 0, atol=1e-4)


def test_dp_sgd_optima():
    model = DPSGD()
    rho, kappa = model.rho(10)[0], model.kappa(10)[0]
    psi = np.array([0.2, 0.3, 0.5, 0.8, 1, 1.5, 2, 3, 4, 5])
    lam = psi * model.L * model.mu * model.dim * kappa**2 * rho**2
    exact = O.optimal_protocol(model, lam, "accuracy")
    assert exact.gamma / rho == pytest.approx(4.8667925, abs=1e-7)
    assert O.optimal_protocol(model, lam, "accuracy", method="cvxpy").gamma / rho == pytest.approx(
        4.8667925, abs=1e-6
    )
    welfare = O.optimal_protocol(model, lam, "welfare")
    np.testing.assert_allclose(
        welfare.beta[:4] / rho, [0.115425, 0.163691, 0.245975, 0.336013], atol=1e-5
    )
    np.testing.assert_allclose(welfare.beta[4:] / rho, 0.336006, atol=1e-5)
    assert welfare.gamma / rho == pytest.approx(2.877142, abs=1e-5)
    np.testing.assert_allclose(welfare.gain[:3] / (kappa**2 * model.dim * rho), 0, atol=1e-6)


@pytest.mark.parametrize(
    ("lam", "gamma"),
    [([5.0, 8, 12, 20, 50], 4.684211), ([3.0, 20, 20, 20, 20], 4.142857), ([4.5] * 5, 0.0)],
)
def test_bayes_max_accuracy(lam, gamma):
    proto = O.optimal_protocol(Bayes(n=1.0, sigma=1.0, tau=1.0), lam, "accuracy")
    assert proto.gamma == pytest.approx(gamma, abs=1e-6)
    assert proto.gain.min() >= -1e-12
    assert proto.exists == (gamma > 0)


def test_bayes_welfare_beats_the_symmetric_optimum():
    from econ.privacy.symmetric import bayes_symmetric_optimum

    model = Bayes(n=1.0, sigma=1.0, tau=1.0)
    proto = O.optimal_protocol(model, np.full(5, 6.0), "welfare")
    assert "local optimum" in proto.method
    assert proto.gain.sum() >= 5 * bayes_symmetric_optimum(1.0, 1.0, 6.0, 5).gain - 1e-9
    assert proto.gain.min() >= -1e-9


def test_programs_are_built_once_and_reused():
    model = DPMean()
    O.optimal_protocol(model, LAM2, "welfare")
    first = optimal_dp._dp_mean_program.cache_info().hits
    O.optimal_protocol(model, LAM2 * 2, "welfare")
    assert optimal_dp._dp_mean_program.cache_info().hits == first + 1
    assert optimal_dp._dp_mean_program(5, np.ones(5).tobytes(), "welfare").problem.is_dpp()


def test_bad_input():
    with pytest.raises(ValueError, match="objective"):
        O.optimal_protocol(DPMean(), LAM2, "fairness")
    with pytest.raises(ValueError, match="nu"):
        O.optimal_protocol(DPMean(), LAM2, nu=[1.0, 2.0])
    with pytest.raises(ValueError, match="not convex"):
        O.optimal_protocol(Bayes(), LAM2, method="cvxpy")
    with pytest.raises(ValueError, match="lam"):
        O.optimal_protocol(DPMean(), [])


_LAMS = st.lists(st.floats(-3.0, 3.5).map(np.exp), min_size=2, max_size=6)


@settings(max_examples=20)
@given(log_lam=_LAMS, objective=st.sampled_from(["welfare", "accuracy"]))
def test_dp_mean_protocols_are_mutually_beneficial_and_beat_the_families(log_lam, objective):
    model, lam = DPMean(), np.array(log_lam)
    proto = O.optimal_protocol(model, lam, objective)
    assert np.all(proto.utility >= proto.utility_alone - 1e-7 * np.maximum(1, lam))
    for family in ("zeta", "symmetric"):
        scan = O.family_protocol(model, lam, family)
        if objective == "accuracy":
            assert proto.gamma >= scan.gamma - 1e-9
        else:
            assert proto.utility.sum() >= scan.utility.sum() - 1e-6 * lam.sum()


@settings(max_examples=15)
@given(
    psi=st.lists(st.floats(0.05, 10.0), min_size=2, max_size=8),
    objective=st.sampled_from(["welfare", "accuracy"]),
)
def test_dp_sgd_protocols_are_mutually_beneficial(psi, objective):
    model = DPSGD(n_clients=len(psi))
    rho, kappa = model.rho(len(psi))[0], model.kappa(len(psi))[0]
    lam = np.array(psi) * model.L * model.mu * model.dim * kappa**2 * rho**2
    proto = O.optimal_protocol(model, lam, objective)
    assert np.all(proto.gain >= -1e-6 * kappa**2 * model.dim * rho)
    scan = O.family_protocol(model, lam, "symmetric")
    if scan.exists:
        assert proto.exists
        if objective == "accuracy":
            assert proto.gamma >= scan.gamma - 1e-9


@settings(max_examples=10)
@given(
    lam=st.lists(st.floats(1.0, 4.5).map(np.exp), min_size=2, max_size=5),
    objective=st.sampled_from(["welfare", "accuracy"]),
)
def test_bayes_protocols_are_mutually_beneficial_and_beat_the_families(lam, objective):
    model, lam_ = Bayes(), np.array(lam)
    proto = O.optimal_protocol(model, lam_, objective)
    assert np.all(proto.gain >= -1e-9)
    for family in ("xi", "symmetric"):
        scan = O.family_protocol(model, lam_, family)
        if objective == "accuracy":
            assert proto.gamma >= scan.gamma - 1e-9
        else:
            assert proto.gain.sum() >= scan.gain.sum() - 1e-9


def _random_problems(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield 10 ** rng.uniform(-2, 8, int(rng.integers(2, 8)))


@pytest.mark.parametrize("objective", ["welfare", "accuracy"])
def test_lambdas_over_ten_orders_are_certified(objective: str) -> None:
    """400 DP-mean problems with lambda in [1e-2, 1e8]: every returned protocol keeps each
    client at its stand-alone utility (up to GAIN_RTOL), and it exists iff Theorem 4.2 says so."""
    from econ.privacy.existence import exists

    model = DPMean()
    for lam in _random_problems(0, 400):
        p = O.optimal_protocol(model, lam, objective=objective)
        size = np.abs(p.utility) + np.abs(p.utility_alone)
        assert np.all(p.gain >= -O.GAIN_RTOL * size), (lam, p.gain)
        assert p.exists == exists(model, lam).exists


def test_dp_sgd_lambdas_over_ten_orders_are_certified() -> None:
    for lam in _random_problems(1, 60):
        p = O.optimal_protocol(DPSGD(n_clients=lam.size), lam)
        size = np.abs(p.utility) + np.abs(p.utility_alone)
        assert np.all(p.gain >= -O.GAIN_RTOL * size), (lam, p.gain)


def test_uncertified_point_is_reported_as_no_protocol() -> None:
    """A point that leaves a client below its stand-alone utility is not returned as a protocol."""
    model, lam = DPMean(), np.array([1.0, 1.0])
    p = O._protocol(model, lam, np.array([0.9, 0.0]), "welfare", "test")
    assert not p.exists and "not certified" in p.method and np.all(p.beta == 0)


@pytest.mark.parametrize("objective", ["welfare", "accuracy"])
def test_bayes_single_client_and_extreme_scales(objective: str) -> None:
    """One client cannot gain (no one to learn from); extreme precisions are no crash."""
    p = O.optimal_protocol(Bayes(n=1.0, sigma=10.0, tau=1.0), [1.0], objective=objective)
    assert not p.exists and p.gain.tolist() == [0.0]
    for model in (Bayes(n=1.0, sigma=1e-6, tau=1e-8), Bayes(n=1e12, sigma=1e6, tau=1e6)):
        p = O.optimal_protocol(model, [0.0, 1e12, 1e-300], objective=objective)
        assert np.all(np.isfinite(p.utility))


def test_an_uncertified_solver_point_is_solved_again_with_the_parameters_as_constants(
    monkeypatch,
) -> None:
    """A DPP solve whose point leaves a client short is retried once without DPP, and the
    protocol reports the method that produced it."""
    real = optimal_dp.dp_mean_cvxpy
    calls = []

    def short_first(model, lam, nu, objective, constants=False):
        calls.append(constants)
        beta, how, multipliers = real(model, lam, nu, objective, constants)
        if not constants:  # a point past the participation constraint: some client loses
            beta = 10 * beta
        return beta, how, multipliers

    monkeypatch.setattr(O, "dp_mean_cvxpy", short_first)
    lam = np.array([0.5, 2.0, 8.0])
    p = O.optimal_protocol(DPMean(), lam, objective="welfare")
    assert calls == [False, True]
    assert p.exists and "parameters as constants" in p.method
    assert np.all(p.gain >= -O.GAIN_RTOL * (np.abs(p.utility) + np.abs(p.utility_alone)))
    direct = O.optimal_protocol(DPMean(), lam, objective="welfare", method="cvxpy")
    np.testing.assert_allclose(p.beta, direct.beta, rtol=1e-4)


@pytest.mark.parametrize("n_clients", range(1, 9))
def test_few_clients_bisection_in_floats_gives_the_same_protocol(n_clients, monkeypatch):
    """Below 8 clients the bisection's test runs in Python floats: the same Gamma and betas,
    bit for bit, as with numpy's test (random weights, inside and outside the existence
    region)."""
    rng = np.random.default_rng(n_clients)
    model = DPMean()
    for _ in range(20):
        lam = rng.lognormal(rng.uniform(-6.0, 2.0), 1.0, n_clients)
        fast, note = optimal_dp.dp_mean_accuracy(model, lam)
        with monkeypatch.context() as m:
            m.setattr(optimal_dp, "_FEW_CLIENTS", 0)
            slow, slow_note = optimal_dp.dp_mean_accuracy(model, lam)
        assert note == slow_note
        if slow is None:
            assert fast is None
        else:
            np.testing.assert_array_equal(fast, slow)
