"""Optimal protocols: worked examples, KKT, and the two property tests."""

import functools

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
    # a cubic beyond the floats: its caps come from bisection on the gain's sign
    p = O.optimal_protocol(
        Bayes(n=1e100, sigma=1.0, tau=1e-100), [1e300, 1e250, 1e200], objective=objective
    )
    assert np.all(np.isfinite(p.utility)) and np.all(p.gain >= 0)


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


# --------------------------------------------------------------------------------------------
# The accuracy optima against a dense search of the total Gamma
# --------------------------------------------------------------------------------------------

#: the optimum may fall short of the dense search's total by this fraction of sum(rho) (the
#: certified resolution of the Bayesian search is GAMMA_RTOL = 1e-13; the rest is rounding)
DENSE_RTOL = 1e-12


def _dense_largest_total(feasible, top: float, points: int = 4000) -> float:
    """The last feasible point of a uniform grid of (0, top], refined by 60 bisection steps
    towards the next grid point; 0 when no grid point is feasible."""
    grid = np.linspace(0.0, top, points + 1)[1:]
    ok = np.flatnonzero(feasible(grid))
    if ok.size == 0:
        return 0.0
    lo = grid[ok[-1]]
    hi = grid[ok[-1] + 1] if ok[-1] + 1 < grid.size else lo
    for _ in range(60):
        mid = np.array([0.5 * (lo + hi)])
        lo, hi = (mid[0], hi) if feasible(mid)[0] else (lo, mid[0])
    return float(lo)


@functools.cache
def _bayes_gain_at_total():
    """Eq. (3)'s gain of a client sending beta when the total is G (the sympy expression)."""
    import sympy as sp

    from econ.privacy import symbolic as S

    total = sp.Symbol("G", positive=True)
    return sp.lambdify(
        (S.beta, total, S.lam, S.rho, S.tau), S.BAYES_GAIN.subs(S.gamma, total - S.beta)
    )


def _bayes_caps_by_bisection(totals, lam, rho, tau):
    """Each client's largest acceptable beta at each total, by bisection on eq. (3)'s gain
    (independent of the cubic the solver uses); NaN where beta = 0 is not acceptable."""
    gain = _bayes_gain_at_total()
    g = totals[:, None]
    lo, hi = np.zeros((g.size, lam.size)), np.minimum(rho, g) + 0 * lam
    top_ok = gain(hi, g, lam, rho, tau) >= 0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        good = gain(mid, g, lam, rho, tau) >= 0
        lo, hi = np.where(good, mid, lo), np.where(good, hi, mid)
    caps = np.where(top_ok, np.minimum(rho, g), lo)
    return np.where(gain(0 * caps, g, lam, rho, tau) >= 0, caps, np.nan)


def _assert_exact_and_beneficial(model, lam, dense: float, top: float) -> None:
    p = O.optimal_protocol(model, lam, "accuracy")
    batched = float(O.max_accuracy_totals(model, lam[None, :])[0])
    assert p.gamma >= dense - DENSE_RTOL * top, (lam, p.gamma, dense)
    assert batched == pytest.approx(p.gamma, abs=1e-12 * top)
    assert p.exists == (p.gamma > 0)
    size = np.abs(p.utility) + np.abs(p.utility_alone)
    assert np.all(p.gain >= -O.GAIN_RTOL * size), (lam, p.gain)
    assert np.all((p.beta >= 0) & (p.beta <= model.rho(lam.size)))


def test_dp_mean_max_accuracy_is_at_least_a_dense_search() -> None:
    """150 DP-mean problems (2-7 clients, precisions and weights over four orders, across
    Theorem 4.2's boundary): the optimum's Gamma is at least the dense search's, and every
    client gains."""
    rng = np.random.default_rng(11)
    for _ in range(150):
        size = int(rng.integers(2, 8))
        model = DPMean(n=rng.integers(20, 2000, size).astype(float), sigma=10.0)
        rho, kappa = model.rho(size), model.kappa(size)
        lam = (kappa * rho) ** 2 * 10 ** rng.uniform(-2.0, 2.0, size)
        zeta = model.zeta(lam)

        def feasible(x, zeta=zeta, rho=rho):
            return optimal_dp.dp_mean_phi(x[:, None], zeta, rho).sum(axis=1) >= x

        dense = _dense_largest_total(feasible, float(rho.sum()))
        _assert_exact_and_beneficial(model, lam, dense, float(rho.sum()))


@pytest.mark.parametrize(
    ("seed", "count"), [(12, 12), pytest.param(13, 120, marks=pytest.mark.slow)]
)
def test_bayes_max_accuracy_is_at_least_a_dense_search(seed: int, count: int) -> None:
    """Bayesian problems (2-6 clients, equal and unequal precisions, tau over two orders,
    weights from below the participation threshold lambda tau = rho + tau to 300 times it):
    the certified optimum's Gamma is at least that of a dense search whose caps come from
    bisection on eq. (3), and every client gains."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        size = int(rng.integers(2, 7))
        n = 100.0 * (np.ones(size) if rng.random() < 0.5 else 10 ** rng.uniform(-0.5, 0.5, size))
        model = Bayes(n=n, sigma=10.0, tau=float(10 ** rng.uniform(-1, 1)))
        rho, tau = model.rho(size), model.tau
        lam = (rho + tau) / tau * 10 ** rng.uniform(-0.3, 2.5, size)

        def feasible(x, lam=lam, rho=rho, tau=tau):
            caps = _bayes_caps_by_bisection(x, lam, rho, tau)
            return np.all(np.isfinite(caps), axis=1) & (np.nansum(caps, axis=1) >= x)

        dense = _dense_largest_total(feasible, float(rho.sum()))
        _assert_exact_and_beneficial(model, lam, dense, float(rho.sum()))


def test_figure1_draws_match_the_optimal_protocols() -> None:
    """The batched optima of Figure 1's draws are the per-draw protocols' Gamma."""
    rng = np.random.default_rng(179)
    for model, m in ((DPMean(n=100.0, sigma=10.0, bound=20.0), 0.5), (Bayes(), 3.0)):
        lam = rng.lognormal(m, 1.0, (40, 5))
        each = [O.optimal_protocol(model, row, "accuracy").gamma for row in lam]
        np.testing.assert_allclose(O.max_accuracy_totals(model, lam), each, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("model", "rows", "match"),
    [
        (DPSGD(n_clients=2), [[1.0, 2.0]], "DPMean or Bayes"),
        (DPMean(), [1.0, 2.0], "2-D"),
        (DPMean(), np.zeros((0, 3)), "2-D"),
        (DPMean(), [[1.0, "a"]], "2-D"),
        (Bayes(), [[1.0, np.nan]], "lam_rows"),
        (Bayes(), [[1.0, -1.0]], "lam_rows"),
    ],
)
def test_max_accuracy_totals_refuses_bad_input(model, rows, match) -> None:
    with pytest.raises(ValueError, match=match):
        O.max_accuracy_totals(model, rows)


# --------------------------------------------------------------------------------------------
# Few clients: the searches in Python floats against the array searches
# --------------------------------------------------------------------------------------------


def _random_dp_mean(rng):
    size = int(rng.integers(2, optimal_dp.FEW_CLIENTS))
    model = DPMean(n=rng.integers(20, 2000, size).astype(float), sigma=10.0)
    rho, kappa = model.rho(size), model.kappa(size)
    return model, (kappa * rho) ** 2 * 10 ** rng.uniform(-2.0, 2.0, size)


def _random_bayes(rng):
    size = int(rng.integers(2, optimal_dp.FEW_CLIENTS))
    n = 100.0 * (np.ones(size) if rng.random() < 0.5 else 10 ** rng.uniform(-0.5, 0.5, size))
    model = Bayes(n=n, sigma=10.0, tau=float(10 ** rng.uniform(-1, 1)))
    return model, (model.rho(size) + model.tau) / model.tau * 10 ** rng.uniform(-0.3, 2.5, size)


def test_dp_mean_few_clients_in_floats_is_the_array_newton() -> None:
    """150 DP-mean problems of 2-7 clients: the Python-float Newton's Gamma_max equals the
    array iteration's to 2e-15 of sum(rho) (sums in another order)."""
    rng = np.random.default_rng(21)
    solved = 0
    for _ in range(150):
        model, lam = _random_dp_mean(rng)
        zeta, rho = model.zeta(lam), model.rho(lam.size)
        if zeta.sum() <= 1:
            continue
        few = optimal_dp.dp_mean_max_accuracy_few(zeta.tolist(), rho.tolist())
        arrays = optimal_dp.dp_mean_max_accuracy(zeta, rho)[0].sum()
        assert few is not None and abs(few - arrays) <= 2e-15 * rho.sum(), (lam, few, arrays)
        solved += 1
    assert solved > 50


def test_bayes_few_clients_in_floats_is_the_certified_array_search() -> None:
    """100 Bayesian problems of 2-7 clients and 60 of Figure 1's draws: the Python-float search
    returns the array search's total to 2 GAMMA_RTOL of sum(rho), or leaves the problem to
    it (``None``) in a few slowly converging cases."""
    from econ.privacy import optimal_bayes as OB

    rng = np.random.default_rng(22)
    problems = [_random_bayes(rng) for _ in range(100)]
    figure = Bayes(n=100.0, sigma=10.0, tau=1.0)
    problems += [(figure, lam) for m in (-1.0, 1.0, 2.5) for lam in rng.lognormal(m, 1.0, (20, 5))]
    left = 0
    for model, lam in problems:
        rho = model.rho(lam.size)
        top = float(rho.sum())
        few = OB.bayes_max_total_few(lam.tolist(), rho.tolist(), model.tau, top)
        if few is None:
            left += 1
            continue
        arrays = float(OB.bayes_max_total(lam, rho, model.tau)[0])
        assert abs(few - arrays) <= 2 * OB.GAMMA_RTOL * top, (lam, few, arrays)
    assert left <= 5


def test_a_few_client_search_that_does_not_finish_is_left_to_the_arrays(monkeypatch) -> None:
    """With a single step allowed the Python-float search gives up (``None``), and the
    protocol and the batched optimum are the array search's."""
    from econ.privacy import optimal_bayes as OB

    lam = np.array([5.0, 8, 12, 20, 50])
    model = Bayes()
    rho = model.rho(lam.size)
    full = O.optimal_protocol(model, lam, "accuracy")
    monkeypatch.setattr(OB, "FEW_STEPS", 1)
    assert OB.bayes_max_total_few(lam.tolist(), rho.tolist(), model.tau, float(rho.sum())) is None
    left = O.optimal_protocol(model, lam, "accuracy")
    assert left.gamma == pytest.approx(float(OB.bayes_max_total(lam, rho, model.tau)[0]), rel=1e-15)
    assert left.gamma == pytest.approx(full.gamma, abs=2 * OB.GAMMA_RTOL * rho.sum())
    rows = np.array([lam, [4.5] * 5, lam[::-1]])
    np.testing.assert_array_equal(
        O.max_accuracy_totals(model, rows), OB.bayes_max_total(rows, rho, model.tau)
    )
