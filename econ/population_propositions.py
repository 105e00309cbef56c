"""The registered statements about the n-firm market under general consumer populations.

Three results derived for the market of Werner (2024), ch. 3, §3.2 with types drawn from any
population instead of :math:`U[0, 1]` (ids ``market.population.*``, kind ``derived``;
:mod:`econ.population`): with uniform types the first-order route gives back the closed form
of :mod:`econ.oligopoly` (Lemmas 21-23 for two firms); a sample of a million consumers
reproduces the population's demands and revenues to sampling error; and the equilibrium
prices pass the best-response certificate on random markets and populations.
"""

from __future__ import annotations

import math

import numpy as np

from econ import duopoly
from econ.oligopoly import oligopoly_equilibrium
from econ.oligopoly_propositions import market_cases
from econ.population import Population, parse_population
from econ.population_market import (
    best_response_certificate,
    population_demands,
    population_equilibrium,
)
from econ.propositions import Kind, Verdict, checked, proposition, refuted


@proposition(
    "market.population.uniform",
    source="Werner (2024), ch. 3, §3.2, Lemmas 21-23 and econ.oligopoly, with the types as a population",
    statement="for types U[0, 1] (Beta(1, 1), solved by the first-order conditions, not the closed "
    "form) population_equilibrium's prices, demands, revenues and consumer surplus equal "
    "oligopoly_equilibrium's for any qualities in [0, 1], ties and zeros included, and Lemma 22's "
    "for two distinct positive qualities",
    kind=Kind.DERIVED,
    perturb={"population": "beta:1,1.1"},
)
def _uniform(*, population: str = "beta:1,1") -> Verdict:
    pop = parse_population(population)
    markets = market_cases(2, 40)
    worst = 0.0
    for q in markets:
        got = population_equilibrium(q, pop, grid=17, refine=False)
        exact = oligopoly_equilibrium(q)
        gaps = [
            np.abs(got.price - exact.price).max(),
            np.abs(got.demand - exact.demand).max(),
            np.abs(got.revenue - exact.revenue).max(),
            abs(got.consumer_surplus - exact.consumer_surplus),
        ]
        if q.size == 2 and q.min() > 0 and q[0] != q[1]:
            lemma = duopoly.equilibrium(float(q.min()), float(q.max()))
            high = int(np.argmax(q))
            gaps += [abs(got.revenue[high] - lemma.U_h), abs(got.revenue[1 - high] - lemma.U_l)]
        worst = max(worst, *map(float, gaps))
        if worst > 1e-9 or not np.array_equal(got.priced_out, exact.priced_out):
            return refuted(
                f"the population's equilibrium differs from the closed form by {worst:.3g}",
                {"qualities": q.tolist(), "population": population, "prices": got.price.tolist()},
            )
    return checked(
        f"every price, demand, revenue and the surplus agree to {worst:.2g} (tolerance 1e-9),"
        " and so do the priced-out firms",
        len(markets),
        drawn="the 7 edge markets of market.bertrand.equilibrium (monopoly, a tied pair, a zero,"
        " ties below the top, a near-tie 1e-12 apart, zeros with a tie) and 33 seeded random"
        " markets of 2-8 firms, 40% with a tie and 20% with a zero, rounded to 2-5 decimals",
    )


#: The markets of market.population.sampled: qualities and population.
_SAMPLED = (([0.2, 0.5, 0.9], "beta:2,5"), ([0.3, 0.6, 0.6, 0.8], "lognorm:0.5,0.4"))


@proposition(
    "market.population.sampled",
    source="Werner (2024), ch. 3, §3.2, Definition 2 (demand as a mass of consumers), econ.population",
    statement="at the equilibrium prices of a population, N = 10^6 consumers drawn from it buy"
    " shares within k = 4 standard errors sqrt(D_i (1 - D_i)/N) of the demands D_i, and earn"
    " revenues within k p_i standard errors of the revenues",
    kind=Kind.DERIVED,
    perturb={"k": 0.05},
)
def _sampled(*, n: int = 10**6, k: float = 4.0) -> Verdict:
    worst = 0.0
    for seed, (q, spec) in enumerate(_SAMPLED):
        pop = parse_population(spec)
        eq = population_equilibrium(q, pop)
        sample = pop.sample(n, seed)
        share = population_demands(q, eq.price, sample)
        se = np.sqrt(eq.demand * (1 - eq.demand) / n)
        errors = [np.abs(share - eq.demand), np.abs(eq.price * share - eq.revenue)]
        bounds = [k * se, k * eq.price * se]
        for error, bound in zip(errors, bounds, strict=True):
            worst = max(worst, float(np.max(error / np.where(se > 0, se, 1.0))))
            if np.any(error > bound + 1e-12):
                return refuted(
                    f"a sampled share or revenue is more than {k:g} standard errors off",
                    {
                        "qualities": q,
                        "population": spec,
                        "demand": eq.demand.tolist(),
                        "sampled": share.tolist(),
                    },
                )
    return checked(
        f"the largest error is {worst:.2f} standard errors (bound {k:g})",
        sum(len(q) for q, _ in _SAMPLED),
        drawn="the firms of two markets: 0.2, 0.5, 0.9 under Beta(2, 5), and 0.3, 0.6, 0.6, 0.8"
        " (a tie and a priced-out firm) under a log-normal (s = 0.5, scale 0.4); 10^6 types"
        " drawn from each population, seeds 0 and 1",
    )


def _random_population(rng: np.random.Generator) -> Population:
    """A Beta, log-normal or truncated normal with seeded random parameters."""
    family = int(rng.integers(3))
    if family == 0:
        return Population.beta(*np.round(rng.uniform(0.5, 5.0, 2), 2))
    if family == 1:
        return Population.lognormal(round(rng.uniform(0.2, 1.5), 2), round(rng.uniform(0.2, 2), 2))
    high = math.inf if rng.random() < 0.5 else 1.0
    mu, sigma = round(rng.uniform(-0.5, 1.5), 2), round(rng.uniform(0.05, 1.0), 2)
    return Population.truncated_normal(mu, sigma, high)


@proposition(
    "market.population.certificate",
    source="Werner (2024), ch. 3, §3.2, Definitions 2-3, with types from any population (econ.population)",
    statement="for Beta, log-normal and truncated normal types and any qualities in [0, 1],"
    " population_equilibrium's prices are mutual best responses (no firm gains more than 1e-6 of"
    " its best revenue by any price, by its best-response certificate), with prices, demands and"
    " revenues >= 0 and demands summing to at most 1; the equilibrium is the one the first-order"
    " conditions reach from the uniform ladder, tied groups split their demand at price 0 and"
    " priced-out firms price at 0",
    kind=Kind.DERIVED,
    perturb={"price_factor": 1.05},
)
def _certificate(*, price_factor: float = 1.0, markets: int = 1000, grid: int = 17) -> Verdict:
    rng = np.random.default_rng(3)
    qualities = market_cases(4, markets)
    worst = 0.0
    for q in qualities:
        pop = _random_population(rng)
        eq = population_equilibrium(q, pop, grid=grid, refine=False)
        price = eq.price * price_factor
        cert = (  # the equilibrium's own certificate is this search at its prices
            eq.certificate
            if price_factor == 1
            else best_response_certificate(q, price, pop, grid=grid, refine=False)
        )
        worst = max(worst, float(cert.relative_gain.max()))
        values = (eq.price, eq.demand, eq.revenue)
        if not cert.holds or min(v.min() for v in values) < 0 or eq.demand.sum() > 1 + 1e-12:
            return refuted(
                f"a firm gains {cert.relative_gain.max():.3g} of its best revenue by deviating,"
                " or a price, demand or revenue is negative, or demands exceed the market",
                {"qualities": q.tolist(), "population": pop.label, "prices": price.tolist()},
            )
    return checked(
        f"no firm gains more than {worst:.2g} of its best revenue by any price of its"
        f" certificate ({grid} linear and {grid} geometric prices over its price range, the"
        " others' prices and 1e-9 around them)",
        len(qualities),
        drawn=f"the 7 edge markets of market.bertrand.equilibrium and {markets - 7} seeded random"
        " markets of 2-8 firms (40% with a tie, 20% with a zero), each under a seeded random"
        " population: Beta(a, b), a, b in [0.5, 5]; log-normal, s in [0.2, 1.5], scale in"
        " [0.2, 2]; or N(mu, sigma^2), mu in [-0.5, 1.5], sigma in [0.05, 1], truncated to"
        " [0, inf) or [0, 1]",
    )
