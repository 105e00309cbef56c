r"""The registered statements about the alternative utility of :mod:`econ.privacy.leakage_utility`.

Appendix C of Tsoy et al. (2024), where the utility is
:math:`u_i = -\mathrm{leak}_i - \lambda_i\mathrm{err}_i^2`: the symmetric participation
condition of C.1 (derived here) and its limits in N and n, the error of C.1's simplified
aggregation (Monte Carlo), Lemma C.1 (exact second moments of SGD on quadratics) and Lemma C.2
(Chung's recursion, run in extended precision).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp

from econ.privacy import symbolic as S
from econ.privacy._checks import all_hold, identity, mc_verdict, mc_within
from econ.privacy.leakage_utility import Array
from econ.propositions import Verdict, checked, on_points, proposition, proved, refuted


@proposition(
    "tsoy.appC.1",
    source=(
        "Tsoy et al. (2024), Appendix C.1: the participation condition with alpha_i = alpha "
        "for every client"
    ),
    statement=(
        "symmetric protocols: lambda (N-1)/N (a - s/N) sqrt(s), a = sigma^2/n, s = alpha^2, is "
        "largest at s* = aN/3, so a symmetric solution exists iff lambda (N-1)/N (2a/3) "
        "sqrt(aN/3) >= kappa"
    ),
    kind="derived",
    perturb={"s_star": lambda a, n: a * n / 2},
)
def _appc1(
    s_star: Callable[[sp.Expr, sp.Expr], sp.Expr] = lambda a, n: a * n / 3,
) -> Verdict:
    """D benefit/ds = lambda (N-1)/N (aN - 3s)/(2N sqrt s): one sign change, at s* = aN/3."""
    lam, n, a, s = S.lam, S.n_clients, S.a_var, S.s_var
    benefit = S.APPC_SYM_BENEFIT
    star = s_star(a, n)
    return all_hold(
        [
            identity(
                sp.diff(benefit, s) - lam * (n - 1) / n * (a * n - 3 * s) / (2 * n * sp.sqrt(s)),
                "d benefit/ds - lambda (N-1)/N (aN - 3s)/(2N sqrt s)",
            ),
            identity(sp.diff(benefit, s).subs(s, star), "d benefit/ds at s*"),
            lambda: identity(
                benefit.subs(s, star) - lam * (n - 1) / n * 2 * a / 3 * sp.sqrt(a * n / 3),
                "benefit at s* - lambda (N-1)/N (2a/3) sqrt(aN/3)",
            ),
        ],
        "the benefit rises below s* and falls above, so s* is its maximum over s > 0",
    )


@proposition(
    "tsoy.appC.1.limits",
    source="Tsoy et al. (2024), Appendix C.1, last paragraph",
    statement=(
        "with every lambda_i in a compact [c, C], c > 0: a mutually beneficial assignment of "
        "alpha exists for N large enough; for n -> infinity at fixed N none exists"
    ),
    perturb={"lam_low": 0},
)
def _appc1_limits(lam_low: float = 0.1) -> Verdict:
    """Limits of the symmetric threshold in N and of an upper bound on every client's benefit in n."""
    n_big, n, sigma, bound, big_c = sp.symbols("N n sigma B C", positive=True)
    kappa = sp.sqrt(2 * sp.log(sp.Rational(5, 4) * n**2)) * bound / n
    a = sigma**2 / n
    threshold = kappa / ((n_big - 1) / n_big * 2 * a / 3 * sp.sqrt(a * n_big / 3))
    in_n = sp.limit(threshold, n_big, sp.oo)
    # a solution needs S_{-i} < N(N-1)a for every i, so alpha_j^2 < N(N-1)a for all j (N >= 2):
    # each client's benefit is at most C (N-1)/N a sqrt(N(N-1)a)
    ceiling = big_c * (n_big - 1) / n_big * a * sp.sqrt(n_big * (n_big - 1) * a)
    in_small_n = sp.limit(
        (ceiling / kappa).subs(n_big, 2 + sp.Symbol("m", positive=True)), n, sp.oo
    )
    if in_n != 0:
        return refuted(f"the symmetric threshold tends to {in_n} as N grows", {"limit": str(in_n)})
    if in_small_n != 0:
        return refuted(
            f"benefit/kappa tends to {in_small_n} as n grows", {"limit": str(in_small_n)}
        )
    # "N large enough" for every lambda_i >= c: the first N (doubling) at which the threshold
    # falls below c, in the paper's section-6 setting n = 100, sigma = 10, B = 20
    setting = {n: 100, sigma: 10, bound: 20}
    at = sp.lambdify(n_big, threshold.subs(setting))
    first = next((2**k for k in range(1, 64) if at(2**k) < lam_low), None)
    if first is None:
        positive = bool(threshold.is_positive)
        return refuted(
            f"the symmetric threshold stays above c = {lam_low} at every N = 2..2^63 (n = 100, "
            f"sigma = 10, B = 20){'; it is positive for all N' if positive else ''}: a client with "
            f"lambda_i = c never gains",
            {"c": lam_low, "n": 100, "sigma": 10, "B": 20},
        )
    return proved(
        f"the symmetric threshold kappa/((N-1)/N (2a/3) sqrt(aN/3)) -> {in_n} as N -> infinity "
        f"(below c = {lam_low} from N = {first} at n = 100, sigma = 10, B = 20); (ceiling on "
        f"any client's benefit)/kappa -> {in_small_n} as n -> infinity at fixed N"
    )


def _chung_points() -> list[dict[str, float]]:
    rng = np.random.default_rng(12)
    points = []
    for c in (2, 3, 4):
        for c1 in (0.1, 1.0, 10.0):
            for start in (-5.0, 0.0, 5.0, 100.0):
                for n0 in (1, c + 1, 50):
                    slack = float(rng.choice([0.0, 0.5]))
                    points.append({"c": c, "c1": c1, "start": start, "n0": n0, "slack": slack})
    return points


@proposition(
    "tsoy.lemmaC.2",
    source="Tsoy et al. (2024), Lemma C.2 in Appendix C.2.1 (modified from Chung 1954)",
    statement=(
        "if b_{n+1} <= (1 - c/n) b_n + c1/n^2 for all n >= n0, with integer c > 1 and c1 > 0, "
        "then b_n <= c1/((c-1) n) + O(n^-c)"
    ),
    perturb={"const": lambda c1, c: c1 / c},
)
def _lemma_c2(
    const: Callable[[float, int], float] = lambda c1, c: c1 / (c - 1),
) -> Verdict:
    """Sequences meeting the recursion with equality or with slack, run to n = 4000."""
    points = _chung_points()
    last = 4000
    lanes = len(points)
    c = np.array([p["c"] for p in points], dtype=np.longdouble)
    c1 = np.array([p["c1"] for p in points], dtype=np.longdouble)
    n0 = np.array([p["n0"] for p in points])
    slack = np.array([p["slack"] for p in points], dtype=np.longdouble)
    b = np.array([p["start"] for p in points], dtype=np.longdouble)
    bound = np.array([const(float(p["c1"]), int(p["c"])) for p in points], dtype=np.longdouble)
    scaled = np.zeros((lanes, 2), dtype=np.longdouble)  # n^c (b_n - bound/n) at n = 1000 and 4000
    for k in range(1, last):
        step = (1 - c / k) * b + c1 * (1 - slack) / k**2
        b = np.where(k >= n0, step, b)
        if k + 1 in (1000, last):
            col = 0 if k + 1 == 1000 else 1
            scaled[:, col] = (k + 1) ** c * (b - bound / (k + 1))
    # O(n^-c): the scaled remainder does not grow from n = 1000 to n = 4000
    grows = scaled[:, 1] > np.maximum(scaled[:, 0], 0) * 1.01 + 1e-6
    if np.any(grows):
        i = int(np.argmax(grows))
        return refuted(
            "n^c (b_n - bound/n) grows from n = 1000 to 4000",
            {**points[i], "at 1000": float(scaled[i, 0]), "at 4000": float(scaled[i, 1])},
        )
    return checked(
        "n^c (b_n - c1/((c-1) n)) does not grow from n = 1000 to n = 4000 (extended precision)",
        lanes,
        drawn=(
            "grid c in {2, 3, 4} x c1 in {0.1, 1, 10} x b_{n0} in {-5, 0, 5, 100} x n0 in "
            "{1, c+1, 50}, each sequence meeting the recursion with equality or with half its "
            "c1/n^2 term (seed 12)"
        ),
    )


def _sgd_points() -> list[dict[str, Any]]:
    """Diagonal quadratics with additive and gradient-proportional noise (Lemma C.1's eq. (4))."""
    rng = np.random.default_rng(21)
    points: list[dict[str, Any]] = []
    for k in range(60):
        d = int(rng.integers(1, 5))
        h = rng.uniform(0.1, 5.0, d)
        split = rng.dirichlet(np.ones(d)) if k % 2 else (h == h.min()).astype(float)
        points.append(
            {
                "h": h,
                "split": split / split.sum(),
                "N": int(rng.integers(1, 11)),
                "alpha": float(rng.uniform(0, 3)),
                "M": float(rng.uniform(0, 5)) if k % 5 else 0.0,
                "M_V": float(rng.choice([0.0, 0.5, 3.0])),
            }
        )
    # all noise from the clients, on a single curvature: the bound's tightest case
    for n_clients in (1, 3, 8):
        points.append(
            {
                "h": np.array([1.0]),
                "split": np.array([1.0]),
                "N": n_clients,
                "alpha": 1.0,
                "M": 0.0,
                "M_V": 0.0,
            }
        )
    return points


#: Lemma C.1 admits every integer eta with 4/(mu (eta + 1)) <= 1/(L (M_V/N + 1)); the checked ones.
_ETA_CHOICES: dict[str, Callable[[float], float]] = {
    "smallest": lambda e: e,
    "smallest + 1": lambda e: e + 1,
    "4 x smallest": lambda e: 4 * e,
}


def _sgd_gaps(points: list[dict[str, Any]], last: int) -> Array:
    """E(f(w^t) - f*) at t = ``last`` for every setting, all settings advanced together.

    eta is the choice ``p["eta"]`` of :data:`_ETA_CHOICES` (default the smallest integer with
    4/(mu (eta + 1)) <= 1/(L (M_V/N + 1))); every client adds
    N(0, alpha^2 I) to its message, w^0 has E w_j^2 = 4, and E w_j^2 follows exactly
    (1 - eta^t h_j)^2 E w_j^2 + (eta^t)^2 s_j Var(g), Var(g) = (M + M_V ||grad f||^2)/N + d alpha^2/N.
    """
    width = max(len(p["h"]) for p in points)
    h = np.ones((len(points), width))
    split = np.zeros_like(h)
    for k, p in enumerate(points):
        h[k, : len(p["h"])] = p["h"]
        split[k, : len(p["split"])] = p["split"]
    dims = np.array([len(p["h"]) for p in points])
    mask = np.arange(width) < dims[:, None]
    n_cl = np.array([p["N"] for p in points], dtype=float)
    alpha = np.array([p["alpha"] for p in points], dtype=float)
    big_m = np.array([p["M"] for p in points], dtype=float)
    m_v = np.array([p["M_V"] for p in points], dtype=float)
    mu = np.where(mask, h, np.inf).min(axis=1)
    big_l = np.where(mask, h, 0.0).max(axis=1)
    smallest = np.ceil(4 * big_l * (m_v / n_cl + 1) / mu - 1)
    eta0 = np.array(
        [_ETA_CHOICES[p.get("eta", "smallest")](e) for p, e in zip(points, smallest, strict=True)]
    )
    additive = big_m / n_cl + dims * alpha**2 / n_cl
    m = np.where(mask, 4.0, 0.0)
    for t in range(1, last + 1):
        step = (4 / (mu * (eta0 + t)))[:, None]
        variance = additive + m_v / n_cl * np.sum(h**2 * m, axis=1)
        m = (1 - step * h) ** 2 * m + step**2 * split * variance[:, None]
    return np.asarray(np.sum(h * m, axis=1) / 2)


@proposition(
    "tsoy.lemmaC.1",
    source="Tsoy et al. (2024), Lemma C.1 in Appendix C.2.1 (adapted from Dorner et al. 2023, Lemma E.1)",
    statement=(
        "with eta^t = 4/(mu (eta + t)) for any integer eta with 4/(mu (eta + 1)) <= 1/(L (M_V/N + "
        "1)) and no projection, "
        "E(f(w^t) - f*) <= 8 L (M/N + d sum_i alpha_i^2/N^2)/(3 mu^2 t) + O(1/t^4)"
    ),
    perturb={"noise": lambda M, d, alpha2_sum, N: M / N + d * alpha2_sum / N**3},
)
def _lemma_c1(
    noise: Callable[[float, int, float, int], float] = lambda M, d, alpha2_sum, N: (
        M / N + d * alpha2_sum / N**2
    ),
) -> Verdict:
    """Exact second moments E w_j^2 of SGD on f = sum_j h_j w_j^2/2, run to t = 10 000."""
    points = [{**p, "eta": e} for e in _ETA_CHOICES for p in _sgd_points()]
    last = 10_000
    gaps = _sgd_gaps(points, last)
    ratios: dict[str, list[float]] = {e: [] for e in _ETA_CHOICES}

    def holds(
        index: int, h: Array, split: Array, N: int, alpha: float, M: float, M_V: float, eta: str
    ) -> bool:
        d, mu, L = h.size, float(h.min()), float(h.max())
        bound = 8 * L * noise(M, d, N * alpha**2, N) / (3 * mu**2)
        ratios[eta].append(float(last * gaps[index] / bound))
        return bool(last * gaps[index] <= bound * (1 + 1e-3))

    verdict = on_points(
        holds,
        [{"index": k, **p} for k, p in enumerate(points)],
        "t E(f(w^t) - f*) at t = 10 000 <= 8 L (M/N + d sum alpha_i^2/N^2)/(3 mu^2)",
        drawn=(
            "seeded sample (seed 21) of 60 settings: d in 1..4, curvatures in [0.1, 5], N in "
            "1..10, alpha in [0, 3], M in [0, 5] (0 every fifth), M_V in {0, 0.5, 3}, the noise "
            "spread at random or all on the flattest coordinate; plus one curvature with client "
            "noise only, N in {1, 3, 8}; each run with eta the smallest admissible integer, one "
            "more, and four times it"
        ),
        hypothesis=lambda index, h, split, N, alpha, M, M_V, eta: M + alpha > 0,
    )
    if not verdict.holds:
        return verdict
    spread = "; ".join(f"eta {e}: max {max(r):.4f}" for e, r in ratios.items())
    return Verdict(
        verdict.status,
        f"{verdict.evidence}; the lemma's eta is any admissible integer, and t E(f - f*)/bound "
        f"over the settings is, by eta, {spread}",
        n_points=verdict.n_points,
        drawn=verdict.drawn,
    )


#: Appendix C.1 settings: (alpha_j of the N clients, samples n, sigma).
_APPC_SETTINGS = (
    ((0.1, 0.2, 0.3), 10, 1.0),
    ((1.0, 1.0), 5, 2.0),
    ((0.0, 2.0, 0.5, 0.5, 3.0), 20, 0.5),
    ((0.3,) * 8, 8, 1.5),
    ((5.0, 0.01), 50, 3.0),
    ((0.2, 0.0, 0.0, 0.7), 3, 1.0),
)


@proposition(
    "tsoy.appC.1.err",
    source="Tsoy et al. (2024), Appendix C.1 (from Theorem 4.1 of Dorner et al. 2023)",
    statement=(
        "with m_bar = sum m_j/N and client i's estimate (N m_bar - m_i + x_bar_i)/N, "
        "err_i^2 = sigma^2/(N n) + sum_{j != i} alpha_j^2/N^2"
    ),
    perturb={
        "err2": lambda s2, n_samples, alphas, N: s2 / n_samples / N + np.sum(alphas**2) / N**2
    },
)
def _appc1_err(
    err2: Callable[..., float] = lambda s2, n_samples, alphas, N: (
        s2 / (N * n_samples) + np.sum(alphas[1:] ** 2) / N**2
    ),
) -> Verdict:
    """One independent Monte Carlo estimate (20 000 draws, its own seed) per setting."""
    results = []
    for seed, (alphas, n_samples, sigma) in enumerate(_APPC_SETTINGS):
        rng = np.random.default_rng(3100 + seed)
        alpha, reps, mean = np.array(alphas), 20_000, -0.7
        xbar = mean + sigma / np.sqrt(n_samples) * rng.standard_normal((reps, alpha.size))
        msgs = xbar + alpha * rng.standard_normal((reps, alpha.size))
        own = (msgs.sum(axis=1) - msgs[:, 0] + xbar[:, 0]) / alpha.size
        formula = float(err2(sigma**2, n_samples, alpha, alpha.size))
        results.append(mc_within((own - mean) ** 2, formula, f"setting {seed}, N = {alpha.size}"))
    return mc_verdict(
        results,
        drawn=(
            f"{len(_APPC_SETTINGS)} fixed settings, each one estimate of 20 000 Gaussian draws "
            "with its own seed: N from 2 to 8, noiseless and very noisy clients"
        ),
    )
