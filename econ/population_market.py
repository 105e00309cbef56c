r"""The n-firm Bertrand market when consumer types follow a :class:`econ.population.Population`.

The market of Werner (2024), ch. 3, §3.2 (and :mod:`econ.oligopoly` for n firms): a
consumer of type :math:`\theta` buys the model maximising :math:`\theta q_i - p_i`, or
nothing; firms set prices :math:`p_i \ge 0` simultaneously, without costs. The thesis draws
:math:`\theta \sim U[0, 1]` and names uniform types as a limitation (Future Directions);
here the types follow any :class:`econ.population.Population` :math:`F` on :math:`[0, \bar\theta]`
(:math:`\bar\theta \le \infty`): the uniform, a Beta, a log-normal or a normal truncated to
:math:`[0, \infty)`, any frozen continuous ``scipy.stats`` distribution on
:math:`[0, \infty)` with a density, or a finite sample of types. The statements derived here
are registered as ``market.population.*`` (kind ``derived``) in
:mod:`econ.population_propositions`.

**Demands.** With the selling firms sorted :math:`q_0 < q_1 < \dots < q_n` above the base
:math:`(q_0, p_0)` (the outside option :math:`(0, 0)`, or a tied group at price 0: ties and
zero qualities follow :mod:`econ.oligopoly`, whose arguments for them do not use the shape of
:math:`F`), firm :math:`i` sells to the types between
:math:`\theta_i = (p_i - p_{i-1})/(q_i - q_{i-1})` and :math:`\theta_{i+1}`
(:math:`\theta_{n+1} = \bar\theta`):

.. math::

    D_i = F(\theta_{i+1}) - F(\theta_i), \qquad
    CS = \sum_i \int_{\theta_i}^{\theta_{i+1}} (\theta q_i - p_i)\,dF(\theta)
       = \sum_i q_i \big(M(\theta_{i+1}) - M(\theta_i)\big) - p_i D_i,

with :math:`M(t) = \int_0^t \theta\,dF(\theta)`. At arbitrary prices
(:func:`population_demands`) the interval of each firm is that of
:func:`econ.oligopoly.buyer_interval`.

**Equilibrium.** For the uniform population the prices are the closed form of
:func:`econ.oligopoly.oligopoly_equilibrium` (Lemmas 21-23 for two firms). Otherwise the
first-order conditions of the firms above the base,

.. math::

    D_i - p_i \Big(\frac{f(\theta_i)}{q_i - q_{i-1}}
        + \frac{f(\theta_{i+1})}{q_{i+1} - q_i}\Big) = 0
    \quad (\text{no second term for the top firm}),

are solved numerically (``scipy.optimize.root`` on the residuals relative to
:math:`D_i + p_i |\partial D_i/\partial p_i|`, from the uniform prices of
:func:`econ.oligopoly.ladder` times the scale that best satisfies them). For a general :math:`F` a revenue
need not be concave in the firm's own price, so a root is only a candidate, and may not be
unique: the :class:`BestResponseCertificate` decides. It searches each firm's whole price
range, :math:`[0, \max_\theta(\theta q_i - u_{-i}(\theta))]` with :math:`u_{-i}` the best
other offer (no price above it sells), on a linear and a geometric grid, the others' prices
and just below and above them, and refines the best point by a bounded scalar search. Where
the candidate fails the certificate (where firms exit: unlike uniform types, types bounded
away from 0 can leave a firm of distinct quality no buyer at any price, and the first-order
conditions assume every firm sells), a best-response iteration from it (each firm moves to
its certified best price, or a share ``damping`` of the way) runs until it passes, trying
the root finder from each round's prices; a firm that can sell at no price then prices at 0
and is reported priced out. The equilibrium reported is the one reached so from the uniform
ladder; tied groups split their demand equally and priced-out firms price at 0, as in
:mod:`econ.oligopoly`. Where no round passes (types close to a point mass, or tails too
heavy for the search), the last round's prices are returned with a certificate that fails.

**Finite populations.** A sample of types is a market of its own: :math:`F` is its
empirical distribution, demand a step function (a consumer at a boundary type
:math:`\theta_i` buys the lower offer). Its first-order conditions have no derivative to
work with, so its prices are those of the *smoothed* population (a Gaussian kernel reflected
at 0, Silverman's bandwidth, on at most :data:`econ.population.KERNEL_BINS` bins of the sample), while
demands, revenues and surplus are the sample's own, and the certificate is *exact* on the
sample: a firm's revenue is :math:`x\,\#\{c: r_c > x\}/N` with :math:`r_c` consumer
:math:`c`'s reservation price for it, so its supremum over all prices is
:math:`\max_k r_{(k)} k / N` over the reservation prices sorted downwards (the limit from
below at a consumer's indifference). The largest gain is the :math:`\varepsilon` for which
the prices are an :math:`\varepsilon`-equilibrium of the finite market, which need not have a
pure equilibrium at all.

References
----------
Werner (2024), *Collaborative Learning: Aligning Goals and Outcomes*, ch. 3, §3.2
(Definitions 2-3, Lemmas 21-23) and Future Directions (uniform types as a limitation).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize

from econ.oligopoly import (
    OligopolyEquilibrium,
    buyer_interval,
    ladder,
    ladder_firms,
    oligopoly_equilibrium,
)
from econ.outputs import plain
from econ.population import Population, parse_population
from econ.validation import non_negative, positive_int, unit_interval

__all__ = [
    "BestResponseCertificate",
    "PopulationEquilibrium",
    "best_response_certificate",
    "population_demands",
    "population_equilibrium",
    "population_revenues",
]


def _firm_market(
    q: NDArray[np.float64],
    p: NDArray[np.float64],
    firms: NDArray[np.intp],
    x: NDArray[np.float64],
    pop: Population,
    surplus: bool = True,
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """The demands and (with ``surplus``) buyers' surplus of ``firms`` at their rows of prices ``x``."""
    low, high, weight = buyer_interval(q, p, firms, x, pop.top)
    sells = high > low
    ends = np.where(sells, np.array((high, low)), 0.0)
    at = pop.cdf(ends)
    mass = np.where(sells, at[0] - at[1], 0.0)
    demand = weight * np.clip(mass, 0.0, None)
    if not surplus:
        return demand, None
    below = pop.mean_below(ends)
    value = np.where(sells, q[firms][:, None] * (below[0] - below[1]), 0.0)
    return demand, weight * np.clip(value - x * mass, 0.0, None)


def population_demands(
    qualities: ArrayLike, prices: ArrayLike, population: Population
) -> NDArray[np.float64]:
    r"""Each firm's demand at arbitrary prices when types follow ``population``.

    The mass :math:`F(\mathrm{high}) - F(\mathrm{low})` of the types for which the firm is
    the best buy (:func:`econ.oligopoly.buyer_interval`), shared equally among firms of
    equal quality and price.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definition 2 and Lemma 21 (uniform types, two firms).

    Examples
    --------
    >>> population_demands([0.3, 0.8], [0.05, 0.2], Population.uniform()).round(4).tolist()
    [0.1333, 0.7]
    """
    q, p = _qualities_prices(qualities, prices)
    return _firm_market(q, p, np.arange(q.size), p[:, None], population, surplus=False)[0][:, 0]


def _qualities_prices(
    qualities: ArrayLike, prices: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    q = unit_interval("qualities", qualities).reshape(-1)
    p = non_negative("prices", prices).reshape(-1)
    if q.size == 0:
        raise ValueError("qualities must name at least one firm, got []")
    if p.size != q.size:
        raise ValueError(f"prices must have one entry per firm ({q.size}), got {p.size}")
    return q, p


@dataclass(frozen=True, slots=True)
class BestResponseCertificate:
    """Each firm's best price against the others' and what it gains over its own.

    ``gain`` is the best revenue found minus the revenue at the given price (>= 0);
    ``relative_gain`` divides it by the best revenue (0 where that is 0). ``holds`` when
    every relative gain is at most ``tolerance``. ``tail_bound`` bounds the revenue of any
    price beyond the search (0 for a bounded support or a sample); ``search`` says how the
    prices were searched.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definition 3 (no firm gains by changing its price alone).
    """

    best_price: NDArray[np.float64]
    best_revenue: NDArray[np.float64]
    gain: NDArray[np.float64]
    relative_gain: NDArray[np.float64]
    tolerance: float
    tail_bound: float
    search: str

    @property
    def max_gain(self) -> float:
        """The largest gain of any firm."""
        return float(self.gain.max())

    @property
    def holds(self) -> bool:
        """Whether no firm gains more than ``tolerance`` of its best revenue."""
        return bool(np.all(self.relative_gain <= self.tolerance))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: each firm's best price, best revenue and gains, and the verdict."""
        return plain(
            {
                "best_price": self.best_price,
                "best_revenue": self.best_revenue,
                "gain": self.gain,
                "relative_gain": self.relative_gain,
                "max_gain": self.max_gain,
                "tolerance": self.tolerance,
                "tail_bound": self.tail_bound,
                "holds": self.holds,
                "search": self.search,
            }
        )


def _price_ranges(
    q: NDArray[np.float64], p: NDArray[np.float64], top: float
) -> NDArray[np.float64]:
    r"""The highest price at which each firm can sell: :math:`\max_\theta \theta q_i - u_{-i}(\theta)`.

    The maximand is concave and piecewise linear in :math:`\theta`, so its maximum over
    :math:`[0, \mathrm{top}]` is at an end or a kink of :math:`u_{-i}`: a type
    :math:`p_j/q_j` or :math:`(p_j - p_k)/(q_j - q_k)` of firms :math:`j, k \ne i`. Each row
    holds every firm's kinks, with those of firm :math:`i` (and any that is not finite) moved
    to the end 0.
    """
    n = q.size
    with np.errstate(divide="ignore", invalid="ignore"):
        kinks = np.concatenate(
            (p / q, ((p[:, None] - p[None, :]) / (q[:, None] - q[None, :])).ravel())
        )
    firm = np.arange(n)
    j, k = np.concatenate((firm, np.repeat(firm, n))), np.concatenate((firm, np.tile(firm, n)))
    own = (j == firm[:, None]) | (k == firm[:, None])  # the kinks of firm i, in row i
    theta = np.where(own | ~np.isfinite(kinks), 0.0, kinks)
    theta = np.clip(
        np.concatenate((np.zeros((n, 1)), np.full((n, 1), top), theta), axis=1), 0.0, top
    )
    others = firm[:, None, None] != firm
    offers = np.where(others, theta[..., None] * q - p, 0.0)
    best_other = np.max(offers, axis=2, initial=0.0)
    return np.maximum(np.max(theta * q[:, None] - best_other, axis=1), 0.0)


def best_response_certificate(
    qualities: ArrayLike,
    prices: ArrayLike,
    population: Population,
    *,
    grid: int = 257,
    refine: bool = True,
    tolerance: float = 1e-6,
) -> BestResponseCertificate:
    r"""Each firm's best price against the others', searched over its whole price range.

    For a continuous population: ``grid`` prices spaced linearly and ``grid`` geometrically
    (down to 1e-9 of the top) over :math:`[0, \bar x_i]`, :math:`\bar x_i` the highest price
    at which firm :math:`i` sells with types up to :attr:`Population.search_top`; the
    others' prices and 1e-9 (relative) below and above each; then, with ``refine``, a
    bounded scalar search between the neighbours of the best point. For a finite
    population the supremum is exact (module notes) and ``grid`` and ``refine`` are unused.

    Parameters
    ----------
    qualities, prices
        One quality in [0, 1] and one price >= 0 per firm.
    population
        The consumer types.
    grid
        Points of each of the two grids (>= 2).
    refine
        Polish the best grid point by a bounded scalar search.
    tolerance
        The relative gain below which the prices count as mutual best responses.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definition 3.

    Examples
    --------
    >>> from econ.oligopoly import oligopoly_equilibrium
    >>> eq = oligopoly_equilibrium([0.3, 0.8])
    >>> best_response_certificate([0.3, 0.8], eq.price, Population.uniform()).holds
    True
    """
    q, p = _qualities_prices(qualities, prices)
    if isinstance(grid, bool) or not isinstance(grid, int) or grid < 2:
        raise ValueError(f"grid must be an integer >= 2, got {grid!r}")
    if population.types is not None:
        best_price, best = _exact_best(q, p, population.types)
        search = (
            f"exact on the {population.types.size} sampled types: the supremum of each revenue"
            " over all prices (a consumer's indifference counted for the deviating firm)"
        )
        tail = 0.0
    else:
        best_price, best = _searched_best(q, p, population, grid, refine)
        tail = float(q.max() * population.tail_mean)
        search = (
            f"{grid} linear and {grid} geometric prices over each firm's price range, the others'"
            " prices and 1e-9 around them"
            + (", a bounded scalar search at the best" if refine else "")
        )
    current = _revenue(q, p, np.arange(q.size), p[:, None], population)[:, 0]
    gain = np.maximum(best - current, 0.0)
    relative = np.divide(gain, best, out=np.zeros_like(gain), where=best > 0)
    return BestResponseCertificate(
        best_price, np.maximum(best, current), gain, relative, float(tolerance), tail, search
    )


def _revenue(
    q: NDArray[np.float64],
    p: NDArray[np.float64],
    firms: NDArray[np.intp],
    x: NDArray[np.float64],
    pop: Population,
) -> NDArray[np.float64]:
    """The revenues of ``firms`` at their rows of prices ``x``, the others at ``p``."""
    return x * _firm_market(q, p, firms, x, pop, surplus=False)[0]


def _searched_best(
    q: NDArray[np.float64], p: NDArray[np.float64], pop: Population, grid: int, refine: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each firm's best price and revenue by the grids and the bounded search.

    One row of prices per firm that can sell, sorted; a price that a row repeats has the
    revenue of its first copy, so the best is the first of the highest revenues, and the
    bounded search runs between its neighbours of other prices.
    """
    cap = _price_ranges(q, p, pop.search_top)
    firms = np.flatnonzero(cap > 0)
    best_price, best = np.zeros(q.size), np.zeros(q.size)
    if not firms.size:
        return best_price, best
    top = cap[firms][:, None]
    others = np.broadcast_to(p, (firms.size, p.size))
    tries = np.concatenate(
        (
            np.linspace(0.0, top, grid, axis=1)[..., 0],
            # from top * 1e-9, or from top where that underflows (a subnormal range)
            np.geomspace(np.where(top * 1e-9 > 0, top * 1e-9, top), top, grid, axis=1)[..., 0],
            others,
            others * (1 - 1e-9),
            others * (1 + 1e-9),
        ),
        axis=1,
    )
    tries = np.sort(np.clip(tries, 0.0, top), axis=1)
    revenue = _revenue(q, p, firms, tries, pop)
    rows = np.arange(firms.size)
    k = np.argmax(revenue, axis=1)
    x, r = tries[rows, k], revenue[rows, k]
    if refine:
        lo = tries[rows, np.maximum(k - 1, 0)]
        hi = tries[rows, np.minimum(np.sum(tries <= x[:, None], axis=1), tries.shape[1] - 1)]
        search = np.flatnonzero(hi > lo)
        if search.size:
            searched = firms[search]

            def loss(which: NDArray[np.intp], v: NDArray[np.float64]) -> NDArray[np.float64]:
                return -_revenue(q, p, searched[which], v[:, None], pop)[:, 0]

            at, value = _bounded_minimum(loss, lo[search], hi[search], 1e-12 * top[search, 0])
            better = -value > r[search]
            x[search[better]], r[search[better]] = at[better], -value[better]
    best_price[firms], best[firms] = x, r
    return best_price, best


#: The golden section of the bounded search, and the square root of the machine epsilon
#: its tolerance uses (as ``scipy.optimize.minimize_scalar(method="bounded")``).
_GOLDEN, _SQRT_EPS = 0.5 * (3.0 - math.sqrt(5.0)), math.sqrt(2.2e-16)


def _brent(
    lo: float, hi: float, xatol: float, max_calls: int = 500
) -> Generator[float, float, tuple[float, float]]:
    r"""Brent's bounded minimisation of one function, as the points it evaluates.

    Send back the function's value at each point yielded; the generator returns the
    minimum's point and value, those of ``scipy.optimize.minimize_scalar(method="bounded")``
    on :math:`[\mathrm{lo}, \mathrm{hi}]` with absolute tolerance ``xatol``: a step to the
    vertex of the parabola through the best three points where it falls well inside the
    interval, a golden-section step where it does not.

    References
    ----------
    Brent (1973), *Algorithms for Minimization without Derivatives*, ch. 5 (``fmin``).
    """
    a, b = lo, hi
    fulc = nfc = xf = a + _GOLDEN * (b - a)
    rat = e = 0.0
    fx = yield xf
    ffulc = fnfc = fx
    calls = 1
    xm = 0.5 * (a + b)
    tol1 = _SQRT_EPS * abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    while abs(xf - xm) > tol2 - 0.5 * (b - a) and calls < max_calls:
        golden = True
        if abs(e) > tol1:
            r = (xf - nfc) * (fx - ffulc)
            s = (xf - fulc) * (fx - fnfc)
            num = (xf - fulc) * s - (xf - nfc) * r
            den = 2.0 * (s - r)
            num, den = (-num if den > 0.0 else num), abs(den)
            last, e = e, rat
            if abs(num) < abs(0.5 * den * last) and den * (a - xf) < num < den * (b - xf):
                golden = False
                rat = num / den
                if xf + rat - a < tol2 or b - (xf + rat) < tol2:
                    rat = -tol1 if xm - xf < 0 else tol1
        if golden:
            e = a - xf if xf >= xm else b - xf
            rat = _GOLDEN * e
        x = xf - max(abs(rat), tol1) if rat < 0 else xf + max(abs(rat), tol1)
        fu = yield x
        calls += 1
        if fu <= fx:
            a, b = (xf, b) if x >= xf else (a, xf)
            fulc, ffulc, nfc, fnfc, xf, fx = nfc, fnfc, xf, fx, x, fu
        else:
            a, b = (x, b) if x < xf else (a, x)
            if fu <= fnfc or nfc == xf:
                fulc, ffulc, nfc, fnfc = nfc, fnfc, x, fu
            elif fu <= ffulc or fulc == xf or fulc == nfc:
                fulc, ffulc = x, fu
        xm = 0.5 * (a + b)
        tol1 = _SQRT_EPS * abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
    return xf, fx


def _bounded_minimum(
    loss: Callable[[NDArray[np.intp], NDArray[np.float64]], NDArray[np.float64]],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    xatol: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r""":func:`_brent` on many functions in lockstep, one call of ``loss`` a step for them all.

    Function ``j`` on :math:`[\mathrm{lo}_j, \mathrm{hi}_j]` to absolute tolerance
    ``xatol[j]``; ``loss(which, v)`` evaluates the functions ``which`` at ``v``, one point
    each. Returns each minimum's point and value.
    """
    searches = [
        _brent(*bounds) for bounds in zip(lo.tolist(), hi.tolist(), xatol.tolist(), strict=True)
    ]
    at, value = np.empty(lo.size), np.empty(lo.size)
    live, points = list(range(lo.size)), [next(search) for search in searches]
    while live:
        values = loss(np.array(live), np.array(points)).tolist()
        still, points = [], []
        for j, v in zip(live, values, strict=True):
            try:
                points.append(searches[j].send(v))
                still.append(j)
            except StopIteration as stop:
                at[j], value[j] = stop.value
        live = still
    return at, value


def _exact_best(
    q: NDArray[np.float64], p: NDArray[np.float64], theta: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each firm's supremum revenue on the sampled types, and a price that reaches it."""
    n = theta.size
    best_price, best = np.zeros(q.size), np.zeros(q.size)
    for i in range(q.size):
        if q[i] == 0:
            continue
        outside = np.zeros(n)
        for j in range(q.size):
            if j != i:
                np.maximum(outside, theta * q[j] - p[j], out=outside)
        reservation = np.sort(theta * q[i] - outside)[::-1]
        revenue = reservation * np.arange(1, n + 1) / n
        k = int(np.argmax(revenue))
        if revenue[k] > 0:
            best_price[i], best[i] = reservation[k], revenue[k]
    return best_price, best


@dataclass(frozen=True, slots=True)
class PopulationEquilibrium(OligopolyEquilibrium):
    """Prices, demands and revenues of each firm under a population, with their certificate.

    The fields of :class:`econ.oligopoly.OligopolyEquilibrium`, and ``population`` (its
    label), ``method`` (how the prices were found: the closed form, the first-order
    conditions, or a best-response iteration) and ``certificate`` (whether they are mutual
    best responses).

    References
    ----------
    Werner (2024), ch. 3, §3.2 (pp. 59-61), Definitions 2-3 and Lemmas 21-23.
    """

    population: str
    method: str
    certificate: BestResponseCertificate

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the population, one list entry per firm, the totals, the certificate."""
        return plain(
            {
                "population": self.population,
                **OligopolyEquilibrium.to_dict(self),
                "method": self.method,
                "certificate": self.certificate.to_dict(),
            }
        )


def _conditions(
    p: NDArray[np.float64], gaps: NDArray[np.float64], pop: Population
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    r"""The first-order conditions of the firms above the base (module notes), for each row.

    Returns the residual :math:`D_i - p_i s_i`, the demands :math:`D_i` and the terms
    :math:`p_i s_i` (:math:`s_i = -\partial D_i / \partial p_i`).
    """
    zero = np.zeros((*p.shape[:-1], 1))
    theta = (p - np.concatenate((zero, p[..., :-1]), axis=-1)) / gaps
    bounds = np.concatenate((theta, zero + pop.top), axis=-1)
    mass = pop.cdf(bounds)
    # the top firm's upper bound does not move with its price: no density at the top
    rate = pop.pdf(bounds)[..., :-1] / gaps
    slope = p * (rate + np.concatenate((rate[..., 1:], zero), axis=-1))
    demand = mass[..., 1:] - mass[..., :-1]
    return demand - slope, demand, slope


def _relative(
    p: NDArray[np.float64], gaps: NDArray[np.float64], pop: Population
) -> NDArray[np.float64]:
    """The residuals of :func:`_conditions` over :math:`D_i + p_i s_i` (1 where both are 0).

    Relative residuals weigh the lowest firms, whose demands are tiny, like the others,
    and have no spurious roots where demands and densities both vanish.
    """
    residual, demand, slope = _conditions(p, gaps, pop)
    scale = demand + slope
    return np.where(scale > 0, residual / np.where(scale > 0, scale, 1.0), 1.0)


#: The largest mean type priced: the market multiplies types by prices of their order and
#: integrates them against the density, so squares of types must stay finite (below 1.3e154).
_MEAN_TYPE_LIMIT = 1e150
#: Scales of the uniform ladder tried for the root finder's start, times the mean type.
_START_SCALES = np.geomspace(1e-3, 1e3, 73)


def _start(gaps: NDArray[np.float64], pop: Population) -> NDArray[np.float64]:
    """The uniform ladder, scaled to best satisfy the first-order conditions.

    Among the scales at which every firm sells, the one with the smallest residual relative
    to :math:`D_i + p_i s_i`; far out, where demands and densities both vanish, the
    conditions hold trivially and the relative residual does not.
    """
    uniform = ladder(gaps)[0]
    tries = (_START_SCALES * 2 * pop.mean)[:, None] * uniform
    relative = np.max(np.abs(_relative(tries, gaps, pop)), axis=1)
    return np.asarray(tries[int(np.argmin(relative))], dtype=np.float64)


def _solve(
    gaps: NDArray[np.float64], pop: Population, start: NDArray[np.float64]
) -> NDArray[np.float64] | None:
    """A root of :func:`_conditions` with non-negative prices, or ``None``."""
    # in units of the start, each price to relative precision (the lowest of many firms
    # charge many orders of magnitude less than the top one)
    res = optimize.root(lambda v: _relative(v * start, gaps, pop), np.ones_like(start))
    x = res.x * start
    if not res.success or np.any(x < 0) or not np.all(np.isfinite(x)):
        return None
    return np.asarray(x, dtype=np.float64)


def population_equilibrium(
    qualities: ArrayLike,
    population: Population | str = "uniform",
    *,
    tolerance: float = 1e-6,
    max_rounds: int = 200,
    damping: float = 1.0,
    grid: int = 257,
    refine: bool = True,
) -> PopulationEquilibrium:
    r"""Bertrand equilibrium of n >= 1 firms when consumer types follow ``population``.

    Parameters
    ----------
    qualities
        One quality in [0, 1] per firm, in any order; ties and zeros allowed.
    population
        A :class:`Population`, or a spec string of :func:`parse_population`.
    tolerance
        The certificate's relative gain below which prices are accepted.
    max_rounds
        Rounds of the best-response iteration where the first-order candidate fails.
    damping
        The share of the way to its best price that each firm moves in a round, in (0, 1].
    grid, refine
        The search of the certificate reported and of the first-order candidate's acceptance
        (:func:`best_response_certificate`); the best-response iteration always searches
        with the defaults.

    Returns
    -------
    PopulationEquilibrium
        Prices, demands and revenues (all >= 0) in the order given, the priced-out firms,
        consumer surplus, the method, and the :class:`BestResponseCertificate`.

    Notes
    -----
    See the module notes: the closed form of :mod:`econ.oligopoly` for the uniform
    population; otherwise the first-order conditions from the uniform ladder, checked by the
    certificate, and a best-response iteration where it fails. A finite population
    is priced by its smoothing and certified exactly, without iteration: its certificate's
    largest gain is the :math:`\varepsilon` of an :math:`\varepsilon`-equilibrium of the
    finite market. If no round of the iteration passes, the prices of the last round are
    returned with the certificate that says so.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definitions 2-3 and Lemmas 21-23 (uniform types).

    Examples
    --------
    >>> eq = population_equilibrium([0.2, 0.5, 0.9], "beta:2,5")
    >>> eq.price.round(4).tolist(), eq.certificate.holds
    ([0.0054, 0.0257, 0.1062], True)
    """
    pop = parse_population(population) if isinstance(population, str) else population
    q = unit_interval("qualities", qualities).reshape(-1)
    if q.size == 0:
        raise ValueError("qualities must name at least one firm, got []")
    rounds = positive_int("max_rounds", max_rounds)
    if not 0 < pop.mean < math.inf:
        raise ValueError(
            f"the population {pop.label} needs a finite positive mean type, got {pop.mean}"
        )
    if pop.mean > _MEAN_TYPE_LIMIT:
        raise ValueError(
            f"the population {pop.label} has mean type {pop.mean:.3g}, above "
            f"{_MEAN_TYPE_LIMIT:g}: its prices, revenues and surplus overflow floats"
        )
    base, order = ladder_firms(q)
    price = np.zeros(q.size)
    if pop.closed_form:
        exact = oligopoly_equilibrium(q)
        method = "closed form (econ.oligopoly; Lemmas 21-23 for two firms)"
        certificate = best_response_certificate(
            q, exact.price, pop, tolerance=tolerance, grid=grid, refine=refine
        )
        return PopulationEquilibrium(
            q,
            exact.price,
            exact.demand,
            exact.revenue,
            exact.priced_out,
            exact.consumer_surplus,
            pop.label,
            method,
            certificate,
        )
    method = "first-order conditions from the uniform ladder"
    if pop.types is not None:
        method = "first-order conditions of the smoothed sample, certified on the sample"
    if order.size:
        gaps = np.diff(q[order], prepend=base)
        smooth = pop.smoothed()
        start = _start(gaps, smooth)
        solved = _solve(gaps, smooth, start)
        price[order] = start if solved is None else solved
    certificate = best_response_certificate(
        q, price, pop, tolerance=tolerance, grid=grid, refine=refine
    )
    if order.size and pop.types is None and not certificate.holds:
        method = "best-response iteration from the first-order candidate"
        search = best_response_certificate(q, price, pop, tolerance=tolerance)  # the full search
        for _ in range(rounds):
            price[order] += damping * (search.best_price[order] - price[order])
            near = search.relative_gain.max() < 1e-3 and np.all(price[order] > 0)
            polished = _solve(gaps, pop, price[order]) if near else None
            if polished is not None:  # the root finder from the nearer start
                trial = price.copy()
                trial[order] = polished
                again = best_response_certificate(q, trial, pop, tolerance=tolerance)
                if again.holds:
                    price, search = trial, again
                    break
            search = best_response_certificate(q, price, pop, tolerance=tolerance)
            if search.holds:
                break
        certificate = best_response_certificate(
            q, price, pop, tolerance=tolerance, grid=grid, refine=refine
        )
    d, s = _firm_market(q, price, np.arange(q.size), price[:, None], pop)
    demand, surplus = d[:, 0], np.zeros(q.size) if s is None else s[:, 0]
    return PopulationEquilibrium(
        q,
        price,
        demand,
        price * demand,
        (q == 0) | (q < base) | ((demand == 0) & (certificate.best_revenue == 0)),
        float(surplus.sum()),
        pop.label,
        method,
        certificate,
    )


def population_revenues(
    qualities: ArrayLike, population: Population | str = "uniform"
) -> NDArray[np.float64]:
    """Each firm's equilibrium revenue under ``population``, row by row: a market of qualities.

    ``(n,)`` qualities give ``(n,)`` revenues and ``(m, n)`` give ``(m, n)``, each row one
    market: the closed form of :mod:`econ.oligopoly` for the uniform population, otherwise
    :func:`population_equilibrium` with a coarse certificate (17 prices per firm, no
    refinement), so that the market can be evaluated many times, as the n-firm bargain
    :func:`econ.quality_bargaining.quality_bargaining` does with
    ``revenues=functools.partial(population_revenues, population=...)``.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definitions 2-3 and Lemma 22 (two firms, uniform types).

    Examples
    --------
    >>> population_revenues([0.3, 0.8], "beta:2,5").round(5).tolist()
    [0.0071, 0.08235]
    """
    pop = parse_population(population) if isinstance(population, str) else population
    q = np.asarray(qualities, dtype=np.float64)

    def one(row: NDArray[np.float64]) -> NDArray[np.float64]:
        if pop.closed_form:
            return oligopoly_equilibrium(row).revenue
        return population_equilibrium(row, pop, grid=17, refine=False).revenue

    if q.ndim <= 1:
        return one(q.reshape(-1))
    return np.array([one(row) for row in q.reshape(-1, q.shape[-1])]).reshape(q.shape)
