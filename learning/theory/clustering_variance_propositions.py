r"""The variance lemmas of Werner (2024), ch. 2, §2.6 (= Werner et al., TMLR 2023, App. A), registered.

The momentum of Lemma 14, the mini-batch of Lemma 7, and the thresholded point of Lemma 4.
Lemma 4's proof calls the thresholding of Threshold-Clustering contractive; a point law
whose mass splits at the ball's edge has a clipped variance far above :math:`\sigma^2`, and
the bound that holds is :math:`\sigma^2 + \lVert v - \mathbb E z\rVert^2`
(``thesis.ch2.lemma4``, corrected as ``thesis.ch2.lemma4.corrected``). The variances
themselves are computed in :mod:`learning.theory.clustering_variance`; the overview of the
chapter's statements is :mod:`learning.theory.clustering_propositions`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from econ.propositions import (
    Verdict,
    all_zero,
    on_points,
    proposition,
    proved,
    refuted,
)
from learning.theory.clustering import PAPER, THESIS, FloatArray
from learning.theory.clustering_propositions import SymbolicPair
from learning.theory.clustering_variance import clipped_moments

# --------------------------------------------------------------------------- Lemmas 14 and 7


def _printed_momentum_bound(alpha: sp.Expr, sigma2: sp.Expr) -> sp.Expr:
    """Lemma 14: alpha sigma^2."""
    return alpha * sigma2


@proposition(
    "thesis.ch2.lemma14",
    source=f"{THESIS}, §2.6 Lemma 14 and its proof; = {PAPER}, App. A.4, Lemma 13",
    statement="if E||g_i(x) - E_x g_i(x)||^2 <= sigma^2 for all x, the momentum "
    "m_t = alpha g_t + (1-alpha) m_{t-1} (m_0 fixed) has E||m_t - E_x m_t||^2 <= alpha sigma^2 "
    "for all t, alpha in (0, 1]",
    perturb={"bound": lambda a, s: a**2 * s},
)
def _lemma14(bound: SymbolicPair = _printed_momentum_bound) -> Verdict:
    alpha, s2 = sp.symbols("alpha sigma2", positive=True)
    t = sp.Symbol("t", integer=True, nonnegative=True)
    stationary = alpha * s2 / (2 - alpha)
    v_iid = stationary * (1 - (1 - alpha) ** (2 * t))
    steps = all_zero(
        [
            (alpha**2 * s2 + (1 - alpha) ** 2 * stationary - stationary, "fixed point S"),
            (v_iid.subs(t, 0), "V_0 = 0"),
            (
                sp.expand(v_iid.subs(t, t + 1) - alpha**2 * s2 - (1 - alpha) ** 2 * v_iid),
                "iid variance sigma^2 follows the recursion with equality",
            ),
        ],
        "Lemma 14 recursion",
    )
    if not steps.holds:  # pragma: no cover - identities of the recursion
        return steps
    # V_t <= S for every admissible noise sequence (induction: the map v -> alpha^2 s +
    # (1-alpha)^2 v is increasing in s <= sigma^2 and v, and fixes S), and iid noise of
    # variance sigma^2 tends to S: the supremum over t and sequences is S. The bound holds iff
    # bound - S >= 0 on alpha in (0, 1].
    gap = sp.cancel(sp.together((bound(alpha, s2) - stationary) / s2))
    if gap.free_symbols - {alpha}:
        raise ValueError(f"the bound must be sigma^2 times a function of alpha, got {bound}")
    num, den = sp.fraction(gap)
    cuts = sorted(
        {sp.Integer(0), sp.Integer(1)}
        | {r for p in (num, den) for r in sp.Poly(p, alpha).real_roots() if 0 < r < 1}
    )
    probes = [(a + b) / 2 for a, b in itertools.pairwise(cuts)] + [sp.Integer(1)]
    for a_val in probes:
        if gap.subs(alpha, a_val) < 0:
            return refuted(
                "iid noise of variance sigma^2 drives the momentum variance to "
                "alpha sigma^2/(2 - alpha), above the bound",
                {
                    "alpha": float(a_val),
                    "sigma2": 1.0,
                    "stationary_variance": float(stationary.subs({alpha: a_val, s2: 1})),
                    "bound": float(bound(alpha, s2).subs({alpha: a_val, s2: 1})),
                },
            )
    return proved(
        "the variance recursion V_t <= alpha^2 sigma^2 + (1-alpha)^2 V_{t-1} is taken from the "
        "first two lines of the thesis's proof (the cross term vanishes because the round-t "
        "noise g_t - grad f(x_{t-1}) has mean 0 given the past, of which m_{t-1} is a "
        "function); from V_0 = 0 it stays below its fixed point S = alpha sigma^2/(2-alpha) "
        "(induction), which iid noise attains in the limit (sympy: the fixed point, V_0 and the "
        "iid recursion with equality); "
        f"(bound - S)/sigma^2 = {sp.factor(gap)} >= 0 on (0, 1] (sign between the real roots)"
    )


def _printed_batch_bound(sigma2: float, batch: int) -> float:
    """Lemma 7: sigma^2/|B|."""
    return sigma2 / batch


def _batch_points() -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(7)
    for k in range(48):
        atoms, batch, dim = 2 + k % 2, 1 + k % 4, 1 + k % 3
        identical = k % 3 != 0
        laws = []
        shared = (rng.normal(size=(atoms, dim)), rng.dirichlet(np.ones(atoms)))
        for _ in range(batch):
            laws.append(
                shared
                if identical
                else (rng.normal(size=(atoms, dim)), rng.dirichlet(np.ones(atoms)))
            )
        yield {"laws": laws}
    point_mass = (np.zeros((1, 2)), np.ones(1))
    yield {"laws": [point_mass] * 3}


def _batch_variance(laws: list[tuple[FloatArray, FloatArray]]) -> tuple[float, float]:
    """The exact variance of a batch mean, and the largest per-sample variance.

    ``(exact, max)``: the exact variance, by enumerating every batch, and the largest variance
    of one sample, for independent samples with the given discrete laws.
    """
    means = [p @ v for v, p in laws]
    variances = [float(p @ ((v - m) ** 2).sum(1)) for (v, p), m in zip(laws, means, strict=True)]
    total_mean = np.mean(means, axis=0)
    exact = 0.0
    for combo in itertools.product(*[range(len(p)) for _, p in laws]):
        weight = math.prod(float(laws[b][1][c]) for b, c in enumerate(combo))
        value = np.mean([laws[b][0][c] for b, c in enumerate(combo)], axis=0)
        exact += weight * float(((value - total_mean) ** 2).sum())
    return exact, max(variances)


@proposition(
    "thesis.ch2.lemma7",
    source=f"{THESIS}, §2.6 Lemma 7 and its proof; = {PAPER}, App. A.3, Lemma 6",
    statement="if each single-sample stochastic gradient has E_x||g_i(x; b) - E_x g_i(x; b)||^2 "
    "<= sigma^2 and the samples of a batch B are independent, the batch gradient has "
    "E_x||g_i(x) - E_x g_i(x)||^2 <= sigma^2/|B|",
    perturb={"bound": lambda s2, b: s2 / b**2},
)
def _lemma7(bound: Callable[[float, int], float] = _printed_batch_bound) -> Verdict:
    def holds(laws: list[tuple[FloatArray, FloatArray]]) -> bool:
        exact, sigma2 = _batch_variance(laws)
        return exact <= bound(sigma2, len(laws)) * (1 + 1e-12) + 1e-15

    return on_points(
        holds,
        _batch_points(),
        "exact variance of the batch mean (every batch enumerated) <= bound(max per-sample "
        "variance, |B|)",
        drawn="seeded (seed 7): 48 batches of |B| = 1..4 independent samples from discrete "
        "laws on 2 or 3 random atoms in R^1..R^3 (identical laws in two of three, different "
        "laws otherwise), then a batch of three point masses (sigma^2 = 0)",
    )


# --------------------------------------------------------------------------- Lemma 4


#: A point law inside Theorem 1's regime (c^2 <= sigma^2, its starting condition (v)) with
#: tau^2 >= c^2: z in {-3, -5/2, 3} w.p. (1/10, 7/10, 1/5), centre v = 3/4, radius 7/2; the
#: atom -3 lies outside the ball and moves to v.
_IN_REGIME: tuple[tuple[Fraction, ...], tuple[Fraction, ...], Fraction, Fraction] = (
    (Fraction(-3), Fraction(-5, 2), Fraction(3)),
    (Fraction(1, 10), Fraction(7, 10), Fraction(1, 5)),
    Fraction(3, 4),
    Fraction(7, 2),
)


def _clipped_exact(
    atoms: tuple[Fraction, ...], probs: tuple[Fraction, ...], centre: Fraction, radius: Fraction
) -> dict[str, Fraction]:
    """:func:`clipped_moments` of a law on the line, in exact rationals."""
    mean = sum((p * z for z, p in zip(atoms, probs, strict=True)), Fraction(0))
    y = [z if abs(z - centre) <= radius else centre for z in atoms]
    mean_y = sum((p * v for v, p in zip(y, probs, strict=True)), Fraction(0))
    return {
        "var_z": sum((p * (z - mean) ** 2 for z, p in zip(atoms, probs, strict=True)), Fraction(0)),
        "var_y": sum((p * (v - mean_y) ** 2 for v, p in zip(y, probs, strict=True)), Fraction(0)),
        "c2": (centre - mean) ** 2,
    }


def _lemma4_points() -> Iterator[dict[str, Any]]:
    line, weights, v, tau = _IN_REGIME
    yield {
        "atoms": np.array([[float(z)] for z in line]),
        "probs": np.array([float(p) for p in weights]),
        "centre": np.array([float(v)]),
        "radius": float(tau),
    }
    # z = 0 w.p. 0.9 and -0.1 w.p. 0.1 (sigma = 0.03), centre v = 1, and the proof's radius
    # tau^2 = c^2 + delta_i sigma Delta with delta_i = 1/2 and Delta = 20 sigma/delta_i: the
    # mass at 0 stays, the atom at -0.1 is moved to v
    atoms, probs, centre = np.array([[0.0], [-0.1]]), np.array([0.9, 0.1]), np.array([1.0])
    sigma = 0.03
    c2 = (1.0 + 0.01) ** 2
    yield {
        "atoms": atoms,
        "probs": probs,
        "centre": centre,
        "radius": math.sqrt(c2 + 0.5 * sigma * (20 * sigma / 0.5)),
    }
    # half the mass at 0 (inside), half at -0.01 (outside): y = 0 or v, Var y = 1/4
    yield {
        "atoms": np.array([[0.0], [-0.01]]),
        "probs": np.array([0.5, 0.5]),
        "centre": np.array([1.0]),
        "radius": 1.005,
    }
    rng = np.random.default_rng(4)
    for k in range(298):
        dim, size = 1 + k % 3, 2 + k % 4
        scale = float((0.1, 1.0, 3.0)[k % 3])
        yield {
            "atoms": scale * rng.normal(size=(size, dim)),
            "probs": rng.dirichlet(np.ones(size)),
            "centre": float(rng.choice([0.1, 1.0, 3.0])) * rng.normal(size=dim),
            "radius": float(rng.uniform(0.05, 5.0)),
        }


def _printed_clip_bound(var_z: float, c2: float) -> float:
    """Lemma 4's proof: E||y - Ey||^2 <= E||z - Ez||^2 ('contractivity')."""
    return var_z


def _corrected_clip_bound(var_z: float, c2: float) -> float:
    """E||y - Ey||^2 <= E||y - Ez||^2 <= sigma^2 + ||v - Ez||^2."""
    return var_z + c2


def _lemma4_check(bound: Callable[[float, float], float]) -> Verdict:
    def holds(atoms: FloatArray, probs: FloatArray, centre: FloatArray, radius: float) -> bool:
        m = clipped_moments(atoms, probs, centre, radius)
        return m["var_y"] <= bound(m["var_z"], m["c2"]) * (1 + 1e-9) + 1e-15

    return on_points(
        holds,
        _lemma4_points(),
        "the variance of a clipped point E||y - Ey||^2 is at most the stated bound, so that "
        "for n_i independent in-cluster points Lemma 4's sum is at most n_i bound/|G_i|^2",
        drawn="first a law inside Theorem 1's regime: z = -3, -5/2, 3 w.p. 1/10, 7/10, 1/5 "
        "with centre 3/4 and radius 7/2 (c^2 = 121/25 <= sigma^2 = 1989/400 <= tau^2); then "
        "the point law z = 0 (0.9), -0.1 (0.1) with centre 1 and the proof's radius "
        "tau^2 = c^2 + delta_i sigma Delta (delta_i = 1/2, Delta = 20 sigma/delta_i); the law "
        "z = 0, -0.01 (1/2 each) with centre 1 and radius 1.005; then seeded (seed 4) 298 "
        "discrete laws on 2-5 atoms in R^1..R^3 of scale 0.1, 1 or 3, "
        "centres of scale 0.1, 1 or 3, radii uniform in [0.05, 5]",
    )


@proposition(
    "thesis.ch2.lemma4",
    source=f"{THESIS}, §2.6 Lemma 4 and its proof ('contractivity of the thresholding "
    f"procedure'); = {PAPER}, App. A.1, Lemma 3; the same step closes thesis Lemmas 11 and 18 "
    "(paper Lemmas 10 and 17)",
    statement="with the in-cluster points independent (the proof's resampling assumption), "
    "E||(1/|G_i|) sum_{j ~ i} (y_j - E y_j)||^2 <= (n_i/|G_i|^2) sigma^2, because the "
    "thresholding is contractive: E||y_j - E y_j||^2 <= E||z_j - E z_j||^2 <= sigma^2",
    holds=False,
    perturb={"bound": _corrected_clip_bound},
)
def _lemma4_printed(bound: Callable[[float, float], float] = _printed_clip_bound) -> Verdict:
    verdict = _lemma4_check(bound)
    if verdict.holds:
        return verdict
    atoms, probs, centre, radius = _IN_REGIME
    m = _clipped_exact(atoms, probs, centre, radius)
    inside = m["c2"] <= m["var_z"] and m["c2"] <= radius**2
    if not (inside and m["var_y"] > bound(m["var_z"], m["c2"])):  # type: ignore[arg-type]
        return verdict
    ratio = m["var_y"] / m["var_z"]
    return refuted(
        f"{verdict.evidence}. The first counterexample lies inside Theorem 1's regime: for z = -3, -5/2, 3 w.p. "
        f"1/10, 7/10, 1/5, centre v = 3/4 and radius tau = 7/2, c^2 = {m['c2']} <= sigma^2 = "
        f"{m['var_z']} (the starting condition (v) of Theorem 1's proof) and tau^2 = "
        f"{radius**2} >= c^2 (checked in code), yet Var y = {m['var_y']}, Var y/sigma^2 = "
        f"{ratio} = {float(ratio):.4f} > 1 (exact rationals); laws with c^2 >> sigma^2 (the "
        "next points) give far larger ratios",
        {
            **(verdict.counterexample or {}),
            "inside_regime": {
                "atoms": [str(z) for z in atoms],
                "probs": [str(p) for p in probs],
                "centre": str(centre),
                "radius": str(radius),
                "c2": str(m["c2"]),
                "sigma2": str(m["var_z"]),
                "var_y": str(m["var_y"]),
                "ratio": str(ratio),
            },
        },
    )


@proposition(
    "thesis.ch2.lemma4.corrected",
    source=f"{THESIS}, §2.6: corrects the display of Lemma 4 and the second inequality of "
    "the display in its proof ('contractivity of the thresholding procedure'); = "
    f"{PAPER}, App. A.1, Lemma 3",
    statement="E||y_j - E y_j||^2 <= E||y_j - E z_j||^2 <= sigma^2 + c^2 with "
    "c^2 = ||v - E z_i||^2 (y lies at z inside the ball and at v outside), so the sum is at "
    "most (n_i/|G_i|^2)(sigma^2 + c^2), at most 2 sigma^2 while c^2 <= sigma^2 (Theorem 1's "
    "starting condition (v)); the c^2 term cannot be dropped (Var y reaches c^2/4 as "
    "sigma -> 0)",
    perturb={"bound": lambda var_z, c2: var_z + c2 / 8},
)
def _lemma4_corrected(bound: Callable[[float, float], float] = _corrected_clip_bound) -> Verdict:
    return _lemma4_check(bound)
