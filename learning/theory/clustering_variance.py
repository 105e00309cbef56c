r"""The variances behind Werner (2024), ch. 2, §2.6 (= Werner et al., TMLR 2023, App. A).

The momentum of Lemma 14 (:func:`ema_variance`) and one thresholding step of
Threshold-Clustering on a discrete point law (:func:`clipped_moments`, Lemma 4); the variance
lemmas themselves (Lemmas 4, 7 and 14) are registered in
:mod:`learning.theory.clustering_variance_propositions`.
"""

from __future__ import annotations

import numpy as np

from econ.validation import in_interval, non_negative
from learning.theory.clustering import FloatArray

__all__ = ["clipped_moments", "ema_variance"]


def ema_variance(alpha: float, sigma2: float, t: int | None = None) -> float:
    r"""Variance of the momentum of Lemma 14 after ``t`` rounds, or in the limit.

    The momentum is :math:`m_t = \alpha g_t + (1-\alpha) m_{t-1}`, :math:`m_0 = 0`,
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


# --------------------------------------------------------------------------- Lemma 4


def clipped_moments(
    atoms: FloatArray, probs: FloatArray, centre: FloatArray, radius: float
) -> dict[str, float]:
    r"""Moments of one Threshold-Clustering step on a discrete point law.

    Werner (2024), eq. (2.4): :math:`y = z\,1(\lVert z - v\rVert \le \tau) + v\,1(\lVert z - v\rVert > \tau)`
    for :math:`z` on ``atoms`` with ``probs``, the current centre :math:`v` = ``centre`` and
    radius :math:`\tau` = ``radius``.

    Returns ``var_z`` (:math:`\sigma^2`), ``var_y``, and ``c2`` :math:`= \lVert v - \mathbb E
    z\rVert^2`.
    """
    atoms = np.atleast_2d(np.asarray(atoms, dtype=np.float64))
    probs = np.asarray(probs, dtype=np.float64)
    centre = np.asarray(centre, dtype=np.float64).reshape(-1)
    mean = probs @ atoms
    inside = np.linalg.norm(atoms - centre, axis=1) <= float(radius)
    y = np.where(inside[:, None], atoms, centre)
    mean_y = probs @ y
    return {
        "var_z": float(probs @ ((atoms - mean) ** 2).sum(1)),
        "var_y": float(probs @ ((y - mean_y) ** 2).sum(1)),
        "c2": float(((centre - mean) ** 2).sum()),
    }
