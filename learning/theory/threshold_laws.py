r"""Discrete point laws for the lemmas behind Theorem 1 of Werner (2024), ch. 2, and their step.

One step of Threshold-Clustering, eq. (2.4), moves a point :math:`z` to :math:`y =
z\,1(\lVert z - v\rVert \le \tau) + v\,1(\lVert z - v\rVert > \tau)`. This module holds
the discrete laws of points (:class:`PointLaw`), the law of a thresholded point
(:func:`clipped`), the proofs' radius :math:`\tau^2 = c^2 + \delta_i\sigma\Delta`
(:func:`radius2`), the laws the checks are built from (:func:`random_law`,
:func:`centred_law`, :func:`heavy_tail`, :func:`one_sided`), the least separation the proofs allow
(:func:`gap_floor`), the exact error of the mean of all good thresholded points
(:func:`good_terms`), and the symbols of the lemmas' right sides. The statements, Lemmas 2-6,
are registered in :mod:`learning.theory.ch2_threshold_propositions` and
:mod:`learning.theory.ch2_lemma2_propositions`.

References
----------
M. Werner, *Collaborative Learning: Aligning Goals and Outcomes* (PhD thesis, UC Berkeley,
2024), ch. 2, eq. (2.4) and §2.6, Lemmas 2-6. Werner, He, Jordan, Jaggi, Karimireddy,
"Provably Personalized and Robust Federated Learning" (TMLR 2023), App. A.1, Lemmas 1-5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from learning.theory.clustering import FloatArray

__all__ = [
    "C2",
    "DELTA",
    "GAP",
    "SIGMA",
    "M",
    "N",
    "PointLaw",
    "centred_law",
    "clipped",
    "gap_floor",
    "good_terms",
    "heavy_tail",
    "one_sided",
    "radius2",
    "random_law",
    "squared_norm",
    "unit_vector",
]

#: The symbols of the lemmas' right sides: :math:`c^2`, :math:`\sigma`, :math:`\delta_i`,
#: :math:`\Delta`, :math:`n_i` and the number :math:`m` of out-of-cluster points.
C2, SIGMA, DELTA, GAP, N, M = sp.symbols("c2 sigma delta Delta n m", positive=True)


@dataclass(frozen=True, slots=True)
class PointLaw:
    """A discrete law of a point: ``atoms`` ``(m, d)`` with probabilities ``probs`` ``(m,)``."""

    atoms: FloatArray
    probs: FloatArray

    @property
    def mean(self) -> FloatArray:
        r""":math:`\mathbb E z`."""
        return np.asarray(self.probs @ self.atoms, dtype=np.float64)

    @property
    def variance(self) -> float:
        r""":math:`\mathbb E\lVert z - \mathbb E z\rVert^2`, summed over the coordinates."""
        return float(self.probs @ ((self.atoms - self.mean) ** 2).sum(1))


def clipped(law: PointLaw, centre: FloatArray, radius: float) -> PointLaw:
    r"""The law of one thresholded point (Werner 2024, eq. (2.4)).

    :math:`y = z\,1(\lVert z - v\rVert \le \tau) + v\,1(\lVert z - v\rVert > \tau)` for
    :math:`z` drawn from ``law``, :math:`v` = ``centre`` and :math:`\tau` = ``radius``.
    """
    inside = np.linalg.norm(law.atoms - centre, axis=1) <= radius
    return PointLaw(np.where(inside[:, None], law.atoms, centre), law.probs)


def radius2(c2: float, delta: float, sigma: float, gap: float) -> float:
    r"""The proofs' squared radius :math:`\tau^2 = c^2 + \delta_i\sigma\Delta`.

    References
    ----------
    Werner (2024), ch. 2, §2.6, notation of the proof of Theorem 1 (there with
    :math:`\approx`); Werner et al. (TMLR 2023), App. A.1.
    """
    return c2 + delta * sigma * gap


def squared_norm(x: FloatArray) -> float:
    r""":math:`\lVert x\rVert^2`, summed over every entry."""
    return float(np.sum(np.asarray(x) ** 2))


def unit_vector(rng: np.random.Generator, dim: int) -> FloatArray:
    r"""A unit vector of :math:`\mathbb R^{dim}` in a uniformly random direction."""
    u = rng.standard_normal(dim)
    return np.asarray(u / np.linalg.norm(u), dtype=np.float64)


def random_law(rng: np.random.Generator, dim: int) -> PointLaw:
    """A law on 2-5 Gaussian atoms of scale 0.1, 1 or 3 with Dirichlet weights."""
    size = int(rng.integers(2, 6))
    scale = float(rng.choice([0.1, 1.0, 3.0]))
    return PointLaw(scale * rng.standard_normal((size, dim)), rng.dirichlet(np.ones(size)))


def centred_law(
    rng: np.random.Generator, dim: int, size: int, variance: float
) -> tuple[FloatArray, FloatArray]:
    """``size`` Gaussian atoms with Dirichlet weights, centred and scaled to ``variance``.

    Returns the atoms ``(size, dim)`` and their probabilities ``(size,)``.
    """
    atoms = rng.standard_normal((size, dim))
    probs = rng.dirichlet(np.ones(size))
    atoms = atoms - probs @ atoms
    return atoms * math.sqrt(variance / float(probs @ (atoms**2).sum(1))), probs


def heavy_tail(dim: int, ratio: float) -> PointLaw:
    r"""A law of mean 0 and variance 1 whose variance sits in two atoms far out.

    Atoms :math:`\pm a e_1` with probability :math:`p/2` each and 0 otherwise, :math:`p = 1/(2\,\mathrm{ratio})`, :math:`a = 1/\sqrt p`; with :math:`c = 0`
    and :math:`\delta\Delta/\sigma` = ``ratio`` the two outer atoms lie outside the ball.
    """
    p = 1.0 / (2.0 * ratio)
    a = 1.0 / math.sqrt(p)
    e = np.zeros(dim)
    e[0] = a
    return PointLaw(np.stack([e, -e, np.zeros(dim)]), np.array([p / 2, p / 2, 1 - p]))


def one_sided(dim: int, reach: float) -> PointLaw:
    r"""A law of mean 0 and variance 1 with one atom just past ``reach`` on one side.

    The atom :math:`a = (1 + 10^{-9})\,\mathrm{reach}` on the first axis has the largest
    probability a variance of 1 allows, :math:`q = 1/(a^2 + 1)`; the rest sits at
    :math:`-1/a`.
    """
    a = reach * (1 + 1e-9)
    q = 1.0 / (a * a + 1)
    e = np.zeros(dim)
    e[0] = 1.0
    return PointLaw(np.stack([a * e, -e / a]), np.array([q, 1 - q]))


def gap_floor(c2: float, delta: float, sigma: float, scale: float = 16.0) -> float:
    r"""The least :math:`\Delta` with :math:`\Delta^2 \ge C(\tau^2 + c^2 + \sigma^2)`, :math:`C` = ``scale``.

    With :math:`\tau^2 = c^2 + \delta\sigma\Delta` it is the positive root of
    :math:`\Delta^2 - C\delta\sigma\Delta - C(2c^2 + \sigma^2)`.
    """
    b = scale * delta * sigma / 2
    return b + math.sqrt(b * b + scale * (2 * c2 + sigma**2))


def good_terms(
    in_atoms: FloatArray,
    in_probs: FloatArray,
    n: int,
    out_atoms: FloatArray,
    out_probs: FloatArray,
    m: int,
    centre: FloatArray,
    gap: float,
    sigma: float,
) -> dict[str, float]:
    r"""The left side of Lemma 2 with independent points, exactly, and its pieces.

    :math:`\mathbb E\lVert \bar y - \mathbb E z_i\rVert^2 = \lVert \mathbb E\bar y - \mathbb E
    z_i\rVert^2 + \sum_j \operatorname{Var} y_j/|\mathcal G_i|^2`, :math:`\delta_i =
    n_i/|\mathcal G_i|`.
    """
    inside, outside = PointLaw(in_atoms, in_probs), PointLaw(out_atoms, out_probs)
    mean_i = inside.mean
    c2 = squared_norm(centre - mean_i)
    delta = n / (n + m)
    tau = math.sqrt(radius2(c2, delta, sigma, gap))
    y_in, y_out = clipped(inside, centre, tau), clipped(outside, centre, tau)
    bias = (n * (y_in.mean - mean_i) + m * (y_out.mean - mean_i)) / (n + m)
    lhs = squared_norm(bias) + (n * y_in.variance + m * y_out.variance) / (n + m) ** 2
    return {"lhs": lhs, "c2": c2, "delta": delta}
