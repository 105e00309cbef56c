"""The n-firm market under general consumer populations (econ.population)."""

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from econ import population_propositions  # noqa: F401  (registers market.population.*)
from econ.oligopoly import buyer_interval, demands, oligopoly_equilibrium
from econ.population import Population, parse_population
from econ.population_market import (
    _bounded_minimum,
    best_response_certificate,
    population_demands,
    population_equilibrium,
)


@pytest.mark.parametrize(
    ("spec", "frozen"),
    [
        ("uniform", stats.uniform()),
        ("beta:2,5", stats.beta(2, 5)),
        ("lognorm:0.5", stats.lognorm(0.5)),
        ("lognorm:0.8,0.3", stats.lognorm(0.8, scale=0.3)),
        ("truncnorm:0.5,0.2", stats.truncnorm(-2.5, np.inf, loc=0.5, scale=0.2)),
        ("truncnorm:0.3,0.4,1", stats.truncnorm(-0.75, 1.75, loc=0.3, scale=0.4)),
        ("truncnorm:-0.45,0.05", stats.truncnorm(9, np.inf, loc=-0.45, scale=0.05)),
    ],
)
def test_spec_families_match_scipy(spec, frozen):
    pop = parse_population(spec)
    t = np.array([0.0, 0.05, 0.3, 0.7, 1.0, 2.5])
    np.testing.assert_allclose(pop.cdf(t), frozen.cdf(t), atol=1e-12)
    np.testing.assert_allclose(pop.pdf(t[1:-1]), frozen.pdf(t[1:-1]), rtol=1e-10)
    partial = [integrate.quad(lambda x: x * frozen.pdf(x), 0, v)[0] for v in t]
    np.testing.assert_allclose(pop.mean_below(t), partial, atol=1e-9)
    assert pop.mean == pytest.approx(frozen.mean(), rel=1e-9)
    assert pop.quantile(np.array(0.3)) == pytest.approx(frozen.ppf(0.3), rel=1e-9)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("gamma:2", "unknown population"),
        ("beta:2", "beta takes beta:a,b"),
        ("beta:2,x", "'x' is not a number"),
        ("beta:0,1", "a must lie in"),
        ("lognorm:nan", "not a finite number"),
        ("truncnorm:-40,1", "puts no mass"),
        ("truncnorm:-0.5,0.001", "puts no mass"),
        ("uniform:1", "takes uniform"),
    ],
)
def test_bad_specs_are_refused_with_the_accepted_forms(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_population(spec)


def test_from_scipy_takes_continuous_nonnegative_distributions_only():
    pop = Population.from_scipy(stats.gamma(2.0, scale=0.2))
    assert pop.mean == pytest.approx(0.4, rel=1e-8)
    with pytest.raises(ValueError, match="types must be >= 0"):
        Population.from_scipy(stats.norm())
    with pytest.raises(ValueError, match="continuous"):
        Population.from_scipy(stats.poisson(2))


def test_uniform_is_the_closed_form_and_beta_1_1_the_same_by_first_order_conditions():
    q = [0.2, 0.5, 0.9]
    closed = population_equilibrium(q, "uniform")
    solved = population_equilibrium(q, "beta:1,1")
    assert closed.method.startswith("closed form") and solved.method.startswith("first-order")
    np.testing.assert_allclose(closed.price, [2 / 195, 2 / 39, 44 / 195], rtol=1e-12)
    np.testing.assert_allclose(solved.price, closed.price, rtol=1e-9)
    np.testing.assert_allclose(solved.demand, [10 / 117, 35 / 117, 22 / 39], rtol=1e-9)
    exact = oligopoly_equilibrium(q)
    assert solved.consumer_surplus == pytest.approx(exact.consumer_surplus, rel=1e-9)
    assert closed.certificate.holds and solved.certificate.holds


def test_demands_at_any_prices_are_econ_oligopolys_for_uniform_types():
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = np.round(rng.random(4), 2)
        p = rng.random(4) * q
        np.testing.assert_allclose(
            population_demands(q, p, Population.uniform()), demands(q, p), atol=1e-12
        )


def test_beta_market_solves_its_first_order_conditions_and_surplus_integrates():
    q = np.array([0.2, 0.5, 0.9])
    pop = parse_population("beta:2,5")
    eq = population_equilibrium(q, pop)
    assert eq.certificate.holds and np.all(eq.price > 0) and np.all(eq.demand > 0)
    assert eq.demand.sum() < 1
    np.testing.assert_allclose(eq.revenue, eq.price * eq.demand)
    # first-order conditions by central differences of each revenue
    for i in range(3):
        h = 1e-7 * eq.price[i]
        up, down = eq.price.copy(), eq.price.copy()
        up[i] += h
        down[i] -= h
        slope = (up[i] * population_demands(q, up, pop)[i]) - (
            down[i] * population_demands(q, down, pop)[i]
        )
        assert abs(slope / (2 * h)) < 1e-6
    utility = lambda t: max(0.0, float(np.max(t * q - eq.price)))  # noqa: E731
    points = np.append(eq.price[0] / q[0], (np.diff(eq.price) / np.diff(q)))
    cs = integrate.quad(lambda t: utility(t) * pop.pdf(np.array(t)), 0, 1, points=points)[0]
    assert eq.consumer_surplus == pytest.approx(cs, rel=1e-8)


def test_ties_and_zeros_under_a_population():
    eq = population_equilibrium([0.2, 0.5, 0.5, 0.9, 0.0], "lognorm:0.5,0.4")
    assert eq.price[:3].tolist() == [0, 0, 0] and eq.price[4] == 0 and eq.price[3] > 0
    assert eq.demand[1] == eq.demand[2] > 0 and eq.demand[0] == eq.demand[4] == 0
    assert eq.priced_out.tolist() == [True, False, False, False, True]
    assert eq.certificate.holds


def test_types_away_from_zero_price_the_lowest_firms_out():
    # types near 1.95: a firm of quality 0.08 cannot undercut its way to any buyer
    q = np.array([0.08084, 0.17453, 0.37649, 0.51133, 0.60736, 0.8019, 0.97624])
    eq = population_equilibrium(q, "lognorm:0.2,1.95")
    assert eq.method.startswith("best-response iteration")
    assert eq.certificate.holds
    assert eq.priced_out[0] and eq.price[0] == 0 and eq.demand[0] == 0
    assert np.all(eq.demand[eq.priced_out] == 0) and eq.demand[-1] > 0


def test_certificate_finds_the_gain_of_a_wrong_price():
    q = [0.3, 0.8]
    pop = parse_population("truncnorm:0.5,0.2")
    eq = population_equilibrium(q, pop)
    wrong = eq.price * np.array([1.0, 1.1])
    cert = best_response_certificate(q, wrong, pop)
    assert not cert.holds and cert.gain[1] > 0  # and firm 0 now has a better reply too
    assert cert.best_price[1] == pytest.approx(eq.price[1], rel=1e-5)


def test_sampled_population_prices_by_smoothing_and_certifies_exactly():
    pop = parse_population("beta:2,5")
    sample = pop.sample(20_000, seed=0)
    q = np.array([0.2, 0.5, 0.9])
    eq = population_equilibrium(q, sample)
    assert eq.method.startswith("first-order conditions of the smoothed sample")
    assert eq.certificate.relative_gain.max() < 0.05
    np.testing.assert_allclose(eq.price, population_equilibrium(q, pop).price, rtol=0.05)
    # the exact supremum on the sample: no price on a fine grid does better
    for i in range(3):
        grid = np.linspace(0, q[i], 301)
        revenue = [
            x * population_demands(q, np.where(np.arange(3) == i, x, eq.price), sample)[i]
            for x in grid
        ]
        assert max(revenue) <= eq.certificate.best_revenue[i] + 1e-15


def test_a_small_sample_demand_is_a_step_function():
    sample = Population.from_sample([0.1, 0.4, 0.4, 0.9])
    assert population_demands([0.5], [0.1], sample).tolist() == [0.75]  # types above 0.2
    # the two types 0.4 are indifferent at 0.2 and buy the lower offer (nothing); the
    # supremum of the revenue, 0.2 * 3/4, is the limit from below
    assert population_demands([0.5], [0.2], sample).tolist() == [0.25]
    cert = best_response_certificate([0.5], [0.1], sample)
    assert cert.best_revenue[0] == pytest.approx(0.15) and cert.best_price[0] == 0.2
    with pytest.raises(ValueError, match="at least one type"):
        Population.from_sample([])


def test_equilibrium_to_dict_is_json_ready():
    eq = population_equilibrium([0.3, 0.8], "beta:2,2")
    d = eq.to_dict()
    assert d["population"] == "beta:2,2" and d["certificate"]["holds"] is True
    assert d["welfare"] == pytest.approx(eq.consumer_surplus + eq.revenue.sum())
    assert math.isfinite(d["certificate"]["tail_bound"])


def test_lockstep_bounded_search_is_scipys_bounded_search_on_each_function():
    centre = np.array([0.3, 0.05, 0.7, 0.5, 0.2])
    curve = np.array([1.0, 40.0, 3.0, 0.0, 8.0])  # the fourth is flat

    def f(j, v):
        return -np.exp(-curve[j] * (v - centre[j]) ** 2) * v + np.abs(v - centre[j]) * 1e-3

    lo, hi = np.array([0.0, 0.0, 0.4, 0.1, 0.25]), np.array([1.0, 0.1, 2.0, 0.9, 0.6])
    xatol = 1e-12 * hi
    at, value = _bounded_minimum(f, lo, hi, xatol)
    for j in range(lo.size):
        res = optimize.minimize_scalar(
            lambda v, j=j: float(f(np.array([j]), np.array([v]))[0]),
            bounds=(lo[j], hi[j]),
            method="bounded",
            options={"xatol": xatol[j]},
        )
        assert (at[j], value[j]) == (res.x, res.fun)


def test_buyer_intervals_of_many_firms_are_each_firms():
    q, p = np.array([0.3, 0.6, 0.6, 0.0, 0.9]), np.array([0.05, 0.2, 0.2, 0.0, 0.4])
    firms = np.array([4, 1, 3, 0, 2])
    x = np.linspace(0.0, 0.5, 11) * np.array([[1.0], [0.4], [0.0], [1.0], [2.0]])
    together = buyer_interval(q, p, firms, x, 1.5)
    for row, i in enumerate(firms):
        alone = buyer_interval(q, p, int(i), x[row], 1.5)
        for a, b in zip(together, alone, strict=True):
            np.testing.assert_array_equal(a[row], b)


def test_a_population_without_a_finite_mean_is_refused():
    with pytest.raises(ValueError, match="finite positive mean"):
        population_equilibrium([0.3, 0.8], "lognorm:1e300")
