r"""Consumer populations beyond uniform types: the distribution of the market's consumer types.

The market of Werner (2024), ch. 3, §3.2 draws the consumers' types
:math:`\theta \sim U[0, 1]`, and the thesis names uniform types as a limitation (Future
Directions). A :class:`Population` is any distribution :math:`F` of types on
:math:`[0, \bar\theta]` (:math:`\bar\theta \le \infty`): the uniform, a Beta, a log-normal or
a normal truncated to :math:`[0, \infty)`, any frozen continuous ``scipy.stats`` distribution
on :math:`[0, \infty)` with a density, or a finite sample of types (smoothed, where a density
is needed, by a Gaussian kernel reflected at 0, Silverman's bandwidth, on at most
:data:`KERNEL_BINS` bins). :func:`parse_population` reads the command line's specs
(``uniform``, ``beta:a,b``, ``lognorm:s[,scale]``, ``truncnorm:mu,sigma[,high]``). The n-firm
market under a population is :mod:`econ.population_market`.

References
----------
Werner (2024), *Collaborative Learning: Aligning Goals and Outcomes*, ch. 3, §3.2
(Definitions 2-3, Lemmas 21-23) and Future Directions (uniform types as a limitation).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import integrate, special, stats

from econ.validation import non_negative, positive, positive_int

__all__ = ["KERNEL_BINS", "TAIL_QUANTILE", "Population", "parse_population"]

Curve = Callable[[NDArray[np.float64]], NDArray[np.float64]]

#: The most bins a sample is smoothed on (:meth:`Population.smoothed`).
KERNEL_BINS = 1024
#: Where the certificate's search ends for an unbounded support: the type of this quantile.
TAIL_QUANTILE = 1.0 - 1e-12


def _array(t: ArrayLike) -> NDArray[np.float64]:
    return np.asarray(t, dtype=np.float64)


@dataclass(frozen=True, slots=True, eq=False)
class Population:
    r"""The distribution :math:`F` of consumer types on :math:`[0, \bar\theta]`.

    Build one with :meth:`uniform`, :meth:`beta`, :meth:`lognormal`,
    :meth:`truncated_normal`, :meth:`from_scipy` or :meth:`from_sample`, or from a spec
    string with :func:`parse_population`. ``cdf``, ``pdf`` and ``mean_below``
    (:math:`M(t) = \int_0^t \theta\,dF`) take arrays of types; ``top`` is
    :math:`\bar\theta` (``inf`` for an unbounded support); ``types`` holds the sorted
    sample of a finite population (its ``pdf`` is that of :meth:`smoothed`).

    References
    ----------
    Werner (2024), ch. 3, §3.2 (types :math:`\theta \sim U[0, 1]`) and Future Directions.
    """

    label: str
    top: float
    cdf: Curve = field(repr=False)
    pdf: Curve = field(repr=False)
    mean_below: Curve = field(repr=False)
    quantile: Curve = field(repr=False)
    draw: Callable[[int, np.random.Generator], NDArray[np.float64]] = field(repr=False)
    types: NDArray[np.float64] | None = field(default=None, repr=False)
    closed_form: bool = False

    @property
    def mean(self) -> float:
        """The mean type."""
        return float(self.mean_below(_array(self.top)))

    @property
    def search_top(self) -> float:
        """The highest type the certificate considers: ``top``, or the 1 - 1e-12 quantile."""
        if math.isfinite(self.top):
            return self.top
        return float(self.quantile(_array(TAIL_QUANTILE)))

    @property
    def tail_mean(self) -> float:
        r""":math:`\int_{\theta_s}^\infty \theta\,dF` beyond :attr:`search_top` :math:`\theta_s`.

        A firm of quality :math:`q` earns at most :math:`q` times this at any price above
        :math:`q \theta_s`: no buyer pays more than :math:`\theta q`.
        """
        return max(self.mean - float(self.mean_below(_array(self.search_top))), 0.0)

    def sample(self, n: int, seed: int | np.random.Generator | None = None) -> Population:
        """A finite population of ``n`` types drawn from this one."""
        n = positive_int("n", n)
        return Population.from_sample(self.draw(n, np.random.default_rng(seed)))

    @classmethod
    def uniform(cls) -> Population:
        r""":math:`U[0, 1]`, the thesis's types; its equilibrium is in closed form."""

        def cdf(t: ArrayLike) -> NDArray[np.float64]:
            return np.clip(_array(t), 0.0, 1.0)

        def pdf(t: ArrayLike) -> NDArray[np.float64]:
            t = _array(t)
            return ((t >= 0) & (t <= 1)).astype(np.float64)

        return cls(
            "uniform",
            1.0,
            cdf,
            pdf,
            lambda t: cdf(t) ** 2 / 2,
            cdf,
            lambda n, rng: rng.random(n),
            closed_form=True,
        )

    @classmethod
    def beta(cls, a: float, b: float) -> Population:
        r"""Beta(a, b) on [0, 1]; :math:`M(t) = \frac{a}{a+b} I_t(a+1, b)`."""
        a, b = (float(positive(name, v)) for name, v in (("a", a), ("b", b)))
        if not math.isfinite(a + b):  # the mean a / (a + b) would read 0
            raise ValueError(f"a + b must be a finite number, got {a:g} + {b:g}")
        log_norm = float(special.betaln(a, b))

        def cdf(t: ArrayLike) -> NDArray[np.float64]:
            return np.asarray(special.betainc(a, b, np.clip(_array(t), 0.0, 1.0)))

        def pdf(t: ArrayLike) -> NDArray[np.float64]:
            t = _array(t)
            inside = (t > 0) & (t < 1)
            s = np.where(inside, t, 0.5)
            value = np.exp(special.xlogy(a - 1, s) + special.xlog1py(b - 1, -s) - log_norm)
            return np.asarray(np.where(inside, value, 0.0))

        def mean_below(t: ArrayLike) -> NDArray[np.float64]:
            return np.asarray(a / (a + b) * special.betainc(a + 1, b, np.clip(_array(t), 0, 1)))

        return cls(
            f"beta:{a:g},{b:g}",
            1.0,
            cdf,
            pdf,
            mean_below,
            lambda u: np.asarray(special.betaincinv(a, b, _array(u))),
            lambda n, rng: rng.beta(a, b, n),
        )

    @classmethod
    def lognormal(cls, s: float, scale: float = 1.0) -> Population:
        r"""Log-normal: :math:`\ln\theta \sim N(\ln \mathrm{scale}, s^2)`, as ``scipy.stats.lognorm``.

        :math:`M(t) = \mathrm{scale}\, e^{s^2/2}\,\Phi\big((\ln(t/\mathrm{scale}) - s^2)/s\big)`.
        """
        s, scale = float(positive("s", s)), float(positive("scale", scale))

        def z(t: ArrayLike) -> NDArray[np.float64]:
            t = _array(t)
            with np.errstate(divide="ignore"):
                return np.log(np.where(t > 0, t, 0.0) / scale) / s

        def pdf(t: ArrayLike) -> NDArray[np.float64]:
            t = _array(t)
            # beyond |z| = 64 the density is 0 in floats (e^-2048); z^2 would overflow first
            zt = np.clip(np.where(t > 0, z(t), 0.0), -64.0, 64.0)
            density = np.exp(-(zt**2) / 2) / (s * np.sqrt(2 * np.pi) * np.where(t > 0, t, 1.0))
            return np.asarray(np.where((t > 0) & np.isfinite(t), density, 0.0))

        return cls(
            f"lognorm:{s:g},{scale:g}",
            math.inf,
            lambda t: np.asarray(special.ndtr(z(t))),
            pdf,
            lambda t: np.asarray(scale * math.exp(s * s / 2) * special.ndtr(z(t) - s)),
            lambda u: np.asarray(scale * np.exp(s * special.ndtri(_array(u)))),
            lambda n, rng: rng.lognormal(math.log(scale), s, n),
        )

    @classmethod
    def truncated_normal(cls, mu: float, sigma: float, high: float = math.inf) -> Population:
        r""":math:`N(\mu, \sigma^2)` conditioned on :math:`[0, \mathrm{high}]`.

        With :math:`z = (\theta - \mu)/\sigma`, :math:`Z = \Phi(z_{high}) - \Phi(z_0)`:
        :math:`M(t) = [\mu(\Phi(z_t) - \Phi(z_0)) - \sigma(\varphi(z_t) - \varphi(z_0))]/Z`.
        """
        mu, sigma = float(mu), float(positive("sigma", sigma))
        high = float(positive("high", high)) if math.isfinite(high) else math.inf
        if not math.isfinite(mu):
            raise ValueError(f"mu must be finite, got {mu!r}")
        z0, zh = -mu / sigma, (high - mu) / sigma
        # P(b) - P(a) = Phi(b) - Phi(a); for mu < 0 from the upper tail, where it is accurate
        flip = z0 > 0

        def big_phi(x: ArrayLike) -> NDArray[np.float64]:
            return np.asarray(-special.ndtr(-_array(x)) if flip else special.ndtr(_array(x)))

        mass = float(big_phi(zh) - big_phi(z0))
        if not mass > 1e-300:
            raise ValueError(
                f"N({mu:g}, {sigma:g}^2) puts no mass on [0, {high:g}] in floating point"
            )
        base = float(big_phi(z0))

        def z(t: ArrayLike) -> NDArray[np.float64]:
            return (np.clip(_array(t), 0.0, high) - mu) / sigma

        def phi(x: NDArray[np.float64]) -> NDArray[np.float64]:
            # beyond |x| = 64 the density is 0 in floats (e^-2048); x^2 would overflow first
            x = np.clip(x, -64.0, 64.0)
            return np.asarray(np.exp(-(x**2) / 2) / math.sqrt(2 * math.pi))

        def pdf(t: ArrayLike) -> NDArray[np.float64]:
            t = _array(t)
            inside = (t >= 0) & (t <= high) & np.isfinite(t)
            return np.asarray(np.where(inside, phi(z(t)) / (sigma * mass), 0.0))

        def mean_below(t: ArrayLike) -> NDArray[np.float64]:
            zt = z(t)
            return (mu * (big_phi(zt) - base) - sigma * (phi(zt) - phi(_array(z0)))) / mass

        def quantile(u: ArrayLike) -> NDArray[np.float64]:
            v = base + _array(u) * mass
            return np.asarray(mu + sigma * (-special.ndtri(-v) if flip else special.ndtri(v)))

        return cls(
            f"truncnorm:{mu:g},{sigma:g}" + (f",{high:g}" if math.isfinite(high) else ""),
            high,
            lambda t: np.asarray((big_phi(z(t)) - base) / mass),
            pdf,
            mean_below,
            quantile,
            lambda n, rng: np.clip(quantile(rng.random(n)), 0.0, high),
        )

    @classmethod
    def from_scipy(cls, dist: Any) -> Population:
        r"""Any frozen continuous ``scipy.stats`` distribution with support in :math:`[0, \infty)`.

        :math:`M(t)` is integrated numerically (``scipy.integrate.quad``).
        """
        if not isinstance(getattr(dist, "dist", None), stats.rv_continuous):
            raise ValueError(
                f"a population needs a frozen continuous scipy.stats distribution, got {dist!r}"
            )
        low, high = (float(v) for v in dist.support())
        if not (math.isfinite(low) and low >= 0):
            raise ValueError(
                f"types must be >= 0: the support of {dist.dist.name} is [{low}, {high}]"
            )

        def mean_below(t: ArrayLike) -> NDArray[np.float64]:
            t = _array(t)
            out = [
                integrate.quad(lambda x: x * dist.pdf(x), low, float(v), limit=200)[0]
                if v > low
                else 0.0
                for v in np.minimum(t, high).ravel()
            ]
            return np.asarray(out, dtype=np.float64).reshape(t.shape)

        def pdf(t: ArrayLike) -> NDArray[np.float64]:
            t = _array(t)
            return np.asarray(
                np.where(np.isfinite(t), dist.pdf(np.where(np.isfinite(t), t, 0)), 0.0)
            )

        args = ",".join(f"{v:g}" for v in (*dist.args, *dist.kwds.values()))
        return cls(
            f"{dist.dist.name}:{args}",
            high,
            lambda t: np.asarray(dist.cdf(_array(t))),
            pdf,
            mean_below,
            lambda u: np.asarray(dist.ppf(_array(u))),
            lambda n, rng: np.asarray(dist.rvs(size=n, random_state=rng), dtype=np.float64),
        )

    @classmethod
    def from_sample(cls, types: ArrayLike) -> Population:
        r"""The finite population of the given types (each of mass :math:`1/N`).

        :math:`F(t)` is the share of types :math:`\le t` and :math:`M(t)` their sum over
        :math:`N`; its ``pdf`` is that of :meth:`smoothed`, which only the first-order
        conditions use.
        """
        theta = np.sort(non_negative("types", types).reshape(-1))
        if theta.size == 0:
            raise ValueError("a sampled population needs at least one type, got []")
        n = theta.size
        prefix = np.concatenate(([0.0], np.cumsum(theta)))

        def cdf(t: ArrayLike) -> NDArray[np.float64]:
            return np.searchsorted(theta, _array(t), side="right") / n

        def mean_below(t: ArrayLike) -> NDArray[np.float64]:
            return np.asarray(prefix[np.searchsorted(theta, _array(t), side="right")] / n)

        smooth: list[Population] = []  # built on first use: only the prices need it

        def pdf(t: ArrayLike) -> NDArray[np.float64]:
            if not smooth:
                smooth.append(_kernel(theta))
            return smooth[0].pdf(_array(t))

        return cls(
            f"sample:{n}",
            float(theta[-1]),
            cdf,
            pdf,
            mean_below,
            lambda u: np.asarray(np.quantile(theta, _array(u))),
            lambda m, rng: rng.choice(theta, m),
            types=theta,
        )

    def smoothed(self) -> Population:
        r"""The population whose first-order conditions give a finite population's prices.

        A Gaussian kernel reflected at 0 (support :math:`[0, \infty)`), Silverman's
        bandwidth, on the sample binned into at most :data:`KERNEL_BINS` equal-width bins;
        a continuous population is its own smoothing.
        """
        return self if self.types is None else _kernel(self.types)


def _kernel(theta: NDArray[np.float64]) -> Population:
    """The reflected Gaussian kernel smoothing of sorted types (:meth:`Population.smoothed`)."""
    n = theta.size
    spread = min(float(np.std(theta)), float(np.subtract(*np.quantile(theta, [0.75, 0.25]))) / 1.34)
    h = 0.9 * (spread if spread > 0 else max(float(theta[-1]), 1.0) * 1e-3) * n ** (-0.2)
    bins = min(n, KERNEL_BINS)
    counts, edges = np.histogram(theta, bins=bins)
    keep = counts > 0
    c, w = ((edges[:-1] + edges[1:]) / 2)[keep], (counts / n)[keep]

    def cdf(t: ArrayLike) -> NDArray[np.float64]:
        t = np.clip(_array(t), 0.0, None)[..., None]
        both = special.ndtr((t - c) / h) + special.ndtr((t + c) / h) - 1.0
        return np.asarray(both @ w)

    def pdf(t: ArrayLike) -> NDArray[np.float64]:
        t = _array(t)
        s = np.where(np.isfinite(t), t, 0.0)[..., None]
        dens = (np.exp(-(((s - c) / h) ** 2) / 2) + np.exp(-(((s + c) / h) ** 2) / 2)) @ w
        return np.asarray(
            np.where((t >= 0) & np.isfinite(t), dens / (h * math.sqrt(2 * math.pi)), 0.0)
        )

    def mean_below(t: ArrayLike) -> NDArray[np.float64]:
        t = np.clip(_array(t), 0.0, None)[..., None]
        a, b = (t - c) / h, (t + c) / h
        g = np.exp(-(a**2) / 2) / math.sqrt(2 * math.pi)
        g2 = np.exp(-(b**2) / 2) / math.sqrt(2 * math.pi)
        g0 = np.exp(-((c / h) ** 2) / 2) / math.sqrt(2 * math.pi)
        own = c * (special.ndtr(a) - special.ndtr(-c / h)) - h * (g - g0)
        mirror = -c * (special.ndtr(b) - special.ndtr(c / h)) - h * (g2 - g0)
        return np.asarray((own + mirror) @ w)

    top = float(theta[-1]) + 12 * h
    return Population(
        f"kernel:{n},{h:.3g}",
        math.inf,
        cdf,
        pdf,
        mean_below,
        lambda u: np.asarray(np.quantile(np.append(theta, top), _array(u))),
        lambda m, rng: np.abs(rng.choice(theta, m) + h * rng.standard_normal(m)),
    )


_FAMILIES = {
    "uniform": (0, 0, "uniform"),
    "beta": (2, 2, "beta:a,b (a, b > 0)"),
    "lognorm": (1, 2, "lognorm:s[,scale] (s, scale > 0)"),
    "truncnorm": (
        2,
        3,
        "truncnorm:mu,sigma[,high] (sigma > 0; truncated to [0, high], high = inf)",
    ),
}


def parse_population(spec: str) -> Population:
    """The population a spec string names: ``uniform``, ``beta:2,5``, ``lognorm:s[,scale]``, ``truncnorm:mu,sigma[,high]``.

    Raises
    ------
    ValueError
        An unknown family, a wrong number of parameters, a parameter that is not a finite
        number, or one out of the family's range; the message lists the accepted forms.

    References
    ----------
    Werner (2024), ch. 3, Future Directions (types other than :math:`U[0, 1]`).

    Examples
    --------
    >>> parse_population("beta:2,5").mean
    0.2857142857142857
    >>> parse_population("gamma:2")
    Traceback (most recent call last):
    ...
    ValueError: unknown population 'gamma:2': give uniform, beta:a,b (a, b > 0), lognorm:s[,scale] (s, scale > 0), truncnorm:mu,sigma[,high] (sigma > 0; truncated to [0, high], high = inf)
    """
    forms = ", ".join(form for *_, form in _FAMILIES.values())
    name, _, rest = spec.strip().partition(":")
    if name not in _FAMILIES:
        raise ValueError(f"unknown population {spec!r}: give {forms}")
    least, most, form = _FAMILIES[name]
    parts = [s.strip() for s in rest.split(",")] if rest.strip() else []
    if not least <= len(parts) <= most:
        raise ValueError(f"population {spec!r}: {name} takes {form}, got {len(parts)} parameter(s)")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"population {spec!r}: {part!r} is not a number ({form})") from None
        if not math.isfinite(value):
            raise ValueError(f"population {spec!r}: {part!r} is not a finite number ({form})")
        values.append(value)
    try:
        if name == "uniform":
            return Population.uniform()
        if name == "beta":
            return Population.beta(*values)
        if name == "lognorm":
            return Population.lognormal(*values)
        return Population.truncated_normal(*values)
    except ValueError as exc:
        raise ValueError(f"population {spec!r}: {exc} ({form})") from None
