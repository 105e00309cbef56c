r"""One Threshold-Clustering step on independent discrete point laws, with exact moments.

The lemmas that bound the clustering error inside the proofs of Theorems 3 and 4 of
Werner (2024), ch. 2, §2.6 (= Werner, He, Jordan, Jaggi, Karimireddy, TMLR 2023, App. A.3
and A.4) look at one step of eq. (2.4) from client :math:`i`'s side: a centre :math:`v`, a
radius :math:`\tau` and the clipped points

.. math::

    y_j = z_j\,1(\lVert z_j - v\rVert \le \tau) + v\,1(\lVert z_j - v\rVert > \tau),

where :math:`z_j` is client :math:`j`'s gradient :math:`g_j(x_{i,t-1})` (Theorem 3) or
momentum :math:`m_{j,t}` (Theorem 4). A :class:`ThresholdStep` holds the good points as
independent discrete laws (the proofs' resampling assumption), the Byzantine points as fixed
vectors and the centre on finitely many atoms independent of the points (a deterministic
centre is one atom), so every expectation the lemmas name is a finite sum.

References
----------
M. Werner, *Collaborative Learning: Aligning Goals and Outcomes*, PhD thesis, UC Berkeley
(2024), ch. 2, §2.6, Lemmas 11-13 and 15-20.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from econ.propositions import Verdict, refuted
from learning.theory.clustering import FloatArray

__all__ = ["RADIUS_CONSTANTS", "ThresholdStep", "clipped_atoms", "over_radii", "rounded"]

#: the constants K of the radius tau^2 = K (c^2 + ...) over which the printed "tau^2 ~ ..."
#: is read
RADIUS_CONSTANTS = (1.0, 4.0, 16.0)


def over_radii(
    check: Callable[[float], Verdict], constants: Iterable[float], *, refute_all: bool
) -> Verdict:
    r"""A statement with the radius :math:`\tau^2 \approx \dots` read as :math:`\tau^2 = K(\dots)`, over ``constants``.

    With ``refute_all`` (a printed statement) it is refuted only if ``check(K)`` refutes it
    for every :math:`K`; otherwise the first reading under which it holds is returned, named.
    Without it (a statement of the toolkit) it holds only if it holds for every :math:`K`,
    and the first failing reading is returned.
    """
    verdicts = [(k, check(k)) for k in constants]
    decisive = [(k, v) for k, v in verdicts if v.holds is refute_all]
    if decisive:
        k, v = decisive[0]
        return replace(v, evidence=f"with tau^2 = K(...), K = {k:g}: {v.evidence}")
    if not refute_all:
        ks = ", ".join(f"{k:g}" for k, _ in verdicts)
        first = verdicts[0][1]
        return replace(first, evidence=f"for each K = {ks} (tau^2 = K(...)): {first.evidence}")
    shown = "; ".join(f"K = {k:g}: {v.evidence}" for k, v in verdicts)
    k, last = verdicts[-1]
    return refuted(
        f"fails for each radius constant K (tau^2 = K(...)): {shown}",
        {"radius_constant": k, **(last.counterexample or {})},
    )


def clipped_atoms(atoms: FloatArray, centre: FloatArray, radius: float) -> FloatArray:
    r"""The atoms of :math:`y` (eq. (2.4)).

    Each atom of :math:`z` within ``radius`` of ``centre`` stays, every other one moves to
    ``centre``. The last axis is the coordinate axis; ``atoms`` ``(..., k, d)`` and
    ``centre`` ``(..., 1, d)`` broadcast, so many centres clip their own atoms at once.
    """
    inside = np.linalg.norm(atoms - centre, axis=-1) <= radius
    return np.asarray(np.where(inside[..., None], atoms, centre))


def rounded(value: Any) -> Any:
    """Floats (and arrays of them) to 6 significant digits, as plain Python."""
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        return float(f"{float(array):.6g}")
    return [rounded(v) for v in array]


@dataclass(frozen=True, repr=False)
class ThresholdStep:
    r"""One clipping step seen from client 0, with its good and bad points.

    Attributes
    ----------
    means : ndarray (n_good, d)
        :math:`\mathbb E_x z_j` of the good points; row 0 is client :math:`i` itself.
    offsets : ndarray (n_good, k, d)
        The atoms of :math:`z_j - \mathbb E_x z_j` (mean zero under ``probs``).
    probs : ndarray (n_good, k)
        Their probabilities.
    clusters : ndarray (n_good,)
        The cluster of each good point; :math:`j \sim i` iff ``clusters[j] == clusters[0]``.
    bad : ndarray (n_bad, d)
        The Byzantine points (any vectors).
    centre : ndarray (d,) or (S, d)
        The current centre :math:`v_{l-1}`, independent of the points: one vector, or the
        atoms of its law.
    radius : float
        :math:`\tau_l`.
    centre_probs : ndarray (S,) or None
        The probabilities of the centre's atoms (``None``: a deterministic centre).
    """

    means: FloatArray
    offsets: FloatArray
    probs: FloatArray
    clusters: NDArray[np.int64]
    bad: FloatArray
    centre: FloatArray
    radius: float
    centre_probs: FloatArray | None = None

    def to_dict(self) -> dict[str, Any]:
        """What defines the step and its main moments, rounded to 6 significant digits."""
        return {
            "n_good": self.n_good,
            "n_i": self.n_i,
            "n_bad": int(self.bad.shape[0]),
            "means": rounded(self.means),
            "noise_atoms_of_i": rounded(self.offsets[0]),
            "noise_probs": rounded(self.probs[0]),
            "bad": rounded(self.bad),
            "centre": rounded(self.centre),
            "centre_probs": None if self.centre_probs is None else rounded(self.centre_probs),
            "radius": rounded(self.radius),
            "c2": rounded(self.c2),
            "rho2": rounded(self.rho2),
        }

    def __repr__(self) -> str:
        """The summary of :meth:`to_dict`."""
        return f"{type(self).__name__}({self.to_dict()})"

    @property
    def n_good(self) -> int:
        r""":math:`|\mathcal G_i|`."""
        return int(self.means.shape[0])

    @property
    def n_total(self) -> int:
        r""":math:`N = |\mathcal G_i| + |\mathcal B_i|`."""
        return self.n_good + int(self.bad.shape[0])

    @cached_property
    def same(self) -> NDArray[np.bool_]:
        r"""The good points with :math:`j \sim i` (client 0 included)."""
        return np.asarray(self.clusters == self.clusters[0])

    @property
    def n_i(self) -> int:
        """:math:`n_i`, the good points of client 0's cluster."""
        return int(self.same.sum())

    @property
    def delta(self) -> float:
        r""":math:`\delta_i = n_i / N`."""
        return self.n_i / self.n_total

    @cached_property
    def target(self) -> FloatArray:
        r""":math:`\mathbb E_x \bar z_i`, the mean over the good points of client 0's cluster."""
        return np.asarray(self.means[self.same].mean(axis=0))

    @cached_property
    def centres(self) -> FloatArray:
        """The atoms of the centre's law, ``(S, d)``."""
        return np.asarray(np.atleast_2d(self.centre), dtype=float)

    @cached_property
    def weights(self) -> FloatArray:
        """The probabilities of :attr:`centres`, ``(S,)``."""
        if self.centre_probs is None:
            return np.ones(1)
        return np.asarray(self.centre_probs, dtype=float)

    @property
    def c2(self) -> float:
        r""":math:`c^2 = \mathbb E\lVert v - \mathbb E_x \bar z_i\rVert^2`."""
        return float(self.weights @ np.sum((self.centres - self.target) ** 2, axis=1))

    @cached_property
    def variances(self) -> FloatArray:
        r""":math:`\mathbb E\lVert z_j - \mathbb E_x z_j\rVert^2` of each good point."""
        return np.asarray(np.einsum("jk,jkd->j", self.probs, self.offsets**2))

    @property
    def rho2(self) -> float:
        r""":math:`\rho^2`: the largest variance of a good point."""
        return float(self.variances.max())

    @cached_property
    def clipped(self) -> FloatArray:
        """The atoms of every good :math:`y_j` at each centre atom, ``(S, n_good, k, d)``."""
        atoms = (self.means[:, None, :] + self.offsets)[None]
        return clipped_atoms(atoms, self.centres[:, None, None, :], self.radius)

    @cached_property
    def y_means(self) -> FloatArray:
        r""":math:`\mathbb E y_j` of every good point (over the points and the centre)."""
        return np.asarray(np.einsum("s,jk,sjkd->jd", self.weights, self.probs, self.clipped))

    @cached_property
    def y_variances(self) -> FloatArray:
        r""":math:`\mathbb E\lVert y_j - \mathbb E y_j\rVert^2` of every good point."""
        return self.second_moments(self.y_means[None, :, None, :])

    def second_moments(self, about: FloatArray) -> FloatArray:
        r""":math:`\mathbb E\lVert y_j - a\rVert^2` of every good point about the point ``about``."""
        dev = self.clipped - about
        return np.asarray(np.einsum("s,jk,sjkd->j", self.weights, self.probs, dev**2))

    @property
    def bias2(self) -> FloatArray:
        r""":math:`\lVert\mathbb E(y_j - z_j)\rVert^2` of every good point."""
        return np.asarray(np.sum((self.y_means - self.means) ** 2, axis=1))

    @property
    def clipped_variance(self) -> float:
        r"""The :math:`\mathcal T_2` sum of independent points.

        :math:`\mathbb E\lVert\frac{1}{|\mathcal G_i|}\sum_{j \sim i} (y_j - \mathbb E
        y_j)\rVert^2` with the terms independent (the proofs' resampling assumption).
        """
        return float(self.y_variances[self.same].sum()) / self.n_good**2

    @property
    def good_error(self) -> float:
        r"""The good points' error; given the centre the points are independent.

        :math:`\mathbb E\lVert\frac{1}{|\mathcal G_i|}\sum_{j \in \mathcal G_i} y_j -
        \mathbb E_x \bar z_i\rVert^2`: at each centre atom the squared bias plus the
        summed variances, averaged over the centre's law.
        """
        given = np.einsum("jk,sjkd->sjd", self.probs, self.clipped)  # E(y_j | v)
        bias = given.mean(axis=1) - self.target
        dev = self.clipped - given[:, :, None, :]
        spread = np.einsum("jk,sjkd->s", self.probs, dev**2) / self.n_good**2
        return float(self.weights @ (np.sum(bias**2, axis=1) + spread))

    @property
    def bad_error(self) -> float:
        r"""The Byzantine points' error (0 without Byzantine points).

        :math:`\mathbb E\lVert\frac{1}{|\mathcal B_i|}\sum_{j \in \mathcal B_i} y_j -
        \mathbb E_x \bar z_i\rVert^2`, over the centre's law.
        """
        if self.bad.shape[0] == 0:
            return 0.0
        y = clipped_atoms(self.bad[None], self.centres[:, None, :], self.radius)
        gap = y.mean(axis=1) - self.target
        return float(self.weights @ np.sum(gap**2, axis=1))
