r"""Federated-Clustering's theory, checkable: Theorem 2's two-point construction, Lemma 1's
constants for strongly convex losses, and the variance Lemmas 7 and 14 (Werner 2024, ch. 2,
"Personalized Collaborative Learning"; Werner, He, Jordan, Jaggi, Karimireddy, TMLR 2023;
readings of ``spec/ch2-clustering.md`` §4 and §7.1, claims U13-U15).

Every statement is registered under ``thesis.ch2.`` in :mod:`econ.propositions`. Two printed
statements fail and carry ``holds=False``, with their fixes as ``.corrected``:

- Theorem 2's proof ends with :math:`d^2p^2/4 \ge \sigma^4/(4\Delta^2)` for
  :math:`\Delta^2 \ge 2\sigma^2`; the exact value is :math:`(\sqrt{4\sigma^2+\Delta^2}-\Delta)^2/16`,
  whose ratio to :math:`\sigma^4/\Delta^2` falls to :math:`(2-\sqrt 3)/2 \approx 0.134` at
  :math:`\Delta^2 = 2\sigma^2` (spec §8 item 9).
- Lemma 1 states A5 with :math:`\tfrac12(\max_{j\not\sim i}\lVert\nabla f_j(x_i^*)\rVert)^2`
  for every pair :math:`i \not\sim j`; its proof (eq. (2.17)) gives the pair's own
  :math:`\tfrac12\lVert\nabla f_j(x_i^*)\rVert^2`, so a uniform :math:`\Delta` takes the
  minimum over pairs, not the maximum. With three clusters at different distances the
  printed form fails at :math:`x = x_i^*`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import sympy as sp
from numpy.typing import NDArray

from econ.propositions import (
    Verdict,
    all_zero,
    on_points,
    proposition,
    proved,
    refuted,
    sign_on_interval,
)
from econ.validation import in_interval, non_negative, positive, positive_int

__all__ = [
    "QuadraticClusters",
    "TwoPointConstruction",
    "ema_variance",
    "lemma1_constants",
    "lemma1_slacks",
    "random_quadratic_clusters",
    "two_point_construction",
    "two_point_symbols",
]

FloatArray = NDArray[np.float64]

# --------------------------------------------------------------------------- Theorem 2


@dataclass(frozen=True, slots=True)
class TwoPointConstruction:
    """Theorem 2's hard instance: atoms ``0`` and ``atom`` with probabilities ``p`` and
    ``1 - p`` (and swapped for the second component), and the error ``error`` of the best
    estimate :math:`dp/2` of :math:`\\mu_1 = dp`."""

    p: float
    atom: float
    error: float


def two_point_symbols() -> tuple[sp.Expr, sp.Expr, sp.Expr, sp.Symbol, sp.Symbol]:
    r"""Theorem 2's construction in closed form (Werner 2024, proof of Theorem 2, eq.
    (2.10)-(2.12)):

    .. math::

        p = \frac12 - \frac{\Delta}{2\sqrt{4\sigma^2+\Delta^2}}, \qquad
        d = \frac{\Delta}{1-2p}, \qquad \text{error} = \frac{d^2p^2}{4}.

    Returns ``(p, d, error, sigma, Delta)`` with positive symbols ``sigma``, ``Delta``.
    """
    sigma, gap = sp.symbols("sigma Delta", positive=True)
    p = sp.Rational(1, 2) - gap / (2 * sp.sqrt(4 * sigma**2 + gap**2))
    d = gap / (1 - 2 * p)
    return p, d, d**2 * p**2 / 4, sigma, gap


def two_point_construction(sigma: float, gap: float) -> TwoPointConstruction:
    r"""Numbers of Theorem 2's construction for standard deviation ``sigma`` and separation
    ``gap`` (:math:`\Delta`): :math:`p`, the atom :math:`d = \sqrt{4\sigma^2+\Delta^2}` and
    the error :math:`(\sqrt{4\sigma^2+\Delta^2}-\Delta)^2/16` (see :func:`two_point_symbols`)."""
    sigma = float(positive("sigma", sigma))
    gap = float(positive("gap", gap))
    root = math.sqrt(4 * sigma**2 + gap**2)
    return TwoPointConstruction(p=0.5 - gap / (2 * root), atom=root, error=(root - gap) ** 2 / 16)


@proposition(
    "thesis.ch2.thm2.construction",
    source="Werner (2024) ch. 2, proof of Theorem 2, eq. (2.10)-(2.13); spec ch2 §4.2, U13",
    statement="p = 1/2 - Delta/(2 sqrt(4 sigma^2 + Delta^2)) solves (4s^2+D^2)p^2 - "
    "(4s^2+D^2)p + s^2 = 0; with d = Delta/(1-2p): d^2 p(1-p) = sigma^2 and "
    "d^2 p^2/4 = (sqrt(4 sigma^2 + Delta^2) - Delta)^2/16",
)
def _thm2_construction() -> Verdict:
    p, d, error, sigma, gap = two_point_symbols()
    root = sp.sqrt(4 * sigma**2 + gap**2)
    return all_zero(
        [
            ((4 * sigma**2 + gap**2) * (p**2 - p) + sigma**2, "quadratic in p"),
            (d**2 * p * (1 - p) - sigma**2, "variance d^2 p (1-p) - sigma^2"),
            ((1 - 2 * p) * d - gap, "separation (1-2p) d - Delta"),
            (error - (root - gap) ** 2 / 16, "error d^2 p^2/4"),
        ],
        "Theorem 2 construction",
    )


@proposition(
    "thesis.ch2.thm2.constant",
    source="Werner (2024) ch. 2, proof of Theorem 2, last display; Werner et al. (2023) "
    "App., Theorem 2",
    statement="d^2 p^2/4 = (sigma^2/4)(sqrt(1 + 4 sigma^2/Delta^2) - 1) >= sigma^4/(4 Delta^2) "
    "for Delta^2 >= 2 sigma^2",
    holds=False,
)
def _thm2_constant() -> Verdict:
    sigma, gap = 1.0, math.sqrt(2.0)  # the edge Delta^2 = 2 sigma^2
    exact = two_point_construction(sigma, gap).error
    printed = sigma**2 / 4 * (math.sqrt(1 + 4 * sigma**2 / gap**2) - 1)
    claimed = sigma**4 / (4 * gap**2)
    if exact >= claimed and math.isclose(exact, printed):
        return proved("the printed value and bound hold at Delta^2 = 2 sigma^2")
    return refuted(
        "at Delta^2 = 2 sigma^2 the error d^2p^2/4 is below sigma^4/(4 Delta^2) and differs "
        "from the printed (sigma^2/4)(sqrt(1+4sigma^2/Delta^2)-1)",
        {"sigma": sigma, "Delta": gap, "error": exact, "printed": printed, "bound": claimed},
    )


@proposition(
    "thesis.ch2.thm2.constant.corrected",
    source="Werner (2024) ch. 2, proof of Theorem 2, corrected; spec ch2 §4.2 and §8 item 9",
    statement="(d^2 p^2/4)/(sigma^4/Delta^2) = 1/(1 + sqrt(1 + 4 sigma^2/Delta^2))^2, "
    "increasing in Delta/sigma: >= (2 - sqrt 3)/2 ~ 0.134 for Delta^2 >= 2 sigma^2, -> 1/4",
)
def _thm2_constant_corrected() -> Verdict:
    _, _, error, sigma, gap = two_point_symbols()
    t = sp.Symbol("t", positive=True)  # t = sqrt(1 + 4 sigma^2/Delta^2), in (1, sqrt 3]
    ratio_t = 1 / (1 + t) ** 2
    verdict = all_zero(
        [
            (
                error / (sigma**4 / gap**2) - ratio_t.subs(t, sp.sqrt(1 + 4 * sigma**2 / gap**2)),
                "ratio as a function of t",
            ),
            (ratio_t.subs(t, sp.sqrt(3)) - (2 - sp.sqrt(3)) / 2, "value at Delta^2 = 2 sigma^2"),
            (sp.limit(ratio_t, t, 1) - sp.Rational(1, 4), "limit Delta/sigma -> oo"),
        ],
        "Theorem 2 constant",
    )
    if not verdict.holds:
        return verdict
    # decreasing in t on (1, 2), which holds (1, sqrt 3]; t decreases in Delta/sigma
    if sign_on_interval(sp.diff(ratio_t, t), t, 1, 2) != -1:
        return refuted("the ratio is not decreasing in t", {"interval": "(1, 2)"})
    return proved(
        "ratio = 1/(1+t)^2, t = sqrt(1+4 sigma^2/Delta^2) in (1, sqrt 3]; d/dt < 0 on (1, 2) "
        "(Sturm); value (2-sqrt 3)/2 at t = sqrt 3, limit 1/4 at t = 1"
    )


# --------------------------------------------------------------------------- Lemma 1


@dataclass(frozen=True, slots=True)
class QuadraticClusters:
    r"""Clients with quadratic losses :math:`f_i(x) = \tfrac12 (x - x^*_{c(i)})^\top H_i
    (x - x^*_{c(i)})`: ``hessians`` ``(N, d, d)``, ``optima`` ``(K, d)`` and ``clusters``
    ``(N,)`` (the cluster :math:`c(i)` of each client)."""

    hessians: FloatArray
    optima: FloatArray
    clusters: NDArray[np.int64]

    def gradients(self, x: FloatArray) -> FloatArray:
        r""":math:`\nabla f_i(x) = H_i (x - x^*_{c(i)})` for every client, ``(N, d)``."""
        return np.einsum("nij,nj->ni", self.hessians, x - self.optima[self.clusters])


def random_quadratic_clusters(
    rng: np.random.Generator,
    n_clusters: int,
    per_cluster: int,
    dim: int,
    mu: float,
    smoothness: float,
    spread: float = 5.0,
) -> QuadraticClusters:
    """Random clients: each Hessian :math:`Q\\,\\mathrm{diag}(\\lambda)\\,Q^\\top` with a random
    rotation and eigenvalues uniform in ``[mu, smoothness]`` (the two extremes included), and
    cluster optima :math:`\\mathcal N(0, \\mathrm{spread}^2 I)`."""
    n_clusters = positive_int("n_clusters", n_clusters)
    per_cluster = positive_int("per_cluster", per_cluster)
    dim = positive_int("dim", dim)
    mu = float(positive("mu", mu))
    smoothness = float(in_interval("smoothness", smoothness, mu, math.inf))
    n = n_clusters * per_cluster
    hessians = np.empty((n, dim, dim))
    for i in range(n):
        q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
        eig = rng.uniform(mu, smoothness, size=dim)
        eig[0], eig[-1] = mu, smoothness
        hessians[i] = (q * eig) @ q.T
    optima = float(positive("spread", spread)) * rng.standard_normal((n_clusters, dim))
    return QuadraticClusters(hessians, optima, np.repeat(np.arange(n_clusters), per_cluster))


def lemma1_constants(smoothness: float, mu: float) -> tuple[float, float]:
    r"""Lemma 1's constants (Werner 2024, ch. 2, Lemma 1): for :math:`L`-smooth,
    :math:`\mu`-strongly convex losses with shared optima per cluster, A4 holds with
    :math:`A = 2L/\mu` and A5 with :math:`D = \sqrt{2(1 + (L/\mu)^2)}`. Returns ``(A, D)``."""
    mu = float(positive("mu", mu))
    smoothness = float(in_interval("smoothness", smoothness, mu, math.inf))
    kappa = smoothness / mu
    return 2 * kappa, math.sqrt(2 * (1 + kappa**2))


def lemma1_slacks(
    problem: QuadraticClusters, x: FloatArray, smoothness: float, mu: float
) -> dict[str, FloatArray]:
    r"""Slacks (right side minus left side for A4, left minus right for A5) of Lemma 1 at
    ``x``, with the constants of :func:`lemma1_constants`; a negative entry is a violation.

    - ``a4`` ``(N,)``: :math:`A^2\lVert\nabla\bar f_i\rVert^2 - \lVert\nabla f_i - \nabla
      \bar f_i\rVert^2`, :math:`\bar f_i` the mean loss of :math:`i`'s cluster;
    - ``a5_pair`` (pairs :math:`i \not\sim j`): :math:`\lVert\nabla f_i - \nabla f_j\rVert^2
      - \tfrac12\lVert\nabla f_j(x_i^*)\rVert^2 + D^2\lVert\nabla f_i\rVert^2` (the proof's
      eq. (2.17));
    - ``a5_printed``: the same with :math:`\max_{j'\not\sim i}\lVert\nabla f_{j'}(x_i^*)\rVert`
      as printed in the lemma.
    """
    a, d = lemma1_constants(smoothness, mu)
    g = problem.gradients(np.asarray(x, dtype=np.float64))
    labels = problem.clusters
    means = np.stack([g[labels == k].mean(0) for k in range(problem.optima.shape[0])])
    g_bar = means[labels]
    a4 = a**2 * (g_bar**2).sum(1) - ((g - g_bar) ** 2).sum(1)
    # at_opt[i, j] = ||grad f_j(x_i^*)||
    at_opt = np.linalg.norm(
        np.einsum(
            "jab,ijb->ija",
            problem.hessians,
            problem.optima[labels][:, None] - problem.optima[labels][None],
        ),
        axis=2,
    )
    other = labels[:, None] != labels[None]
    max_other = np.where(other, at_opt, 0.0).max(1)
    diff = ((g[:, None] - g[None]) ** 2).sum(2)
    own = (g**2).sum(1)[:, None]
    pair = diff - 0.5 * at_opt**2 + d**2 * own
    printed = diff - 0.5 * max_other[:, None] ** 2 + d**2 * own
    return {"a4": a4, "a5_pair": pair[other], "a5_printed": printed[other]}


def _lemma1_points(n: int) -> list[dict[str, float]]:
    """``n`` random points of random problems (3 clusters of 3 in R^4, kappa up to 10)."""
    rng = np.random.default_rng(2024)
    problems = [
        (random_quadratic_clusters(rng, 3, 3, 4, mu, big), big, mu)
        for mu, big in ((1.0, 1.0), (1.0, 3.0), (0.5, 5.0), (0.2, 2.0))
    ]
    points = []
    for i in range(n):
        problem, big, mu = problems[i % len(problems)]
        x = rng.normal(scale=rng.choice([0.1, 1.0, 10.0]), size=4) + problem.optima[i % 3]
        slacks = lemma1_slacks(problem, x, big, mu)
        points.append({k: float(v.min()) for k, v in slacks.items()} | {"L": big, "mu": mu})
    return points


@proposition(
    "thesis.ch2.lemma1.a4",
    source="Werner (2024) ch. 2, Lemma 1 (first inequality) and eq. (2.14); spec ch2 U14",
    statement="L-smooth, mu-strongly convex losses with shared cluster optima satisfy A4 "
    "with A = 2L/mu",
)
def _lemma1_a4() -> Verdict:
    return on_points(
        lambda a4, **_: a4 >= -1e-9,
        _lemma1_points(1000),
        "||grad f_i - grad f_bar||^2 <= (2L/mu)^2 ||grad f_bar||^2 on random quadratics",
    )


def _three_cluster_line() -> QuadraticClusters:
    """1-D, identity curvature, cluster optima 0, 1 and 10."""
    return QuadraticClusters(
        np.ones((3, 1, 1)), np.array([[0.0], [1.0], [10.0]]), np.arange(3, dtype=np.int64)
    )


@proposition(
    "thesis.ch2.lemma1.a5",
    source="Werner (2024) ch. 2, Lemma 1 (second inequality, as printed)",
    statement="for i !~ j: ||grad f_i - grad f_j||^2 >= (1/2)(max_{j' !~ i} ||grad f_j'(x_i*)||)^2"
    " - 2(1 + (L/mu)^2)||grad f_i||^2 for all x",
    holds=False,
)
def _lemma1_a5_printed() -> Verdict:
    problem = _three_cluster_line()
    slack = lemma1_slacks(problem, problem.optima[0], 1.0, 1.0)["a5_printed"]
    worst = int(np.argmin(slack))
    if slack[worst] >= 0:
        return proved("the printed A5 form holds on the three-cluster line")
    return refuted(
        "at x = x_1* = 0 with optima (0, 1, 10): ||g_1 - g_2||^2 = 1 < (1/2) 10^2",
        {"optima": [0.0, 1.0, 10.0], "x": 0.0, "slack": float(slack[worst])},
    )


@proposition(
    "thesis.ch2.lemma1.a5.corrected",
    source="Werner (2024) ch. 2, proof of Lemma 1, eq. (2.17); spec ch2 U14",
    statement="for i !~ j: ||grad f_i - grad f_j||^2 >= (1/2)||grad f_j(x_i*)||^2 - "
    "2(1 + (L/mu)^2)||grad f_i||^2, so A5 holds with D = sqrt(2(1+(L/mu)^2)) and "
    "Delta^2 = (1/2) min_{i !~ j} ||grad f_j(x_i*)||^2",
)
def _lemma1_a5_corrected() -> Verdict:
    return on_points(
        lambda a5_pair, **_: a5_pair >= -1e-9,
        _lemma1_points(1000),
        "the pairwise A5 inequality of eq. (2.17) on random quadratics",
    )


# --------------------------------------------------------------------------- Lemmas 7 and 14


def ema_variance(alpha: float, sigma2: float, t: int | None = None) -> float:
    r"""Variance of the momentum :math:`m_t = \alpha g_t + (1-\alpha) m_{t-1}`, :math:`m_0 = 0`,
    of iid gradients of variance :math:`\sigma^2` (eq. (6)):

    .. math::

        \operatorname{Var} m_t = \frac{\alpha\sigma^2}{2-\alpha}\big(1 - (1-\alpha)^{2t}\big)
        \;\to\; \frac{\alpha\sigma^2}{2-\alpha} \le \alpha\sigma^2

    (the bound of Werner 2024, ch. 2, Lemma 14). ``t=None`` gives the stationary value.
    """
    alpha = float(in_interval("alpha", alpha, 0.0, 1.0, low_open=True))
    sigma2 = float(non_negative("sigma2", sigma2))
    stationary = alpha * sigma2 / (2 - alpha)
    if t is None:
        return stationary
    return stationary * (1 - (1 - alpha) ** (2 * int(non_negative("t", t))))


@proposition(
    "thesis.ch2.lemma14",
    source="Werner (2024) ch. 2, Lemma 14 (= Werner et al. 2023, Lemma 13); spec ch2 U15",
    statement="the EMA momentum of iid gradients of variance sigma^2 (m_0 = 0) has variance "
    "V_t = alpha sigma^2 (1 - (1-alpha)^(2t))/(2 - alpha) <= alpha sigma^2, stationary "
    "alpha sigma^2/(2 - alpha)",
)
def _lemma14() -> Verdict:
    alpha, s2 = sp.symbols("alpha sigma2", positive=True)
    t = sp.Symbol("t", integer=True, nonnegative=True)
    v = alpha * s2 * (1 - (1 - alpha) ** (2 * t)) / (2 - alpha)
    gap = alpha * s2 * ((1 - alpha) + (1 - alpha) ** (2 * t)) / (2 - alpha)  # >= 0 on (0, 1]
    return all_zero(
        [
            (v.subs(t, 0), "V_0"),
            (sp.expand(v.subs(t, t + 1) - alpha**2 * s2 - (1 - alpha) ** 2 * v), "recursion"),
            (alpha * s2 - v - gap, "alpha sigma^2 - V_t as a sum of non-negative terms"),
            (sp.limit(v.subs(alpha, sp.Rational(1, 10)), t, sp.oo) - s2 / 19, "alpha = 0.1"),
        ],
        "Lemma 14 closed form",
    )


@proposition(
    "thesis.ch2.lemma7",
    source="Werner (2024) ch. 2, Lemma 7 (= Werner et al. 2023, Lemma 6); spec ch2 U15",
    statement="the mean of |B| independent per-sample gradients of variance sigma^2 has "
    "variance sigma^2/|B|",
)
def _lemma7() -> Verdict:
    rng = np.random.default_rng(7)
    points = []
    for atoms, batch in itertools.product((2, 3), (1, 2, 3)):
        values = rng.normal(size=(atoms, 2))
        probs = rng.dirichlet(np.ones(atoms))
        mean = probs @ values
        sigma2 = float(probs @ ((values - mean) ** 2).sum(1))
        exact = 0.0  # every ordered batch, enumerated
        for combo in itertools.product(range(atoms), repeat=batch):
            weight = float(np.prod(probs[list(combo)]))
            exact += weight * float(((values[list(combo)].mean(0) - mean) ** 2).sum())
        points.append({"atoms": atoms, "batch": batch, "exact": exact, "sigma2": sigma2})
    return on_points(
        lambda exact, sigma2, batch, **_: math.isclose(exact, sigma2 / batch, rel_tol=1e-12),
        points,
        "exact enumeration of all batches of random discrete distributions in R^2",
    )
