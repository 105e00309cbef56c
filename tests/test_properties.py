"""Property tests over the public econ/ and games/ functions, with edge floats.

Every input strategy mixes ordinary floats with the edges where closed forms break: 0, the
smallest subnormal 5e-324, 1e-300, 1e-160 (where products of three qualities underflow),
near-ties ``q_l = q_h (1 - 1e-15)`` and the next float below ``q_h``, and knife-edge ratios
such as ``q_l0/Q = 4/7`` with ``q_h0 = Q`` (the Nash interval of econ.bargaining collapses to a
point). The properties:

* on valid input nothing escapes, and on invalid input (negative, NaN, inf, out of range)
  only ``ValueError`` or ``TypeError`` does;
* outputs are finite;
* prices, demands and revenues are >= 0, demands lie in [0, 1] and sum to at most 1, and
  welfare is consumer surplus plus revenues;
* bargaining solutions are individually rational;
* optimal protocols of econ.privacy give every client a gain >= 0 up to
  :data:`econ.privacy.optimal.GAIN_RTOL` of its utility magnitude.

Every test is derandomised (``derandomize=True``, no example database), so CI runs the same
examples each time. The full budget is :data:`TOTAL_EXAMPLES` = 22,200 valid examples (the
sum of the budgets below; ``pytest --hypothesis-show-statistics`` lists each test's passing
examples; inputs rejected by ``assume`` or a filter come on top). It runs under the
``thorough`` profile of tests/conftest.py (``HYPOTHESIS_PROFILE=thorough``, as CI does in a
step of its own); the everyday profile runs the first :data:`EVERYDAY_SHARE` of each budget,
the same derandomised examples, so that the README's test command stays within its time.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from econ import bargaining, duopoly, market, nash_bargaining, oligopoly, quality_caps
from econ.privacy import conversions, existence, optimal
from econ.privacy.models import DPSGD, Bayes, DPMean
from games import defection_free
from games.price_discrimination import equilibrium as pd_eq
from games.price_discrimination import game as pd

_BUDGET: dict[str, int] = {}
#: the share of each budget the everyday profile runs (the full budget: the thorough profile)
EVERYDAY_SHARE = 0.25
FULL = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"  # the profile tests/conftest.py loads


def _props(name: str, n: int) -> settings:
    """Derandomised settings with ``n`` examples under the thorough profile (a quarter of them
    otherwise), counted in :data:`_BUDGET`."""
    _BUDGET[name] = n
    return settings(
        max_examples=n if FULL else max(1, round(n * EVERYDAY_SHARE)),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


# ------------------------------------------------------------------------------ strategies

TINY = (5e-324, 1e-320, 1e-300, 1e-200, 1e-160, 1e-154, 1e-100, 1e-20, 1e-15)
EDGE = (0.0, *TINY, 4 / 7, 0.45714285714285713, 0.5, 0.8, 1.0 - 1e-15, 1.0)
BAD = (-1.0, -5e-324, math.nan, math.inf, -math.inf, 1.0 + 1e-12, 2.0, 1e308)

unit = st.one_of(
    st.sampled_from(EDGE),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1e-150),
    st.floats(1e-320, 1e-300),
)
positive_unit = unit.filter(lambda x: x > 0)
anything = st.one_of(unit, st.sampled_from(BAD), st.floats(allow_nan=True, allow_infinity=True))


@st.composite
def quality_pairs(draw: st.DrawFn) -> tuple[float, float]:
    """``(q_l, q_h)`` with ``q_l <= q_h``: ties, near-ties, knife-edge ratios, tiny and 0."""
    qh = draw(unit)
    how = draw(st.sampled_from(("free", "tie", "near", "next", "4/7", "ratio", "zero")))
    if how == "tie":
        ql = qh
    elif how == "near":
        ql = qh * (1 - 1e-15)
    elif how == "next":
        ql = float(np.nextafter(qh, 0.0))
    elif how == "4/7":
        ql = qh * 4 / 7
    elif how == "ratio":
        ql = qh * draw(st.floats(0.0, 1.0))
    elif how == "zero":
        ql = 0.0
    else:
        ql = draw(unit)
    lo, hi = sorted((ql, qh))
    return lo, hi


@st.composite
def starts(draw: st.DrawFn) -> tuple[float, float, float]:
    """``(q_l0, q_h0, Q)`` with ``q_l0 <= q_h0 <= Q``, ``Q > 0``, including q_l0/Q = 4/7, q_h0 = Q."""
    q = draw(positive_unit)
    if draw(st.booleans()):
        ql0, qh0 = draw(quality_pairs())
        ql0, qh0 = ql0 * q, qh0 * q
    else:
        qh0 = q * draw(st.sampled_from((1.0, 1 - 1e-15, 0.8, 0.5)))
        ql0 = q * draw(st.sampled_from((4 / 7, 0.45714285714285713 / 0.8, 0.0, 0.3, 1.0)))
        ql0 = min(ql0, qh0)
    return ql0, qh0, q


def _fails_cleanly(fn, *args, **kwargs):
    """Call ``fn``; only ValueError/TypeError may escape (returns None then)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)
    except (ValueError, TypeError):
        return None


def _finite(*values) -> None:
    for v in values:
        arr = np.asarray(v, dtype=np.float64)
        assert np.all(np.isfinite(arr)), v


def _close(a: float, b: float, scale: float) -> bool:
    """Equal up to rounding of sums of terms of size ``scale`` (and subnormal dust)."""
    return abs(a - b) <= 1e-12 * scale + 1e-300


# ------------------------------------------------------------------------------ econ.duopoly


@_props("duopoly_equilibrium", 2300)
@given(quality_pairs(), st.booleans())
def test_duopoly_equilibrium(pair: tuple[float, float], swap: bool) -> None:
    ql, qh = pair
    eq = duopoly.equilibrium(qh, ql, order=True) if swap else duopoly.equilibrium(ql, qh)
    values = [eq.p_l, eq.p_h, eq.D_l, eq.D_h, eq.theta_l, eq.theta_h, eq.U_l, eq.U_h]
    _finite(*values, eq.consumer_surplus, eq.welfare)
    assert min(eq.p_l, eq.p_h, eq.U_l, eq.U_h, eq.consumer_surplus) >= 0
    assert 0 <= eq.D_l <= 1 and 0 <= eq.D_h <= 1 and eq.D_l + eq.D_h <= 1 + 1e-15
    assert 0 <= eq.theta_l <= eq.theta_h <= 1
    assert _close(eq.welfare, eq.consumer_surplus + eq.U_l + eq.U_h, qh)
    u_l, u_h = duopoly.revenues(ql, qh)
    assert (u_l, u_h) == (eq.U_l, eq.U_h)
    cournot = duopoly.cournot_equilibrium(ql, qh).to_dict()
    _finite(*cournot.values())
    assert min(cournot.values()) >= 0 and cournot["x_l"] + cournot["x_h"] <= 1 + 1e-15


@_props("duopoly_scale", 800)
@given(quality_pairs(), st.sampled_from((1e-300, 1e-160, 1e-100, 1e-8)))
def test_duopoly_homogeneous(pair: tuple[float, float], scale: float) -> None:
    """Prices and revenues are degree-1 homogeneous, demands degree 0, also near underflow."""
    ql, qh = pair
    assume(qh * scale >= 1e-300 and (ql == 0 or ql * scale >= 1e-300))  # no subnormal rounding
    big, small = duopoly.equilibrium(ql, qh), duopoly.equilibrium(ql * scale, qh * scale)
    assert small.D_l == pytest.approx(big.D_l, rel=1e-9, abs=1e-12)
    assert small.D_h == pytest.approx(big.D_h, rel=1e-9, abs=1e-12)
    assert small.U_h == pytest.approx(big.U_h * scale, rel=1e-6)


@_props("duopoly_demands", 1500)
@given(unit, unit, quality_pairs())
def test_duopoly_demands_at_any_prices(p_l: float, p_h: float, pair: tuple[float, float]) -> None:
    ql, qh = pair
    out = _fails_cleanly(duopoly.demands, p_l, p_h, ql, qh)
    if out is None:
        assert not 0 < ql < qh
        return
    d_l, d_h = out
    _finite(d_l, d_h)
    assert 0 <= d_l <= 1 and 0 <= d_h <= 1 and d_l + d_h <= 1 + 1e-12


@_props("duopoly_bad", 1000)
@given(anything, anything, st.booleans())
def test_duopoly_bad_input_is_a_value_error(ql: float, qh: float, order: bool) -> None:
    out = _fails_cleanly(duopoly.equilibrium, ql, qh, order=order)
    if out is not None:
        _finite(out.U_l, out.U_h, out.welfare)
        assert 0 <= min(ql, qh) and max(ql, qh) <= 1
    _fails_cleanly(duopoly.u_h_inverse, ql)


@_props("u_h_inverse", 800)
@given(st.one_of(st.floats(0.0, 0.25), st.sampled_from((0.0, 5e-324, 0.25))))
def test_u_h_inverse_inverts(y: float) -> None:
    r = duopoly.u_h_inverse(y)
    _finite(r)
    assert 0 <= r <= 1 + 1e-12
    assert float(duopoly.u_h(r)) == pytest.approx(y, abs=1e-12)


# ------------------------------------------------------------------------------ econ.bargaining


def _ir_tol(value: float) -> float:
    return 1e-9 * abs(value) + 1e-300


@_props("nash_solution", 2000)
@given(starts(), st.booleans())
def test_duopoly_nash_solution_is_individually_rational(start, allow_lower: bool) -> None:
    ql0, qh0, q = start
    sol = bargaining.duopoly_nash_solution(ql0, qh0, q, allow_lower=allow_lower)
    _finite(sol.rho_star, sol.q_l_star, sol.q_h_star, sol.nash_product, sol.U_l_star, sol.U_h_star)
    _finite(sol.rho_low, sol.rho_high)
    ul0, uh0 = duopoly.revenues(ql0, qh0)
    assert sol.U_l_star >= ul0 - _ir_tol(q), (sol, ul0)
    assert sol.U_h_star >= uh0 - _ir_tol(q), (sol, uh0)
    assert sol.nash_product >= -1e-12 * q * q
    assert sol.rho_low - 1e-9 <= sol.rho_star <= sol.rho_high + 1e-9
    assert 0 <= sol.q_l_star <= sol.q_h_star == q
    if not allow_lower:
        assert sol.q_l_star >= ql0
    lo, hi = bargaining.feasible_interval(ql0, qh0, q, allow_lower=allow_lower)
    assert (lo, hi) == (sol.rho_low, sol.rho_high)


@_props("nash_report", 1500)
@given(quality_pairs(), quality_pairs(), st.booleans())
def test_nash_report(point, start, swap: bool) -> None:
    ql, qh = point[::-1] if swap else point
    rep = bargaining.nash_report(ql, qh, *start)
    _finite(rep.product, rep.gain_l, rep.gain_h)
    assert rep.product == rep.gain_l * rep.gain_h
    assert rep.rational == (rep.gain_l >= -1e-12 and rep.gain_h >= -1e-12)
    assert bargaining.nash_product(ql, qh, *start) == rep.product
    ua, ub = bargaining.firm_revenues(ql, qh)
    assert ua >= 0 and ub >= 0


@_props("bargaining_bad", 800)
@given(anything, anything, anything)
def test_bargaining_bad_input_is_a_value_error(ql0: float, qh0: float, q: float) -> None:
    sol = _fails_cleanly(bargaining.duopoly_nash_solution, ql0, qh0, q)
    if sol is not None:
        _finite(sol.rho_star, sol.U_l_star, sol.U_h_star)


@_props("nash_bargaining", 150)
@given(
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.sampled_from((0.0, 1e-300, 0.3, 1.0)),
    st.booleans(),
)
def test_general_nash_bargaining_is_individually_rational(d1, d2, weight, swap) -> None:
    """Splitting a surplus: u1 = x, u2 = weight (1 - x) on [0, 1]."""

    def u1(x):
        return float(x[0])

    def u2(x):
        return weight * (1 - float(x[0]))

    sol = _fails_cleanly(nash_bargaining.nash_bargaining, u1, u2, [(0.0, 1.0)], (d1, d2), grid=21)
    if sol is None:  # no grid point is rational: then x = d1 leaves player 2 short
        assert d2 > weight * (1 - d1) - 0.05 * weight
        return
    _finite(sol.x, sol.utilities, sol.nash_product)
    assert sol.utilities[0] >= d1 - 1e-12 and sol.utilities[1] >= d2 - 1e-12
    assert sol.nash_product >= 0


# ------------------------------------------------------------------------------ market, oligopoly

firm_lists = st.lists(
    st.one_of(unit, st.sampled_from((0.3, 0.3 * (1 - 1e-15), 0.5))), min_size=1, max_size=6
)


def _market_invariants(price, share, revenue, surplus, welfare, quality, most=0.5) -> None:
    _finite(price, share, revenue, surplus, welfare)
    assert np.all(price >= 0) and np.all(revenue >= 0) and surplus >= 0
    assert np.all((share >= 0) & (share <= 1)) and share.sum() <= 1 + 1e-12
    assert np.array_equal(revenue, price * share)
    scale = float(np.max(quality)) if quality.size else 0.0
    assert _close(welfare, surplus + float(revenue.sum()), scale)
    assert surplus <= scale * most * (1 + 1e-12) + 1e-300  # the integral of theta q_max is q_max/2


@_props("market_round", 2400)
@given(firm_lists)
def test_market_round(qualities: list[float]) -> None:
    m = market.market_round(qualities)
    _market_invariants(m.price, m.share, m.revenue, m.consumer_surplus, m.welfare, m.quality)
    assert np.all(m.price[m.priced_out] == 0) and np.all(m.share[m.priced_out] == 0)
    eq = oligopoly.oligopoly_equilibrium(qualities)
    assert np.array_equal(eq.price, m.price) and eq.welfare == m.welfare


@_props("oligopoly_demands", 1200)
@given(firm_lists, st.data())
def test_oligopoly_demands_at_any_prices(qualities: list[float], data: st.DataObject) -> None:
    prices = data.draw(st.lists(unit, min_size=len(qualities), max_size=len(qualities)))
    d = oligopoly.demands(qualities, prices)
    _finite(d)
    assert np.all((d >= 0) & (d <= 1)) and d.sum() <= 1 + 1e-9


@_props("deviation_gains", 300)
@given(firm_lists)
def test_deviation_gains_at_equilibrium(qualities: list[float]) -> None:
    eq = oligopoly.oligopoly_equilibrium(qualities)
    gains = oligopoly.deviation_gains(qualities, eq.price, grid=101)
    _finite(gains)
    assert np.all(gains >= 0)  # the current price is among the tries


@_props("market_bad", 800)
@given(st.lists(anything, min_size=0, max_size=4))
def test_market_bad_input_is_a_value_error(qualities: list[float]) -> None:
    m = _fails_cleanly(market.market_round, qualities)
    if m is not None:
        _market_invariants(m.price, m.share, m.revenue, m.consumer_surplus, m.welfare, m.quality)
    _fails_cleanly(oligopoly.oligopoly_equilibrium, qualities)


@_props("sampled_market", 200)
@given(firm_lists, st.integers(1, 50))
def test_sampled_market(qualities: list[float], n: int) -> None:
    m = market.sampled_market(qualities, n, seed=0)
    args = (m.price, m.share, m.revenue, m.consumer_surplus, m.welfare, m.quality)
    _market_invariants(*args, most=1.0)  # a sampled type gains at most q_max


@_props("market_path", 800)
@given(st.lists(quality_pairs(), min_size=1, max_size=4), st.booleans())
def test_market_path_and_history(pairs, swap: bool) -> None:
    ql = np.array([p[1] if swap else p[0] for p in pairs])
    qh = np.array([p[0] if swap else p[1] for p in pairs])
    path = defection_free.market_path(ql, qh)
    _finite(path.U_l, path.U_h, path.consumer_surplus, path.welfare)
    assert np.all(path.U_l >= 0) and np.all(path.U_h >= 0)
    total = path.consumer_surplus + path.U_l + path.U_h
    assert np.all(np.abs(path.welfare - total) <= 1e-12 * np.maximum(ql, qh) + 1e-300)


@_props("defection_free_report", 400)
@given(st.lists(quality_pairs(), min_size=2, max_size=4), st.sampled_from((1.0, 0.8, 1e-300)))
def test_defection_free_report(pairs, q_max: float) -> None:
    ql = np.array([p[0] for p in pairs])
    qh = np.array([p[1] for p in pairs])
    n = ql.size
    run = defection_free.Play(
        scheme="test", q_l=ql, q_h=qh, cap=np.full(n, np.nan), hat_q=np.full(n, np.nan), measured=()
    )
    rep = defection_free.report(run, q_max=q_max)
    _finite(rep.rho_star, rep.q_max, rep.nash_star, rep.nash_max, rep.final_nash_gap)
    assert rep.nash_star >= 0 and rep.nash_max >= 0
    for row in rep.rows:
        _finite(row["U_l"], row["U_h"], row["welfare"], row["rho"], row["nash_product"])
        assert row["U_l"] >= 0 and row["U_h"] >= 0


# ------------------------------------------------------------------------------ econ.quality_caps


@_props("caps", 1000)
@given(starts(), st.floats(0.0, 1.0))
def test_caps(start, extra: float) -> None:
    ql, qh, q = start
    assume(qh > 0)
    qn = qh + (q - qh) * extra
    hi = _fails_cleanly(quality_caps.cap_high, ql, qh, qn)
    low = _fails_cleanly(quality_caps.cap_low, ql, qh, qn)
    if hi is not None and low is not None:
        _finite(hi, low)
        assert hi >= 0 and low >= hi * (1 - 1e-9) - 1e-300
    rho_star = float(bargaining.duopoly_nash_solution(ql, qh, q).rho_star)
    nxt = quality_caps.next_low_quality(ql, qh, qn, rho_star=rho_star, q_l_star=rho_star * q)
    _finite(nxt)
    assert ql <= nxt <= max(qn, ql)
    u = float(duopoly.revenues(ql, qh)[1])
    y = quality_caps.min_high_quality(ql, min(u, 0.25))
    _finite(y)
    assert y >= 0


@_props("caps_bad", 600)
@given(anything, anything, anything)
def test_caps_bad_input_is_a_value_error(a: float, b: float, c: float) -> None:
    for fn in (quality_caps.cap_high, quality_caps.cap_low):
        out = _fails_cleanly(fn, a, b, c)
        if out is not None:
            _finite(out)
    out = _fails_cleanly(quality_caps.cap_ratio, a, 1 + abs(b) if np.isfinite(b) else b)
    if out is not None:
        _finite(out)
    _fails_cleanly(quality_caps.min_high_quality, a, b)
    _fails_cleanly(quality_caps.b_rho, a)


# ------------------------------------------------------------------------------ econ.privacy

lams = st.lists(
    st.one_of(
        st.sampled_from((0.0, 1e-300, 1e-8, 1.0, 1e4, 1e8, 1e12)),
        st.floats(0.0, 1e8),
        st.floats(1e-3, 1e8).map(lambda x: 10 ** (math.log10(x) * 1.0)),
    ),
    min_size=1,
    max_size=6,
)
model_params = st.tuples(
    st.sampled_from((1.0, 1.5, 100.0, 1e6, 1e12)),  # n
    st.sampled_from((1e-6, 0.1, 1.0, 10.0, 1e6)),  # sigma
    st.sampled_from((1e-8, 1.0, 20.0, 1e6)),  # bound / tau
)


def _models(n_clients: int, params) -> list:
    n, sigma, c = params
    out = [DPMean(n=n, sigma=sigma, bound=c), Bayes(n=n, sigma=sigma, tau=c)]
    sgd = _fails_cleanly(DPSGD, n_clients=n_clients, n=max(n, 1.0), sigma=sigma, bound=c)
    if sgd is not None:
        out.append(sgd)
    return out


def _certified(p) -> None:
    _finite(p.beta, p.utility, p.utility_alone, p.leak)
    size = np.abs(p.utility) + np.abs(p.utility_alone)
    assert np.all(p.gain >= -optimal.GAIN_RTOL * size), (p.gain, p.method)
    if not p.exists:
        assert np.all(p.beta == 0)


@_props("privacy_optimal", 400)
@given(lams, model_params, st.sampled_from(("welfare", "accuracy")))
def test_optimal_protocols_are_mutually_beneficial(lam, params, objective: str) -> None:
    for model in _models(len(lam), params):
        p = _fails_cleanly(optimal.optimal_protocol, model, lam, objective=objective)
        assert p is not None, (model, lam)
        _certified(p)
        e = existence.exists(model, lam)
        assert isinstance(e.exists, bool)
        if p.exists and not isinstance(model, Bayes):  # Theorems 4.2 and 4.5 are iff
            assert e.exists


@_props("privacy_bad", 500)
@given(st.lists(anything, min_size=0, max_size=3), anything, anything)
def test_privacy_bad_input_is_a_value_error(lam, n: float, sigma: float) -> None:
    for make in (DPMean, Bayes):
        model = _fails_cleanly(make, n=n, sigma=sigma)
        if model is None:
            continue
        for call in (existence.exists, optimal.optimal_protocol):
            out = _fails_cleanly(call, model, lam)
            if out is not None and call is optimal.optimal_protocol:
                _certified(out)


@_props("conversions", 1000)
@given(
    st.one_of(st.sampled_from((0.0, 5e-324, 1e-300, 1.0, 1e150, math.inf)), st.floats(0, 1e6)),
    st.one_of(st.sampled_from((5e-324, 1e-300, 1.0, 1e300)), st.floats(1e-6, 1e6)),
    st.integers(1, 100),
)
def test_conversions(alpha: float, rho: float, dim: int) -> None:
    beta = _fails_cleanly(conversions.beta_of_alpha, alpha, rho, dim)
    if beta is None:
        return
    _finite(beta)
    assert 0 <= beta <= rho
    back = conversions.alpha_of_beta(beta, rho, dim)
    assert not np.isnan(back) and back >= 0
    eps = _fails_cleanly(conversions.epsilon_of_alpha, alpha, rho)
    if eps is not None:
        assert eps >= 0 and not np.isnan(eps)


@_props("gaussian", 250)
@given(
    st.one_of(st.sampled_from((5e-324, 1e-300, 1e-8, 1.0, 50.0)), st.floats(1e-3, 10.0)),
    st.one_of(st.sampled_from((5e-324, 1e-300, 1e-12, 0.5, 1 - 1e-16)), st.floats(1e-10, 0.5)),
    st.one_of(st.sampled_from((1e-300, 1.0, 1e6)), st.floats(0.01, 100.0)),
)
def test_gaussian_calibrations(epsilon: float, delta: float, sigma: float) -> None:
    for fn, args in (
        (conversions.classical_gaussian_sigma, (epsilon, delta, 1.0)),
        (conversions.analytic_gaussian_delta, (epsilon, sigma, 1.0)),
        (conversions.analytic_gaussian_epsilon, (sigma, delta, 1.0)),
        (conversions.analytic_gaussian_sigma, (epsilon, delta, 1.0)),
    ):
        out = _fails_cleanly(fn, *args)
        if out is not None:
            assert not math.isnan(out) and out >= 0


# ------------------------------------------------------------------------------ games.price_discrimination

pd_numbers = st.one_of(st.sampled_from((0.0, 5e-324, 1e-300, 0.5, 1.0, 1e300)), st.floats(0, 10))


@_props("pd_equilibrium", 1500)
@given(
    st.one_of(st.sampled_from((5e-324, 1e-300, 0.5, 1 - 1e-16)), st.floats(0, 1)),
    pd_numbers,
    pd_numbers,
    pd_numbers,
    pd_numbers,
    st.one_of(st.sampled_from((0.0, 5e-324, 1.0)), st.floats(0, 1)),
    st.sampled_from(pd.CONVENTIONS),
)
def test_pd_equilibrium(mu, theta_low, gap, c_b, c_s, alpha, convention) -> None:
    g = _fails_cleanly(pd.PDGame, mu, theta_low, theta_low + gap, c_b, c_s)
    if g is None:
        return
    eq = pd_eq.equilibrium(g, alpha, convention)
    _finite(eq.seller, eq.high_buyer, eq.low_buyer, eq.buyer_avg)
    dust = 1e-12 * (g.theta_high + g.c_b)  # the strict profile's 0 is a difference of products
    assert eq.high_buyer >= -dust and eq.low_buyer >= -dust
    if convention == "strict":
        gain = pd_eq.high_buyer_deviation_gain(g, alpha, convention)
        assert gain <= 1e-9 * (1 + g.theta_high)


TOTAL_EXAMPLES = sum(_BUDGET.values())


def test_example_budget() -> None:
    """The docstring's count: at least 20,000 examples in the full budget."""
    assert TOTAL_EXAMPLES == 22_200 and TOTAL_EXAMPLES >= 20_000
