r"""Lemmas 3, 5 and 6 behind Theorem 1 (Threshold-Clustering), checked on discrete point laws.

Werner (2024), ch. 2, §2.6 "Proof of Theorem 1" bounds the error of one step of
Threshold-Clustering, eq. (2.4), by Lemmas 2-6 (= Werner et al., TMLR 2023, App. A.1,
Lemmas 1-5). One step moves every point :math:`z_j` to

.. math::

    y_j = z_j\,1(\lVert z_j - v\rVert \le \tau) + v\,1(\lVert z_j - v\rVert > \tau),

with the current centre :math:`v`, :math:`c^2 = \lVert v - \mathbb E z_i\rVert^2` and the
proofs' radius :math:`\tau^2 = c^2 + \delta_i\sigma\Delta` (the texts write
:math:`\approx`; the checks read it with constant 1). The lemmas are stated with
:math:`\lesssim` (up to an absolute constant); every check here names the constant: for
the statements that hold, the one a short proof gives or, where no short proof is sharp, a
value just above the largest ratio of the two sides that an adversarial family reaches
(the check's points include the laws that reach it, so a smaller constant or a dropped
term fails); for the statements that fail, a family of laws inside the hypotheses along
which the ratio of the two sides grows past any constant. All expectations are exact sums over the atoms of discrete laws; the centre is a
fixed point (a point law for :math:`v`), and the points of a cluster are independent (the
proofs' resampling assumption).

Here: one thresholded point in the cluster (thesis Lemma 3, and the paper's Lemma 2, which
prints another left side), the bad points (Lemma 6) and one out-of-cluster point (Lemma 5).
Lemma 2, the mean of all good points, is in :mod:`learning.theory.ch2_lemma2_propositions`;
the point laws, the thresholded step and the proofs' radius in
:mod:`learning.theory.threshold_laws`.

References
----------
M. Werner, *Collaborative Learning: Aligning Goals and Outcomes* (PhD thesis, UC Berkeley,
2024), ch. 2, §2.6, Lemmas 2-6. Werner, He, Jordan, Jaggi, Karimireddy, "Provably
Personalized and Robust Federated Learning" (TMLR 2023), App. A.1, Lemmas 1-5.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any, cast

import numpy as np
import sympy as sp

from econ.propositions import Verdict, on_points, proposition
from learning.theory.clustering import PAPER, THESIS, FloatArray
from learning.theory.threshold_laws import (
    C2,
    DELTA,
    GAP,
    SIGMA,
    PointLaw,
    clipped,
    gap_floor,
    heavy_tail,
    one_sided,
    radius2,
    random_law,
    squared_norm,
    unit_vector,
)

# --------------------------------------------------------------------------- one in-cluster point

# the right side of thesis Lemma 3 (= paper Lemma 2)
_T1_RHS = C2 + (C2 + SIGMA**2) * SIGMA / (DELTA * GAP)


def _t1_right(rhs: sp.Expr) -> Callable[..., float]:
    """``rhs`` as a function of (c^2, sigma, delta, Delta)."""
    return cast(Callable[..., float], sp.lambdify((C2, SIGMA, DELTA, GAP), rhs))


def _in_cluster_points() -> Iterator[dict[str, Any]]:
    """(law of z_j, centre v, delta, Delta, sigma) for an in-cluster point."""
    for ratio in (10.0, 100.0, 1e3, 1e4):  # c = 0, K = delta Delta / sigma
        for delta in (0.01, 0.5, 1.0):  # one atom just past tau = sqrt(K): the sharp case
            yield {
                **_law_point(one_sided(1, math.sqrt(ratio))),
                "centre": np.zeros(1),
                "delta": delta,
                "gap": ratio / delta,
                "sigma": 1.0,
            }
        yield {  # two symmetric atoms outside the ball
            **_law_point(heavy_tail(1, ratio)),
            "centre": np.zeros(1),
            "delta": 0.5,
            "gap": 2 * ratio,
            "sigma": 1.0,
        }
    rng = np.random.default_rng(3)
    for k in range(300):
        dim = 1 + k % 3
        law = random_law(rng, dim)
        sd = math.sqrt(law.variance)
        sigma = sd * float((1.0, 1.0, 2.0)[k % 3])
        c = sd * 10 ** float(rng.uniform(-2, 2)) * (k % 10 != 0)  # one in ten: v = E z
        delta = float(rng.uniform(0.01, 1.0))
        gap = sigma / delta * 10 ** float(rng.uniform(-2, 3))
        centre = law.mean + c * unit_vector(rng, dim)
        yield {**_law_point(law), "centre": centre, "delta": delta, "gap": gap, "sigma": sigma}


_IN_CLUSTER_DRAWN = (
    "first, with v = E z, sigma = 1 and K = delta Delta/sigma = 10, 100, 1e3, 1e4: a law with "
    "one atom just past tau = sqrt(K) on one side (probability 1/(a^2 + 1), a = tau (1 + "
    "1e-9), the rest at -1/a) for delta = 0.01, 0.5, 1, and a law with mass 1/(2K) at "
    "+-sqrt(2K) for delta = 0.5; then seeded (seed 3) 300 laws on 2-5 atoms in R^1..R^3 of "
    "scale 0.1, 1 or 3, sigma = sd(z) or 2 sd(z), c/sd(z) log-uniform in [1e-2, 1e2] (c = 0 "
    "for one in ten), delta uniform in [0.01, 1], delta Delta/sigma log-uniform in "
    "[1e-2, 1e3]; tau^2 = c^2 + delta sigma Delta"
)


def _law_point(law: PointLaw) -> dict[str, FloatArray]:
    return {"atoms": law.atoms, "probs": law.probs}


def _in_cluster_terms(
    atoms: FloatArray,
    probs: FloatArray,
    centre: FloatArray,
    delta: float,
    gap: float,
    sigma: float,
    right: Callable[..., float],
) -> dict[str, float]:
    law = PointLaw(atoms, probs)
    c2 = squared_norm(centre - law.mean)
    y = clipped(law, centre, math.sqrt(radius2(c2, delta, sigma, gap)))
    diff = y.atoms - law.atoms
    return {
        "bias2": squared_norm(law.probs @ diff),  # ||E(y - z)||^2
        "mean_sq": float(law.probs @ (diff**2).sum(1)),  # E||y - z||^2
        "c2": c2,
        "rhs": float(right(c2, sigma, delta, gap)),
    }


def _in_cluster_hypothesis(
    atoms: FloatArray, probs: FloatArray, sigma: float, delta: float, **_: Any
) -> bool:
    """A3 (the law's variance is at most sigma^2), sigma > 0 and delta in (0, 1]."""
    return 0 < PointLaw(atoms, probs).variance <= sigma**2 * (1 + 1e-12) and 0 < delta <= 1


def _t1_reduction(constant: float, rhs: sp.Expr) -> sp.Expr:
    r"""The proof's last step, cleared of denominators, at :math:`\sigma = 1`.

    :math:`x(c^2 + x)\,(K\,\mathrm{rhs} - (c^2 + \sigma^2)^2/\tau^2)` with
    :math:`x = \delta\Delta/\sigma`, :math:`\tau^2 = c^2 + \delta\sigma\Delta` and
    :math:`K` = ``constant``; for the printed right side and :math:`K = 1` it is
    :math:`c^2(c^2 + x^2 - x + 1) \ge 0`.
    """
    x = sp.Symbol("x", positive=True)
    chain = (C2 + SIGMA**2) ** 2 / (C2 + DELTA * SIGMA * GAP)
    gap = sp.nsimplify(constant) * rhs - chain
    return sp.factor(sp.cancel(gap.subs({SIGMA: 1, GAP: x / DELTA}) * x * (C2 + x)))


@proposition(
    "thesis.ch2.lemma3",
    source=f"{THESIS}, §2.6 Lemma 3 (bound T_1) and its proof; the paper prints another left "
    "side (clustering.lemma2)",
    statement="for an in-cluster point j ~ i with E||z_j - E z_j||^2 <= sigma^2 and "
    "tau^2 = c^2 + delta_i sigma Delta: ||E(y_j - z_j)||^2 <~ c^2 + (c^2 + sigma^2) sigma/"
    "(delta_i Delta); the proof's own chain gives the constant 1, and it is sharp (v = E z "
    "and one atom just past tau on one side: the ratio tends to 1 as delta_i Delta/sigma "
    "grows); the chain even gives c^2 + sigma^3/(delta_i Delta), without the c^2 sigma/"
    "(delta_i Delta) term (reduced form c^2 (x - 1)^2 >= 0)",
    perturb={"constant": 0.9},
)
def _lemma3(constant: float = 1.0, rhs: sp.Expr = _T1_RHS) -> Verdict:
    right = _t1_right(rhs)

    def holds(**pt: Any) -> bool:
        t = _in_cluster_terms(**pt, right=right)
        return t["bias2"] <= constant * t["rhs"] * (1 + 1e-9)

    return on_points(
        holds,
        _in_cluster_points(),
        f"||E(y - z)||^2 <= {constant} ({rhs}); the proof: ||E(y - z)||^2 <= (E||y - z||)^2 "
        "<= (E[||v - z||^2 1(||v - z|| > tau)]/tau)^2 <= (c^2 + sigma^2)^2/tau^2, and with "
        "sigma = 1, x = delta Delta/sigma sympy gives x (c^2 + x)(constant * right side - "
        f"(c^2 + sigma^2)^2/tau^2) = {_t1_reduction(constant, rhs)} (the first steps, Jensen "
        "and E[X 1(X > tau)] <= E[X^2 1(X > tau)]/tau, are not symbolic)",
        drawn=_IN_CLUSTER_DRAWN,
        hypothesis=_in_cluster_hypothesis,
    )


@proposition(
    "clustering.lemma2",
    source=f"{PAPER}, App. A.1, Lemma 2 (bound T_1; thesis Lemma 3 prints ||E(y_j - z_j)||^2)",
    statement="E_{j ~ i}||y_j - z_j||^2 <~ c^2 + (c^2 + sigma^2) sigma/(delta_i Delta) for an "
    "in-cluster point with variance <= sigma^2 and tau^2 = c^2 + delta_i sigma Delta",
    holds=False,
    perturb={"left": "bias2"},
)
def _paper_lemma2(constant: float = 100.0, left: str = "mean_sq") -> Verdict:
    right = _t1_right(_T1_RHS)

    def holds(**pt: Any) -> bool:
        t = _in_cluster_terms(**pt, right=right)
        return t[left] <= constant * t["rhs"] * (1 + 1e-9)

    return on_points(
        holds,
        _in_cluster_points(),
        f"E||y - z||^2 <= {constant} (c^2 + (c^2 + sigma^2) sigma/(delta Delta)) (any fixed "
        "constant: with v = E z and a law whose variance sits in atoms outside the ball, "
        "E||y - z||^2 is about sigma^2 while the right side is sigma^2/K, K = delta "
        "Delta/sigma, so the ratio K grows past every constant)",
        drawn=_IN_CLUSTER_DRAWN,
        hypothesis=_in_cluster_hypothesis,
    )


@proposition(
    "clustering.lemma2.corrected",
    source=f"{PAPER}, App. A.1, Lemma 2, corrected; the proof of the paper's Lemma 1 defines "
    "T_1 in the step after (ii), '<= (1 + 2/delta_i) delta_i^2 E_{j in G_i: j ~ i}||y_{j,l} "
    "- z_j||^2 + ...', through E||y - z||^2; keeping ||E_{j ~ i}(y_{j,l} - z_j)||^2 there, "
    "as the thesis's proof of Lemma 2 and its Lemma 3 do, is the fix",
    statement="E||y_j - z_j||^2 = E[||v - z_j||^2 1(||v - z_j|| > tau)] <= c^2 + sigma^2, and "
    "the sigma^2 cannot be traded for sigma^3/(delta_i Delta); the paper's right side bounds "
    "||E(y_j - z_j)||^2 (thesis.ch2.lemma3), which is what the proof of Lemma 1 needs in "
    "T_1 = delta_i ||E_{j ~ i}(y_{j,l} - z_j)||^2",
    perturb={"sigma2_weight": 0.5},
)
def _paper_lemma2_corrected(sigma2_weight: float = 1.0) -> Verdict:
    right = _t1_right(_T1_RHS)

    def holds(sigma: float, **pt: Any) -> bool:
        t = _in_cluster_terms(sigma=sigma, **pt, right=right)
        return t["mean_sq"] <= (t["c2"] + sigma2_weight * sigma**2) * (1 + 1e-9)

    return on_points(
        holds,
        _in_cluster_points(),
        "E||y - z||^2 <= c^2 + sigma^2 (E||v - z||^2 = c^2 + Var z for a fixed centre)",
        drawn=_IN_CLUSTER_DRAWN,
        hypothesis=_in_cluster_hypothesis,
    )


# --------------------------------------------------------------------------- bad points (Lemma 6)


def _bad_points() -> Iterator[dict[str, Any]]:
    """(E z_i, centre v, bad points, delta, Delta, sigma); the bad points are the adversary's."""
    for c, spread in ((1.0, 1e-4), (1.0, 1e-2), (1.0, 1.0), (0.0, 1.0)):  # at the ball's edge
        centre = np.array([c, 0.0])
        tau = math.sqrt(radius2(c * c, 0.5, 1.0, 2 * spread))
        edge = centre + tau * np.array([1.0, 0.0])
        yield {
            "mean_i": np.zeros(2),
            "centre": centre,
            "bad": np.stack([edge, edge]),
            "delta": 0.5,
            "gap": 2 * spread,
            "sigma": 1.0,
        }
    rng = np.random.default_rng(6)
    for k in range(300):
        dim = 1 + k % 3
        sigma = 10 ** float(rng.uniform(-1, 1))
        c = sigma * 10 ** float(rng.uniform(-3, 2)) * (k % 10 != 0)
        delta = float(rng.uniform(0.01, 1.0))
        gap = sigma / delta * 10 ** float(rng.uniform(-2, 3))
        mean_i = rng.standard_normal(dim)
        away = unit_vector(rng, dim)
        centre = mean_i + c * away
        tau = math.sqrt(radius2(c * c, delta, sigma, gap))
        bad = []
        for _ in range(int(rng.integers(1, 6))):
            kind = int(rng.integers(3))
            if kind == 0:  # at the edge, straight away from E z_i
                bad.append(centre + tau * away)
            elif kind == 1:  # anywhere in the ball
                bad.append(centre + tau * rng.uniform() ** (1 / dim) * unit_vector(rng, dim))
            else:  # outside the ball: moved to v
                bad.append(centre + tau * (1 + rng.exponential()) * unit_vector(rng, dim))
        yield {
            "mean_i": mean_i,
            "centre": centre,
            "bad": np.stack(bad),
            "delta": delta,
            "gap": gap,
            "sigma": sigma,
        }


def _bad_terms(
    mean_i: FloatArray,
    centre: FloatArray,
    bad: FloatArray,
    delta: float,
    gap: float,
    sigma: float,
) -> tuple[float, float]:
    """(||(1/|B_i|) sum_j y_j - E z_i||^2, c^2 + delta sigma Delta) for fixed bad points."""
    c2 = squared_norm(centre - mean_i)
    tau2 = radius2(c2, delta, sigma, gap)
    inside = ((bad - centre) ** 2).sum(1) <= tau2
    y = np.where(inside[:, None], bad, centre)
    return squared_norm(y.mean(0) - mean_i), tau2


@proposition(
    "thesis.ch2.lemma6",
    source=f"{THESIS}, §2.6 Lemma 6 (clustering error due to bad points) and its proof; "
    f"= {PAPER}, App. A.1, Lemma 5",
    statement="for any bad points (placed by the adversary, knowing v) and tau^2 = c^2 + "
    "delta_i sigma Delta: E||(1/|B_i|) sum_{j in B_i} y_j - E z_i||^2 <~ c^2 + delta_i sigma "
    "Delta; the constant is 4 ((tau + c)^2 <= 2 tau^2 + 2 c^2), approached by bad points at "
    "the ball's edge straight away from E z_i when delta_i sigma Delta << c^2",
    perturb={"constant": 3.0},
)
def _lemma6(constant: float = 4.0) -> Verdict:
    def holds(**pt: Any) -> bool:
        lhs, rhs = _bad_terms(**pt)
        return lhs <= constant * rhs * (1 + 1e-9)

    return on_points(
        holds,
        _bad_points(),
        f"||mean of the thresholded bad points - E z_i||^2 <= {constant} (c^2 + delta sigma Delta)",
        drawn="first two bad points at the ball's edge straight away from E z_i = 0 with "
        "c = 1 and delta sigma Delta = 1e-4, 1e-2, 1, and with c = 0; then seeded (seed 6) "
        "300 configurations in R^1..R^3: sigma log-uniform in [0.1, 10], c/sigma "
        "log-uniform in [1e-3, 1e2] (c = 0 for one in ten), delta uniform in [0.01, 1], "
        "delta Delta/sigma log-uniform in [1e-2, 1e3], 1-5 bad points each at the edge away "
        "from E z_i, uniform in the ball, or outside it (moved to v)",
        hypothesis=lambda delta, sigma, **_: 0 < delta <= 1 and sigma > 0,
    )


# --------------------------------------------------------------------------- out-of-cluster (Lemma 5)


def _out_of_cluster_points() -> Iterator[dict[str, Any]]:
    """(law of an out-of-cluster z_j, E z_i, centre v, delta, Delta, sigma)."""
    rng = np.random.default_rng(5)
    for k in range(300):
        dim = 1 + k % 3
        sigma = 10 ** float(rng.uniform(-1, 1))
        c = sigma * 10 ** float(rng.uniform(-3, 1)) * (k % 10 != 0)
        delta = float(rng.uniform(0.01, 1.0))
        gap = gap_floor(c * c, delta, sigma) * (1 + 10 ** float(rng.uniform(-3, 1)))
        mean_i = np.zeros(dim)
        centre = c * unit_vector(rng, dim)
        mean_j = gap * (1 + float(rng.uniform(0, 0.5)) * (k % 2)) * unit_vector(rng, dim)
        var = sigma**2 * float(rng.uniform(0.2, 1.0))
        if k % 3 == 0:  # random atoms, scaled to variance var
            law = random_law(rng, dim)
            atoms = mean_j + (law.atoms - law.mean) * math.sqrt(var / law.variance)
            probs = law.probs
        else:  # mass at the ball's point nearest E z_j, the rest beyond E z_j
            tau = math.sqrt(radius2(c * c, delta, sigma, gap))
            w = centre + tau * (mean_j - centre) / np.linalg.norm(mean_j - centre)
            p = var / (var + squared_norm(w - mean_j))
            atoms = np.stack([w, (mean_j - p * w) / (1 - p)])
            probs = np.array([p, 1 - p])
        yield {
            "atoms": atoms,
            "probs": probs,
            "mean_i": mean_i,
            "centre": centre,
            "delta": delta,
            "gap": gap,
            "sigma": sigma,
        }


def _out_of_cluster_hypothesis(
    atoms: FloatArray,
    probs: FloatArray,
    mean_i: FloatArray,
    centre: FloatArray,
    delta: float,
    gap: float,
    sigma: float,
) -> bool:
    """A2 and A3 for z_j, delta in (0, 1], and the proof's Delta^2 >= 16(tau^2 + c^2 + sigma^2)."""
    law = PointLaw(atoms, probs)
    c2 = squared_norm(centre - mean_i)
    return (
        0 < delta <= 1
        and law.variance <= sigma**2 * (1 + 1e-12)
        and squared_norm(law.mean - mean_i) >= gap**2 * (1 - 1e-12)
        and gap**2 >= 16 * (radius2(c2, delta, sigma, gap) + c2 + sigma**2) * (1 - 1e-12)
    )


def _out_of_cluster_terms(
    atoms: FloatArray,
    probs: FloatArray,
    mean_i: FloatArray,
    centre: FloatArray,
    delta: float,
    gap: float,
    sigma: float,
) -> tuple[float, float]:
    """(E||y_j - E z_i||^2, (1 + delta/2 + sigma^2/(delta Delta^2)) c^2 + sigma^3/Delta)."""
    c2 = squared_norm(centre - mean_i)
    y = clipped(PointLaw(atoms, probs), centre, math.sqrt(radius2(c2, delta, sigma, gap)))
    lhs = float(y.probs @ ((y.atoms - mean_i) ** 2).sum(1))
    return lhs, (1 + delta / 2 + sigma**2 / (delta * gap**2)) * c2 + sigma**3 / gap


@proposition(
    "thesis.ch2.lemma5",
    source=f"{THESIS}, §2.6 Lemma 5 (bound T_3) and its proof; = {PAPER}, App. A.1, Lemma 4",
    statement="for an out-of-cluster good point j !~ i (||E z_j - E z_i|| >= Delta, variance "
    "<= sigma^2), tau^2 = c^2 + delta_i sigma Delta and the proof's Delta^2 >~ tau^2 + c^2 + "
    "sigma^2 (read Delta^2 >= 16(tau^2 + c^2 + sigma^2)): E||y_j - E z_i||^2 <~ (1 + delta_i/2 "
    "+ sigma^2/(delta_i Delta^2)) c^2 + sigma^3/Delta; the constant is 16 (Chebyshev: "
    "P(z_j in the ball) <= 4 sigma^2/Delta^2)",
    perturb={"constant": 0.5},
)
def _lemma5(constant: float = 16.0) -> Verdict:
    def holds(**pt: Any) -> bool:
        lhs, rhs = _out_of_cluster_terms(**pt)
        return lhs <= constant * rhs * (1 + 1e-9)

    return on_points(
        holds,
        _out_of_cluster_points(),
        f"E||y_j - E z_i||^2 <= {constant} ((1 + delta/2 + sigma^2/(delta Delta^2)) c^2 + "
        "sigma^3/Delta)",
        drawn="seeded (seed 5) 300 out-of-cluster laws in R^1..R^3 with E z_i = 0: sigma "
        "log-uniform in [0.1, 10], c/sigma log-uniform in [1e-3, 10] (c = 0 for one in ten), "
        "delta uniform in [0.01, 1], Delta from its floor sqrt(16(tau^2 + c^2 + sigma^2)) to "
        "11 times it (log-uniform excess), ||E z_j|| = Delta or up to 1.5 Delta, variance "
        "uniform in [0.2, 1] sigma^2; a third on random atoms, two thirds adversarial (the "
        "variance budget spent on an atom at the ball's point nearest E z_j)",
        hypothesis=_out_of_cluster_hypothesis,
    )
