r"""Two firms with convex quadratic losses: Algorithm 5 with real gradient steps, no torch.

Firm :math:`j \in \{l, h\}` has the loss :math:`f(x; j) = \sum_k a_{j,k} (x_k - u_{j,k})^2`
on its data, the joint objective is :math:`f = (f(\cdot; l) + f(\cdot; h))/2` (eq. 3.1)
and a model's quality is :math:`q(x) = 1 - f(x)` (Werner 2024, ch. 3, §3.2). The joint
objective is :math:`L`-smooth with :math:`L = \max_k (a_{l,k} + a_{h,k})` and its best
quality is :math:`Q = 1 - f(x^*)`, :math:`x^* = (a_l u_l + a_h u_h)/(a_l + a_h)`.

A small symmetric instance is :func:`thesis_toy`: :math:`u_l = (-1, 0)`,
:math:`u_h = (1, 0)`, :math:`a = 1/64`, so :math:`q(x) = 1 - (\|x\|^2 + 1)/64` and
:math:`Q = 63/64`. The checks of Propositions 3-5, Theorem 5, Corollary 1 and Algorithm 5's
inner loop on these firms are registered in :mod:`games.defection_free.propositions`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.qualities import ModelQualities
from econ.validation import in_interval, positive, positive_int
from games.defection_free import (
    HighMove,
    paced_step_size,
    raise_to_cap,
)

__all__ = ["QuadraticFirms", "random_firms", "thesis_toy"]


@dataclass
class QuadraticFirms:
    """Two firms with diagonal quadratic losses; implements :class:`games.defection_free.Firms`.

    Parameters
    ----------
    centre, curvature
        Arrays ``(2, d)``: rows are the low and the high firm's optimum :math:`u_j` and
        diagonal curvature :math:`a_j > 0`.
    x_low, x_high
        Starting parameters of the two models.
    const_step
        An unpaced step is ``const_step / L`` (``const_step`` in (0, 1]).
    max_inner, tol, max_halvings
        The low firm's guarded inner loop (:meth:`raise_low`).
    loop_step
        The step of Algorithm 5's printed inner loop, in units of :math:`1/L` (in (0, 1]).

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.2, (3.1), and
    §3.4, Algorithm 5.
    """

    centre: NDArray[np.float64]
    curvature: NDArray[np.float64]
    x_low: NDArray[np.float64]
    x_high: NDArray[np.float64]
    const_step: float = 0.5
    max_inner: int = 1000
    tol: float = 1e-13
    max_halvings: int = 60
    loop_step: float = 1.0
    _previous_high: NDArray[np.float64] | None = field(default=None, repr=False)
    _visited: list[NDArray[np.float64]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        """Convert the parameters to float arrays and check their shapes and the steps.

        ``centre`` and ``curvature`` (> 0) must both have shape ``(2, d)``; ``const_step`` and
        ``loop_step`` lie in (0, 1]. The starting parameters count as visited.
        """
        self.centre = np.array(self.centre, dtype=np.float64)
        self.curvature = positive("curvature", self.curvature).astype(np.float64)
        if self.centre.shape != self.curvature.shape or self.centre.shape[0] != 2:
            raise ValueError("centre and curvature must both have shape (2, d)")
        self.x_low = np.array(self.x_low, dtype=np.float64)
        self.x_high = np.array(self.x_high, dtype=np.float64)
        in_interval("const_step", self.const_step, 0.0, 1.0, low_open=True)
        in_interval("loop_step", self.loop_step, 0.0, 1.0, low_open=True)
        self._visited = [self.x_low, self.x_high]

    # -- the objective
    def losses(self, x: ArrayLike) -> NDArray[np.float64]:
        """:math:`(f(x; l), f(x; h))`.

        References
        ----------
        Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.2, (3.1) (the
        firms' losses :math:`f(x; l)`, :math:`f(x; h)`).

        Examples
        --------
        >>> thesis_toy([0.0, 0.0], [1.0, 0.0]).losses([0.0, 0.0]).tolist()
        [0.015625, 0.015625]
        """
        return (self.curvature * (np.asarray(x) - self.centre) ** 2).sum(axis=1)

    def quality(self, x: ArrayLike) -> float:
        """:math:`q(x) = 1 - (f(x; l) + f(x; h))/2`.

        References
        ----------
        Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.2, (3.1) and
        :math:`q = 1 - f`.

        Examples
        --------
        >>> thesis_toy([0.0, 0.0], [1.0, 0.0]).quality([1.0, 0.0])
        0.96875
        """
        low, high = self.losses(x).tolist()
        return 1.0 - (low + high) / 2  # the mean of the two, as numpy's mean sums and divides

    def _gradient(self, x: NDArray[np.float64], joint: bool, firm: int) -> NDArray[np.float64]:
        if joint:
            return np.sum(self.curvature * (x - self.centre), axis=0)
        return 2.0 * self.curvature[firm] * (x - self.centre[firm])

    def _smoothness(self, joint: bool, firm: int) -> float:
        return float(np.max(self.curvature.sum(0) if joint else 2.0 * self.curvature[firm]))

    @property
    def smoothness(self) -> float:
        """:math:`L` of the joint objective.

        References
        ----------
        Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.3, Notation
        and Assumptions 1 (:math:`L`-smoothness).

        Examples
        --------
        >>> thesis_toy([0.0, 0.0], [1.0, 0.0]).smoothness
        0.03125
        """
        return self._smoothness(True, 0)

    @property
    def q_max(self) -> float:
        r""":math:`Q = 1 - f(x^*)`, the best quality of the joint objective.

        References
        ----------
        Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.2, (3.1) and
        §3.4, Proposition 2 (:math:`q_h^* = \max_x q(x)`).

        Examples
        --------
        >>> thesis_toy([0.0, 0.0], [1.0, 0.0]).q_max == 63 / 64
        True
        """
        best = (self.curvature * self.centre).sum(0) / self.curvature.sum(0)
        return self.quality(best)

    def max_loss(self) -> float:
        """The largest loss :math:`f(x; j)` of either firm at any parameters either model took.

        The thesis's losses lie in [0, 1] (§3.2); the checks use this to stay inside.

        References
        ----------
        Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.2 (losses in
        [0, 1]).
        """
        return float(max(self.losses(x).max() for x in self._visited))

    # -- the Firms protocol
    def measure(self) -> ModelQualities:
        """The two models' qualities :math:`(q_l, q_h)` as :class:`econ.qualities.ModelQualities`.

        References
        ----------
        Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.2 (the
        qualities :math:`q_l`, :math:`q_h`).
        """
        q = np.array([self.quality(self.x_low), self.quality(self.x_high)])
        return ModelQualities(
            names=("low", "high"), quality=q, metric="1-loss", n_eval=np.ones(2, np.int64)
        )

    def _step(
        self, x: NDArray[np.float64], joint: bool, firm: int, pace: float | None
    ) -> NDArray[np.float64]:
        g = self._gradient(x, joint, firm)
        cap = 1.0 / self._smoothness(joint, firm)
        alpha = (
            paced_step_size(pace, self.quality(x), float(g @ g), cap)
            if pace is not None
            else self.const_step * cap
        )
        return x - alpha * g

    def step_high(self, move: HighMove) -> None:
        """One step of the high firm's model (joint or own objective, paced or constant step).

        References
        ----------
        Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.4, Algorithm
        5, lines 3-4.
        """
        self._previous_high = self.x_high
        self.x_high = self._step(self.x_high, move.joint, 1, move.pace)
        self._visited.append(self.x_high)

    def undo_high(self) -> None:
        """Restore the high firm's model from before its last :meth:`step_high`.

        References
        ----------
        Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.4, Algorithm
        5 (the high firm's update, withdrawn).
        """
        if self._previous_high is None:
            raise ValueError("undo_high needs a step_high before it")
        self.x_high = self._previous_high

    def step_low(self, joint: bool) -> None:
        """One constant step of the low firm's model (joint or own objective).

        References
        ----------
        Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.4, Algorithm
        5, lines 5-11 (one step of the low firm).
        """
        self.x_low = self._step(self.x_low, joint, 0, None)
        self._visited.append(self.x_low)

    def raise_low(self, cap: float, inner: str) -> None:
        r"""Raise the low firm's quality towards ``cap`` by steps on the joint objective.

        :func:`games.defection_free.raise_to_cap` with :math:`1/L` for ``step``:
        ``inner="gd"``: steps :math:`\alpha = \min\{(\text{cap} - q)/\|g\|^2, 1/L\}`, the
        proof of Proposition 3's step with :math:`1/L` for its 1 (docs/errata.md,
        ``thesis.ch3.prop3.step``), halved while the result would lower the quality or pass
        the cap, until within ``tol`` of it. ``inner="while"``: Algorithm 5, lines 9-11, as
        printed, with :math:`\alpha_{l,t}` = ``loop_step``/L: step while :math:`q \le` cap,
        which ends only above it.

        References
        ----------
        Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.4, Algorithm
        5, lines 7-11, and the proof of Proposition 3 (§3.7; corrected step: docs/errata.md,
        ``thesis.ch3.prop3.step``).
        """
        step_max = 1.0 / self.smoothness
        self.x_low = raise_to_cap(
            self.x_low,
            cap,
            inner,
            quality=self.quality,
            gradient=lambda x, _: self._gradient(x, True, 0),
            moved=lambda x, g, alpha: x - alpha * g,
            step=step_max,
            max_steps=self.max_inner,
            max_halvings=self.max_halvings,
            sq_norm=lambda g: float(g @ g),
            tol=self.tol,
            printed_step=self.loop_step * step_max,
            visit=self._visited.append,
        )


def thesis_toy(x_low: ArrayLike, x_high: ArrayLike, **options: float) -> QuadraticFirms:
    r"""The symmetric convex toy: :math:`q(x) = 1 - (\|x\|^2 + 1)/64`, :math:`Q = 63/64`.

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.2, (3.1) (a
    convex instance; the toy itself is collabecon's own).

    Examples
    --------
    >>> toy = thesis_toy([0.0, 0.0], [1.0, 0.0])
    >>> toy.quality([0.0, 0.0]), toy.q_max
    (0.984375, 0.984375)
    """
    return QuadraticFirms(
        centre=np.array([[-1.0, 0.0], [1.0, 0.0]]),
        curvature=np.full((2, 2), 1.0 / 64.0),
        x_low=np.asarray(x_low, dtype=np.float64),
        x_high=np.asarray(x_high, dtype=np.float64),
        **options,  # type: ignore[arg-type]
    )


def random_firms(
    seed: int | np.random.Generator | None = None, *, dim: int = 3, const_step: float = 0.5
) -> QuadraticFirms:
    """Random convex quadratic firms whose qualities stay in [0, 1] along any descent path.

    Centres in :math:`[-1, 1]^d`, curvatures in [0.5, 2] per coordinate, scaled so that the
    starting losses and the losses at either centre are at most 0.9; the low firm starts at
    the worse of two random points.

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.2, (3.1) and
    §3.3, Notation and Assumptions 1 (convex, :math:`L`-smooth losses; the instances are
    collabecon's own).
    """
    rng = np.random.default_rng(seed)
    dim = positive_int("dim", dim)
    centre = rng.uniform(-1.0, 1.0, (2, dim))
    curvature = rng.uniform(0.5, 2.0, (2, dim))
    starts = rng.uniform(-3.0, 3.0, (2, dim))

    def joint(x: NDArray[np.float64]) -> float:
        return float(np.sum(curvature * (x - centre) ** 2) / 2)

    worst = max(joint(p) for p in (*starts, *centre))
    curvature = curvature * (rng.uniform(0.3, 0.9) / worst)
    order = np.argsort([-joint(p) for p in starts])  # higher loss = the low firm
    return QuadraticFirms(
        centre=centre,
        curvature=curvature,
        x_low=starts[order[0]],
        x_high=starts[order[1]],
        const_step=const_step,
    )
