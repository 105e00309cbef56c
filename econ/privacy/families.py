r"""One-parameter protocol families and the authors' grid scan over their scale (section 6).

The paper searches :math:`\beta_i = w_i b` over a grid of the scale b, with weights

* ``"symmetric"``:  :math:`w_i = 1`;
* ``"zeta"``:       :math:`w_i = \zeta_i` (DP mean, Theorem 4.2);
* ``"xi"``:         :math:`w_i = \max(\xi_i, 0)` (Bayes, "inspired by Theorem 4.9").

The scan (as in the authors' published notebook for Figure 1): the largest b in
``linspace(rho/(max w + 1e-8), 0, 100)`` at which every gain is >= 0, else b = 0.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.privacy.client_model import client_weights
from econ.privacy.models import Bayes, DPMean, Model
from econ.validation import choice, positive_int

Array = NDArray[np.float64]

FAMILIES = ("symmetric", "zeta", "xi")


def family_weights(model: Model, lam: ArrayLike, family: str) -> Array:
    """The weights w of a family (see the module docstring).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 (β_i = b, β_i = ζ_i b from Theorem 4.2, β_i = max(ξ_i, 0) b
    inspired by Theorem 4.9).
    """
    lam_ = client_weights(lam)
    choice("family", family, FAMILIES)
    if family == "symmetric":
        return np.ones_like(lam_)
    if family == "zeta":
        if not isinstance(model, DPMean):
            raise ValueError("the zeta family is defined for the DP mean model")
        return model.zeta(lam_)
    if not isinstance(model, Bayes):
        raise ValueError("the xi family is defined for the Bayesian model")
    return np.clip(model.xi(lam_), 0.0, None)


def scale_scan(model: Model, lam: ArrayLike, family: str, grid: int = 100) -> Array:
    """The authors' grid scan: β = w b at the largest grid scale b where all gains are >= 0.

    The notebook loops down the grid and stops at the first feasible scale; here the grid is
    evaluated in blocks of rows (at most about 4 million gains at a time), which returns the
    same scale. The zero protocol when no grid scale is feasible.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 (grid search over the scale b; Figure 1).
    """
    lam_ = client_weights(lam)
    w = family_weights(model, lam_, family)
    rho = model.rho(lam_.size)
    if np.ptp(rho) > 0:
        raise ValueError("the scale scan of section 6 assumes equal rho for all clients")
    scales = np.linspace(rho[0] / (w.max() + 1e-8), 0.0, positive_int("grid", grid))
    block = max(1, 4_000_000 // lam_.size)
    for start in range(0, scales.size, block):
        rows = scales[start : start + block, None] * w
        ok = np.all(model._gain_rows(rows, lam_) >= 0, axis=1)
        if ok.any():
            return rows[int(np.argmax(ok))]
    return np.zeros_like(lam_)
