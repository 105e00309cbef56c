r"""Lemmas 15 and 16 of Werner (2024), ch. 2 (= paper Lemmas 14 and 15): Momentum-Clustering's error.

The proof of Theorem 4 (thesis §2.6, paper App. A.4) bounds the error of the centre that
Threshold-Clustering (Algorithm 3, eq. (2.4)) returns on the momenta
:math:`m_{j,t}` in two layers: Lemma 16 bounds one step's error due to the good momenta,

.. math::

    \mathbb E\Big\lVert \frac{1}{|\mathcal G_i|}\sum_{j \in \mathcal G_i} y_j -
    \mathbb E_x\bar m_{i,t}\Big\rVert^2 \lesssim (1 - \delta_i) c^2 +
    \frac{\rho^2}{n_i} + \frac{\rho^3}{\Delta},

and Lemma 15 unrolls the one-step bounds over :math:`l_t \ge \max(1, \log(\rho/\Delta) /
\log(1 - \delta_i/2))` steps into

.. math::

    \mathbb E\lVert v_{k_i, l_t} - \mathbb E_x\bar m_{i,t}\rVert^2 \lesssim
    \frac{\rho^2}{n_i} + \frac{\rho^3}{\Delta} + \beta_i\rho\Delta .

The checks read the radius :math:`\tau_l^2 \approx c_l^2 + \delta_i\rho\Delta` as
:math:`\tau_l^2 = K(c_l^2 + \delta_i\rho\Delta)` for :math:`K = 1, 4, 16` with
:math:`\Delta \ge 16K\rho/\delta_i`
(:math:`c_l^2 = \mathbb E\lVert v_{l-1} - \mathbb E_x\bar m_{i,t}\rVert^2`), Theorem 4's
:math:`\beta_i \lesssim \delta_i` as :math:`\beta_i \le \delta_i/4` (Lemma 16) and
:math:`\beta_i \le \delta_i/(4\sqrt K)` (Lemma 15), the proof's start
:math:`c_1^2 \lesssim \rho^2` as :math:`c_1^2 \le \rho^2`, and each ":math:`\lesssim`" of
a conclusion with a stated constant. One round :math:`t` is looked at (the time averages
are single terms), with :math:`\delta_i = n_i/N`, :math:`\beta_i = |\mathcal B_i|/N`,
:math:`\rho^2` the largest variance of a good momentum and :math:`\Delta` the least distance
from :math:`\mathbb E_x\bar m_{i,t}` to another cluster's mean (Assumption 9).

Lemma 16 is checked on one step with a centre independent of the momenta
(:class:`learning.theory.robust_step.ThresholdStep`, independent momenta). Lemma 15 is
checked on :class:`MomentumClusteringRun`: every step of Algorithm 3 on the same momenta, whose
joint law is enumerated (the multiset of iid draws of each law is multinomial), so
:math:`\mathbb E\lVert v_{l_t} - \mathbb E_x\bar m_{i,t}\rVert^2` is a finite sum; the
Byzantine momenta sit just inside the ball at every step, in a fixed direction.

Printed errors found here:

- Lemma 16 keeps only :math:`(1 - \delta_i)c^2` of the :math:`\delta_i c^2 + (1 -
  \delta_i)c^2` that step (vi) of its proof gives. A centre that is far with a small
  probability leaves no momentum in its ball, so the left side is about :math:`c^2` while
  the right side tends to 0 as :math:`\delta_i \to 1`, for every radius constant :math:`K`
  of :math:`\tau^2 = K(c^2 + \delta_i\rho\Delta)` (``thesis.ch2.lemma16``, checked for
  :math:`K = 1, 4, 16`). With :math:`c^2` kept whole and :math:`c^2 \le \rho^2` it holds
  (``thesis.ch2.lemma16.corrected``).
- Lemma 15's recursion :math:`c_{l+1}^2 \lesssim (1 - \delta_i/2)c_l^2 + E` unrolls to
  :math:`E\sum_q (1 - \delta_i/2)^q`, and step (iv) drops the sum (up to :math:`2/\delta_i`).
  The in-cluster clipping bias, of order :math:`\rho^2/\tau` per step
  (:math:`\mathcal T_1`, Lemma 17), accumulates to a fixed point with
  :math:`c^2 \approx \rho^3/(K\delta_i\Delta)`: the ratio to :math:`\rho^3/\Delta` grows
  like :math:`1/(K\delta_i)` for each :math:`K` (``thesis.ch2.lemma15``; corrected with :math:`\rho^3/(\delta_i\Delta)`
  in ``thesis.ch2.lemma15.corrected``).

References
----------
M. Werner, *Collaborative Learning: Aligning Goals and Outcomes*, PhD thesis, UC Berkeley
(2024), ch. 2, §2.6, Lemmas 15-17, Algorithm 3, eq. (2.4). M. Werner, L. He, M. Jordan,
M. Jaggi, S. P. Karimireddy, "Provably Personalized and Robust Federated Learning", TMLR
(2023), App. A.4, Lemmas 14-16.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np
from scipy.special import gammaln

from econ.propositions import Verdict, on_points, proposition, refuted
from learning.theory.clustering import PAPER, THESIS, FloatArray
from learning.theory.robust_momentum_propositions import SEPARATION, momentum_step
from learning.theory.robust_step import (
    RADIUS_CONSTANTS,
    ThresholdStep,
    clipped_atoms,
    over_radii,
    rounded,
)

__all__ = ["CompactStep", "MomentumClusteringRun", "multiset_law"]

#: Theorem 4's beta_i <~ delta_i, read as beta_i <= delta_i / BYZANTINE_SHARE
BYZANTINE_SHARE = 4.0
_T4 = f"{THESIS}, §2.6 'Proof of Theorem 4'"


def multiset_law(probs: FloatArray, count: int) -> tuple[FloatArray, FloatArray]:
    r"""The law of how many of ``count`` iid draws fall on each atom (multinomial).

    Returns the count vectors ``(c, k)`` and their probabilities
    :math:`\binom{n}{c_1 \dots c_k}\prod_a p_a^{c_a}`; vectors of probability zero (or
    below the smallest float) are left out.
    """
    probs = np.asarray(probs, float)
    rows = np.zeros((1, 0), dtype=np.int64)
    for _ in range(probs.size - 1):
        room = count - rows.sum(axis=1) + 1  # each row extends by 0, ..., count - its sum
        column = np.concatenate([np.arange(r) for r in room])
        rows = np.column_stack([np.repeat(rows, room, axis=0), column])
    counts = np.column_stack([rows, count - rows.sum(axis=1)]).astype(float)
    with np.errstate(divide="ignore"):
        logs = np.where(counts > 0, counts * np.log(probs), 0.0)
    log_p = gammaln(count + 1) - gammaln(counts + 1).sum(1) + logs.sum(1)
    weight = np.exp(log_p)
    keep = weight > 0
    return counts[keep], weight[keep]


@dataclass(frozen=True, repr=False)
class MomentumClusteringRun:
    r"""Threshold-Clustering from client :math:`i`'s side on momenta with exact laws.

    Attributes
    ----------
    laws : tuple of (atoms ``(k, d)``, probs ``(k,)``)
        The distinct laws of the good momenta; law 0 is client :math:`i`'s cluster (A8: its
        momenta are iid).
    counts : tuple of int
        How many iid momenta follow each law.
    clusters : tuple of int
        The cluster of each law; cluster 0 is client :math:`i`'s, and only law 0 has it.
    n_bad : int
        :math:`|\mathcal B_i|`, Byzantine momenta placed at
        :math:`v_{l-1} + \tau_l\,u` (just inside the ball) at every step.
    push : ndarray (d,)
        The unit direction :math:`u` of the Byzantine momenta.
    start : ndarray (d,)
        The initial centre :math:`v_0`.
    extra_steps : int
        Steps run beyond the least :math:`l_t` the hypothesis allows.
    radius_constant : float
        :math:`K` of the radius :math:`\tau_l^2 = K(c_l^2 + \delta_i\rho\Delta)`.
    """

    laws: tuple[tuple[FloatArray, FloatArray], ...]
    counts: tuple[int, ...]
    clusters: tuple[int, ...]
    n_bad: int
    push: FloatArray
    start: FloatArray
    extra_steps: int = 0
    radius_constant: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        """What defines the run and its constants, rounded to 6 significant digits."""
        return {
            "n_i": self.n_i,
            "N": self.n_total,
            "n_bad": self.n_bad,
            "law_of_i": {"atoms": rounded(self.laws[0][0]), "probs": rounded(self.laws[0][1])},
            "other_means": rounded([self._mean(k) for k in range(1, len(self.laws))]),
            "other_counts": list(self.counts[1:]),
            "start": rounded(self.start),
            "steps": self.steps,
            "rho": rounded(math.sqrt(self.rho2)),
            "Delta": rounded(self.gap),
            "delta_i": rounded(self.delta),
            "K": self.radius_constant,
            "error": rounded(self.error),
        }

    def __repr__(self) -> str:
        """The summary of :meth:`to_dict`."""
        return f"{type(self).__name__}({self.to_dict()})"

    def _mean(self, k: int) -> FloatArray:
        atoms, probs = self.laws[k]
        return np.asarray(probs @ atoms, dtype=float)

    @property
    def n_i(self) -> int:
        """:math:`n_i`, the good momenta of client :math:`i`'s cluster."""
        return sum(n for n, c in zip(self.counts, self.clusters, strict=True) if c == 0)

    @property
    def n_total(self) -> int:
        r""":math:`N = |\mathcal G_i| + |\mathcal B_i|`."""
        return sum(self.counts) + self.n_bad

    @property
    def delta(self) -> float:
        r""":math:`\delta_i = n_i/N`."""
        return self.n_i / self.n_total

    @property
    def beta(self) -> float:
        r""":math:`\beta_i = |\mathcal B_i|/N`."""
        return self.n_bad / self.n_total

    @cached_property
    def target(self) -> FloatArray:
        r""":math:`\mathbb E_x\bar m_{i,t}`, the mean of law 0."""
        return self._mean(0)

    @cached_property
    def rho2(self) -> float:
        r""":math:`\rho^2`: the largest variance of a good momentum."""
        return max(
            float(probs @ ((atoms - probs @ atoms) ** 2).sum(1)) for atoms, probs in self.laws
        )

    @cached_property
    def gap(self) -> float:
        r""":math:`\Delta`: the least distance from the target to another cluster's mean."""
        return min(
            float(np.linalg.norm(self._mean(k) - self.target))
            for k, c in enumerate(self.clusters)
            if c != 0
        )

    @property
    def c1_2(self) -> float:
        r""":math:`c_1^2 = \lVert v_0 - \mathbb E_x\bar m_{i,t}\rVert^2`."""
        return float(np.sum((self.start - self.target) ** 2))

    @property
    def steps(self) -> int:
        r""":math:`l_t`: the least :math:`l \ge \max(1, \log(\rho/\Delta)/\log(1 - \delta_i/2))`, plus ``extra_steps``."""
        ratio = math.log(math.sqrt(self.rho2) / self.gap) / math.log(1 - self.delta / 2)
        return math.ceil(max(1.0, ratio)) + self.extra_steps

    def hypotheses(self) -> bool:
        r"""A8 (one law for cluster 0), :math:`\Delta \ge 16K\rho/\delta_i`, :math:`\beta_i \le \delta_i/(4\sqrt K)`, :math:`c_1^2 \le \rho^2`.

        The Byzantine share shrinks with :math:`\sqrt K`: they move the centre by
        :math:`\beta_i\tau_l` a step against a pull of :math:`\delta_i c_l`, and with
        :math:`\beta_i = \delta_i/4`, :math:`K = 16` the centre runs away.
        """
        tol = 1 + 1e-12
        return (
            self.clusters.count(0) == 1
            and self.clusters[0] == 0
            and self.rho2 > 0
            and self.gap * tol
            >= SEPARATION * self.radius_constant * math.sqrt(self.rho2) / self.delta
            and self.beta * BYZANTINE_SHARE * math.sqrt(self.radius_constant) <= self.delta * tol
            and self.c1_2 <= self.rho2 * tol
        )

    @cached_property
    def error(self) -> float:
        r""":math:`\mathbb E\lVert v_{l_t} - \mathbb E_x\bar m_{i,t}\rVert^2`, summed over the joint law.

        Each configuration is one multiset of the good momenta (the update (2.4) sees only
        the multiset); all of them run the :math:`l_t` steps together, with the radius
        :math:`\tau_l^2 = K(c_l^2 + \delta_i\rho\Delta)` and :math:`c_l^2` the expectation over
        the configurations.
        """
        atoms = np.concatenate([a for a, _ in self.laws])[None]
        mult, weight = np.ones((1, 0)), np.ones(1)
        for (_, probs), count in zip(self.laws, self.counts, strict=True):
            rows, p = multiset_law(probs, count)
            mult = np.concatenate(
                [np.repeat(mult, len(rows), 0), np.tile(rows, (len(mult), 1))], axis=1
            )
            weight = np.repeat(weight, len(rows)) * np.tile(p, len(weight))
        base = self.delta * math.sqrt(self.rho2) * self.gap
        v = np.repeat(np.asarray(self.start, float)[None], len(weight), axis=0)
        for _ in range(self.steps):
            c2 = float(weight @ ((v - self.target) ** 2).sum(1))
            tau = math.sqrt(self.radius_constant * (c2 + base))
            y = clipped_atoms(atoms, v[:, None, :], tau)
            inside = v + tau * (1 - 1e-12) * self.push
            v = (np.einsum("cm,cmd->cd", mult, y) + self.n_bad * inside) / self.n_total
        return float(weight @ ((v - self.target) ** 2).sum(1))


def _grown(verdict: Verdict, what: str, ratios: list[float]) -> Verdict:
    """``verdict`` with the ratios of the two sides along a refuting family appended."""
    if verdict.holds:
        return verdict
    shown = ", ".join(f"{r:.4g}" for r in ratios)
    return refuted(f"{verdict.evidence}; {what}: {shown}", verdict.counterexample or {})


# --------------------------------------------------------------------------- Lemma 16


class CompactStep(ThresholdStep):
    """A :class:`ThresholdStep` whose summary lists each distinct good mean once, with its count."""

    @classmethod
    def of(cls, step: ThresholdStep) -> CompactStep:
        """The same step, summarised compactly."""
        return cls(**{f.name: getattr(step, f.name) for f in fields(step)})

    def to_dict(self) -> dict[str, Any]:
        """The summary of :meth:`ThresholdStep.to_dict` with the means grouped."""
        distinct, counts = np.unique(self.means, axis=0, return_counts=True)
        return {
            **super().to_dict(),
            "means": {"distinct": rounded(distinct), "counts": counts.tolist()},
        }


_SIGN = (np.array([[-1.0], [1.0]]), np.array([0.5, 0.5]))
_EDGE_SIZES = (10, 100, 1000, 10000)


def _edge(n_i: int, radius_constant: float = 1.0) -> CompactStep:
    """n_i iid in-cluster momenta and one of another cluster Delta = 1 away (no Byzantine).

    delta_i = n_i/(n_i + 1), noise +-rho with rho = 1e-2 delta_i Delta/(16 K) and the centre
    c = delta_i Delta from the cluster mean, away from the other cluster: with K = 1 the
    ball's edge passes within rho/2 of the mean, so the atom beyond it moves to the centre.
    """
    delta = n_i / (n_i + 1)
    return CompactStep.of(
        momentum_step(
            np.array([[0.0], [-1.0]]),
            np.array([0] * n_i + [1]),
            _SIGN,
            1e-2,
            np.array([delta]),
            radius_constant=radius_constant,
        )
    )


def _far_centre(n_i: int, radius_constant: float) -> CompactStep:
    """As :func:`_edge` with a random centre: at the cluster mean, or far w.p. p.

    rho = 1e-3 delta_i Delta/(16 K), c^2 = rho^2 and the far atom w = c/sqrt(p) with p =
    1/(100 K (1 + 16 K/1e-3)), so ||w||^2 = 100 tau^2: then the ball holds no momentum, the
    good points' mean is the centre and the left side is at least c^2, while (1 - delta_i) c^2
    + rho^2/n_i + rho^3/Delta -> 0 as n_i grows, whatever K.
    """
    k, spread = radius_constant, 1e-3
    delta = n_i / (n_i + 1)
    c = spread * delta / (SEPARATION * k)
    p = 1 / (100 * k * (1 + SEPARATION * k / spread))
    return CompactStep.of(
        momentum_step(
            np.array([[0.0], [-1.0]]),
            np.array([0] * n_i + [1]),
            _SIGN,
            spread,
            np.array([[0.0], [c / math.sqrt(p)]]),
            centre_probs=np.array([1 - p, p]),
            radius_constant=k,
        )
    )


def _one_sided(rng: np.random.Generator, dim: int) -> tuple[FloatArray, FloatArray]:
    """A zero-mean law with an atom of small mass far out along a random direction."""
    p = float(rng.uniform(0.02, 0.3))
    u = rng.normal(size=dim)
    u /= np.linalg.norm(u)
    return np.stack([u, -p / (1 - p) * u]), np.array([p, 1 - p])


@functools.cache
def _random_steps(seed: int, count: int, radius_constant: float = 1.0) -> tuple[CompactStep, ...]:
    """The seeded random steps, drawn once per process.

    A step is immutable and its cached properties (the step's law, its errors) depend on
    it alone, so the checks that run the same draw share them.
    """
    return tuple(_draw_steps(seed, count, radius_constant))


def _draw_steps(seed: int, count: int, radius_constant: float) -> Iterator[CompactStep]:
    rng = np.random.default_rng(seed)
    for k in range(count):
        dim, n_own, n_clusters = 1 + k % 2, 2 + k % 5, 2 + k % 3
        centres = rng.normal(size=(n_clusters, dim)) * float(rng.choice([0.5, 2.0, 5.0]))
        clusters = np.array([0] * n_own + list(rng.integers(1, n_clusters, 1 + k % 4)))
        if k % 3 == 0:
            atoms, probs = _one_sided(rng, dim)
        else:
            size = 2 + k % 3
            atoms = rng.normal(size=(size, dim))
            probs = rng.dirichlet(np.ones(size))
            atoms -= probs @ atoms
        gap = float(np.min(np.linalg.norm(centres[1:] - centres[0], axis=1)))
        spread = float(10 ** rng.uniform(-2.0, 0.0))
        delta_free = n_own / clusters.size
        rho = spread * delta_free * gap / (SEPARATION * radius_constant)
        direction = rng.normal(size=dim)
        direction /= np.linalg.norm(direction)
        # the centre within rho of the mean (two in five), or 0.3, 1 or 3 delta_i Delta away
        near = rho * float(rng.uniform(0, 1))
        scale = (near, near, *(f * delta_free * gap for f in (0.3, 1.0, 3.0)))
        offset = direction * scale[(k // 3) % 5]
        n_bad = int(rng.integers(0, n_own // 4 + 1))
        bad = rng.normal(size=(n_bad, dim)) * float(rng.choice([0.1, 1.0])) + centres[0]
        yield CompactStep.of(
            momentum_step(
                centres,
                clusters,
                (atoms, probs),
                spread,
                offset,
                bad,
                radius_constant=radius_constant,
            )
        )


def _pieces(step: ThresholdStep) -> dict[str, float]:
    gap = float(np.min(np.linalg.norm(step.means[~step.same] - step.target, axis=1)))
    return {"c2": step.c2, "rho": math.sqrt(step.rho2), "delta": step.delta, "Delta": gap}


def _printed_c2_weight(delta: float) -> float:
    """Lemma 16 prints (1 - delta_i) c^2."""
    return 1 - delta


def _kept_c2_weight(delta: float) -> float:
    """Step (vi) of the proof: delta_i c^2 + (1 - delta_i) c^2 = c^2."""
    return 1.0


def _good_bound(step: ThresholdStep, c2_weight: Callable[[float], float]) -> float:
    """W c^2 + rho^2/n_i + rho^3/Delta."""
    q = _pieces(step)
    w = c2_weight(q["delta"])
    return w * q["c2"] + q["rho"] ** 2 / step.n_i + q["rho"] ** 3 / q["Delta"]


def _good_hypothesis(c2_max: float | None, radius_constant: float) -> Callable[..., bool]:
    def hypothesis(step: ThresholdStep) -> bool:
        q = _pieces(step)
        beta = 1 - step.n_good / step.n_total
        tol = 1 + 1e-12
        return (
            q["Delta"] * tol >= SEPARATION * radius_constant * q["rho"] / q["delta"]
            and beta * BYZANTINE_SHARE <= q["delta"] * tol
            and (c2_max is None or q["c2"] <= c2_max * q["rho"] ** 2 * tol)
        )

    return hypothesis


def _lemma16_check(
    constant: float,
    c2_max: float | None,
    c2_weight: Callable[[float], float],
    radius_constants: tuple[float, ...],
    refute_all: bool,
) -> Verdict:
    def one(k: float) -> Verdict:
        def holds(step: ThresholdStep) -> bool:
            return step.good_error <= constant * _good_bound(step, c2_weight) * (1 + 1e-9) + 1e-15

        far = [_far_centre(n, k) for n in _EDGE_SIZES]
        assumed = "" if c2_max is None else f", c^2 <= {c2_max:g} rho^2"
        verdict = on_points(
            holds,
            (
                {"step": s}
                for s in (*far, *(_edge(n, k) for n in _EDGE_SIZES), *_random_steps(16, 100, k))
            ),
            f"E||(1/|G_i|) sum_(j in G_i) y_j - E_x m_bar_i||^2 <= {constant:g} (w c^2 + "
            f"rho^2/n_i + rho^3/Delta) for independent momenta, w = {_weight_name(c2_weight)}, "
            f"under Delta >= 16 K rho/delta_i, beta_i <= delta_i/4{assumed}",
            drawn="first n_i = 10, 100, 1e3, 1e4 iid in-cluster momenta with noise +-rho, one "
            "momentum of another cluster Delta = 1 away (delta_i -> 1), rho = 1e-3 delta_i "
            "Delta/(16 K) and a random centre: at the cluster mean or, w.p. p = 1/(100 K (1 + "
            "16e3 K)), at c/sqrt(p) with c = rho (no momentum in that ball); then the same "
            "momenta with rho = 1e-2 delta_i Delta/(16 K) and the centre c = delta_i Delta from "
            "the cluster mean; then seeded (seed 16) 100 steps in R^1 or R^2: 2-6 iid in-cluster "
            "momenta, 1-4 of 1-3 other clusters, cluster means N(0, s^2 I) with s in {0.5, 2, "
            "5}, zero-mean noise on 2-4 random atoms or (one in three) with a far atom of mass "
            "in [0.02, 0.3], rho = s' delta Delta/(16 K) with s' log-uniform in [1e-2, 1], the "
            "centre uniform within rho of the mean (two in five) or 0.3, 1, 3 delta Delta away, "
            "0 to n_i/4 Byzantine momenta around the mean",
            hypothesis=_good_hypothesis(c2_max, k),
        )
        ratios = [s.good_error / _good_bound(s, c2_weight) for s in far]
        return _grown(
            verdict,
            "left side over (w c^2 + rho^2/n_i + rho^3/Delta) along the random centre, n_i = 10, "
            "100, 1e3, 1e4",
            ratios,
        )

    return over_radii(one, radius_constants, refute_all=refute_all)


def _weight_name(c2_weight: Callable[[float], float]) -> str:
    return "1 - delta_i" if c2_weight(0.0) != c2_weight(1.0) else f"{c2_weight(0.0):g}"


#: the constant of Lemma 16's "<~" as read here
GOOD_CONSTANT = 25.0


@proposition(
    "thesis.ch2.lemma16",
    source=f"{_T4}, Lemma 16 and its proof; = {PAPER}, App. A.4, Lemma 15",
    statement="with Delta >~ rho/delta_i, beta_i <~ delta_i and tau^2 ~ c^2 + delta_i rho "
    "Delta: E||(1/|G_i|) sum_{j in G_i} y_j - E_x m_bar_i||^2 <~ (1 - delta_i) c^2 + "
    "rho^2/n_i + rho^3/Delta; read with '<~' = 25, tau^2 = K(c^2 + delta_i rho Delta) and "
    "Delta >= 16 K rho/delta_i for each K = 1, 4, 16 (step (vi) of the proof carries "
    "delta_i c^2 + (1 - delta_i) c^2 and the last, unlabelled line keeps only (1 - delta_i) "
    "c^2; a centre that is far with a small probability leaves no momentum in the ball, so "
    "the left side is ~ c^2)",
    holds=False,
    perturb={"c2_weight": _kept_c2_weight},
)
def _lemma16(
    constant: float = GOOD_CONSTANT,
    c2_max: float | None = None,
    c2_weight: Callable[[float], float] = _printed_c2_weight,
    radius_constants: tuple[float, ...] = RADIUS_CONSTANTS,
) -> Verdict:
    return _lemma16_check(constant, c2_max, c2_weight, radius_constants, refute_all=True)


@proposition(
    "thesis.ch2.lemma16.corrected",
    source=f"{_T4}, Lemma 16, corrected at step (vi) of its proof: the c^2 that step carries "
    f"is kept whole; = {PAPER}, App. A.4, Lemma 15",
    statement="under c^2 <= rho^2, Delta >= 16 K rho/delta_i and beta_i <= delta_i/4 with "
    "tau^2 = K(c^2 + delta_i rho Delta), K = 1, 4, 16: E||(1/|G_i|) sum_{j in G_i} y_j - "
    "E_x m_bar_i||^2 <= C (c^2 + rho^2/n_i + rho^3/Delta) for independent momenta, C = 25 "
    "(a centre far with a small probability gives left side / (c^2 + rho^2/n_i + rho^3/Delta) "
    "-> 1, so C >= 1); the (1 - delta_i) contraction is lost, so Lemma 15's recursion "
    "c_(l+1)^2 <~ (1 - delta_i/2) c_l^2 + ... does not follow from it and would need c_l^2 "
    "<= rho^2 at every step",
    perturb={"constant": 0.9},
)
def _lemma16_corrected(
    constant: float = GOOD_CONSTANT,
    c2_max: float | None = 1.0,
    c2_weight: Callable[[float], float] = _kept_c2_weight,
    radius_constants: tuple[float, ...] = RADIUS_CONSTANTS,
) -> Verdict:
    return _lemma16_check(constant, c2_max, c2_weight, radius_constants, refute_all=False)


# --------------------------------------------------------------------------- Lemma 15


@functools.cache
def _clipping_run(share: int, radius_constant: float = 1.0) -> MomentumClusteringRun:
    r"""Lemma 15's family: delta_i = 1/share, no Byzantine momenta, the centre starting at the mean.

    n_i = 32 K share iid in-cluster momenta at -a (mass p) or at rho^2/a (mass 1 - p), a = 1.01
    sqrt(K delta_i rho Delta) and p = rho^2/(rho^2 + a^2); the other N - n_i momenta sit at
    -Delta = -16 K rho/delta_i. The atom -a lies outside every ball, so the centre drifts to
    the fixed point c ~ rho^2/a: c^2 ~ rho^3/(K delta_i Delta), whose ratio to rho^2/n_i +
    rho^3/Delta grows like 1/(K delta_i).
    """
    k = radius_constant
    n_i, rho = int(32 * k) * share, 1.0
    delta = 1 / share
    gap = SEPARATION * k * rho / delta
    a = 1.01 * math.sqrt(k * delta * rho * gap)
    p = rho**2 / (rho**2 + a**2)
    own = (np.array([[-a], [p * a / (1 - p)]]), np.array([p, 1 - p]))
    other = (np.array([[-gap]]), np.ones(1))
    return MomentumClusteringRun(
        laws=(own, other),
        counts=(n_i, n_i * share - n_i),
        clusters=(0, 1),
        n_bad=0,
        push=np.ones(1),
        start=np.zeros(1),
        radius_constant=k,
    )


def _shares(radius_constant: float) -> tuple[int, ...]:
    """1/delta_i along Lemma 15's family: 25, 50, 100, times sqrt(K)/2 once that exceeds 1."""
    return tuple(int(s * max(1.0, math.sqrt(radius_constant) / 2)) for s in (25, 50, 100))


@functools.cache
def _random_runs(
    seed: int, count: int, radius_constant: float = 1.0
) -> tuple[MomentumClusteringRun, ...]:
    """Seeded runs with exact joint laws (the ``drawn`` text of the Lemma 15 checks)."""
    return tuple(_draw_runs(seed, count, radius_constant))


def _draw_runs(seed: int, count: int, radius_constant: float) -> Iterator[MomentumClusteringRun]:
    rng = np.random.default_rng(seed)
    for k in range(count):
        dim, n_own, n_clusters = 1 + k % 2, 1 + k % 8, 1 + k % 3
        centres = rng.normal(size=(n_clusters, dim)) * float(rng.choice([0.5, 2.0, 5.0]))
        others = [int(rng.integers(1, 3)) for _ in range(n_clusters)]
        n_bad = int(rng.integers(0, int(n_own / (4 * math.sqrt(radius_constant))) + 1))
        delta = n_own / (n_own + sum(others) + n_bad)
        gap = float(np.min(np.linalg.norm(centres, axis=1)))
        rho = float(10 ** rng.uniform(-2.0, 0.0)) * delta * gap / (SEPARATION * radius_constant)
        if k % 3 == 0:  # a far atom just beyond the ball of radius sqrt(K delta rho Delta)
            u = rng.normal(size=dim)
            u /= np.linalg.norm(u)
            a = math.sqrt(radius_constant * delta * rho * gap) * float(rng.uniform(0.5, 1.5))
            p = rho**2 / (rho**2 + a * a)
            own = (np.stack([a * u, -p * a / (1 - p) * u]), np.array([p, 1 - p]))
        else:
            size = 2 + k % 2
            atoms = rng.normal(size=(size, dim))
            probs = rng.dirichlet(np.ones(size))
            atoms -= probs @ atoms
            own = (atoms * rho / math.sqrt(float(probs @ (atoms**2).sum(1))), probs)
        laws = [own]
        for c in range(n_clusters):
            size = 1 + (k // 2) % 2
            atoms = rng.normal(size=(size, dim))
            probs = rng.dirichlet(np.ones(size))
            atoms -= probs @ atoms
            norm = math.sqrt(float(probs @ (atoms**2).sum(1))) or 1.0
            laws.append((centres[c] + atoms * rho * float(rng.uniform(0.2, 1.0)) / norm, probs))
        push = rng.normal(size=dim)
        start = rng.normal(size=dim)
        yield MomentumClusteringRun(
            laws=tuple(laws),
            counts=(n_own, *others),
            clusters=(0, *range(1, n_clusters + 1)),
            n_bad=n_bad,
            push=push / np.linalg.norm(push),
            start=start * rho * float(rng.uniform(0.0, 1.0)) / np.linalg.norm(start),
            extra_steps=(0, 0, 20)[k % 3],
            radius_constant=radius_constant,
        )


def _printed_error(run: MomentumClusteringRun) -> float:
    """Lemma 15's right side: rho^2/n_i + rho^3/Delta + beta_i rho Delta."""
    rho = math.sqrt(run.rho2)
    return rho**2 / run.n_i + rho**3 / run.gap + run.beta * rho * run.gap


def _corrected_error(run: MomentumClusteringRun) -> float:
    """The right side with the clipping bias undivided: rho^2/n_i + rho^3/(delta_i Delta) + beta_i rho Delta."""
    rho = math.sqrt(run.rho2)
    return rho**2 / run.n_i + rho**3 / (run.delta * run.gap) + run.beta * rho * run.gap


#: the constant instantiating Lemma 15's "<~"
RUN_CONSTANT = 4.0


def _lemma15_check(
    bound: Callable[[MomentumClusteringRun], float],
    constant: float,
    radius_constants: tuple[float, ...],
    refute_all: bool,
) -> Verdict:
    def one(k: float) -> Verdict:
        def holds(run: MomentumClusteringRun) -> bool:
            return run.error <= constant * bound(run) * (1 + 1e-9) + 1e-15

        family = [_clipping_run(share, k) for share in _shares(k)]
        shares = ", ".join(f"1/{share}" for share in _shares(k))
        verdict = on_points(
            holds,
            ({"run": r} for r in (*family, *_random_runs(15, 40, k))),
            f"E||v_(l_t) - E_x m_bar_i||^2 <= {constant:g} x bound after l_t steps of Algorithm 3 "
            f"on the same momenta, tau_l^2 = K(c_l^2 + delta_i rho Delta), K = {k:g}, Byzantine "
            "momenta just inside the ball",
            drawn=f"first delta_i = {shares} with n_i = 32 K/delta_i iid in-cluster momenta at "
            "-a (mass p) or rho^2/a, a = 1.01 sqrt(K delta_i rho Delta), p = rho^2/(rho^2 + "
            "a^2), the rest at -Delta = -16 K rho/delta_i, centre starting at the mean, no "
            "Byzantine momenta; then seeded (seed 15) 40 runs in R^1 or R^2 with exact joint "
            "laws: 1-8 iid in-cluster momenta on 2-3 random atoms or (one in three) with a far "
            "atom at 0.5-1.5 sqrt(K delta_i rho Delta), 1-2 momenta of each of 1-3 other "
            "clusters (means N(0, s^2 I), s in {0.5, 2, 5}), rho = s' delta_i Delta/(16 K) with "
            "s' log-uniform in [1e-2, 1], 0 to n_i/(4 sqrt(K)) Byzantine momenta pushing in a "
            "random direction, the start uniform within rho of the mean, the least l_t allowed "
            "(one in three 20 steps more)",
            hypothesis=lambda run: run.hypotheses(),
        )
        ratios = [r.error / _printed_error(r) for r in family]
        return _grown(
            verdict,
            f"left side over the printed bound along delta_i = {shares} (c^2 -> "
            "rho^3/(K delta_i Delta))",
            ratios,
        )

    return over_radii(one, radius_constants, refute_all=refute_all)


@proposition(
    "thesis.ch2.lemma15",
    source=f"{_T4}, Lemma 15 and its proof; = {PAPER}, App. A.4, Lemma 14",
    statement="after l_t >= max(1, log(rho/Delta)/log(1 - delta_i/2)) steps of "
    "Threshold-Clustering with tau^2 ~ c^2 + delta_i rho Delta, Delta >~ rho/delta_i, "
    "beta_i <~ delta_i and c_1^2 <~ rho^2: E||v_(k_i, l_t) - E_x m_bar_i||^2 <~ rho^2/n_i + "
    "rho^3/Delta + beta_i rho Delta; read with '<~' = 4, tau^2 = K(c^2 + delta_i rho Delta), "
    "Delta >= 16 K rho/delta_i, beta_i <= delta_i/(4 sqrt(K)) and c_1^2 <= rho^2 for each "
    "K = 1, 4, 16",
    holds=False,
    perturb={"bound": _corrected_error},
)
def _lemma15(
    bound: Callable[[MomentumClusteringRun], float] = _printed_error,
    constant: float = RUN_CONSTANT,
    radius_constants: tuple[float, ...] = RADIUS_CONSTANTS,
) -> Verdict:
    return _lemma15_check(bound, constant, radius_constants, refute_all=True)


@proposition(
    "thesis.ch2.lemma15.corrected",
    source=f"{_T4}, Lemma 15, corrected at step (iv) of its proof (the unrolled recursion "
    f"keeps the sum over its steps); = {PAPER}, App. A.4, Lemma 14",
    statement="after l_t >= max(1, log(rho/Delta)/log(1 - delta_i/2)) steps with tau^2 = "
    "K(c^2 + delta_i rho Delta), Delta >= 16 K rho/delta_i, beta_i <= delta_i/(4 sqrt(K)) "
    "and c_1^2 <= rho^2, each K = 1, 4, 16: E||v_(k_i, l_t) - E_x m_bar_i||^2 <= 4 (rho^2/n_i + rho^3/(delta_i Delta) + "
    "beta_i rho Delta): the in-cluster clipping bias, ||E(y_j - m_j)|| <= (c^2 + rho^2)/tau "
    "(Lemma 17), enters each step with weight delta_i and accumulates over the ~1/delta_i "
    "steps of contraction that step (iv)'s unrolled sum carries; the Byzantine share must "
    "shrink like 1/sqrt(K) (they move the centre by beta_i tau a step against a pull of "
    "delta_i c: with beta_i = delta_i/4 and K = 16 the centre runs away)",
    perturb={"bound": _printed_error},
)
def _lemma15_corrected(
    bound: Callable[[MomentumClusteringRun], float] = _corrected_error,
    constant: float = RUN_CONSTANT,
    radius_constants: tuple[float, ...] = RADIUS_CONSTANTS,
) -> Verdict:
    return _lemma15_check(bound, constant, radius_constants, refute_all=False)
