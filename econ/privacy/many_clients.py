r"""The N → ∞ limit (Tsoy et al. 2024, section 4.4, Theorem 4.11), made concrete for DP mean estimation.

For the symmetric protocol with a fixed noise level α (β = 1/(1/ρ + α²)) the gain of a client
with weight λ is

.. math::

    u_N - u^0 = \frac{\lambda}{\rho} - \frac{\lambda}{(N-1)\beta + \rho} - \frac{\kappa^2}{\alpha^2},

increasing in N with limit :math:`\lambda/\rho - \kappa^2/\alpha^2`. So for a finite set of
weights every client gains for all :math:`N \ge N_1` iff :math:`\alpha^2 > \kappa^2\rho/\lambda`
for the smallest λ, with

.. math:: N_1 = \max_\lambda \Big\lceil 1 + \Big(\frac{\lambda}{\lambda/\rho - \kappa^2/\alpha^2} - \rho\Big)\Big/\beta \Big\rceil .
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from econ.privacy.client_model import client_weights
from econ.privacy.models import DPMean
from econ.validation import positive


def min_clients(model: DPMean, lam: ArrayLike, alpha: float) -> int | None:
    """Theorem 4.11's N_1 for DP mean estimation: the smallest N from which every client gains.

    The smallest N_1 >= 2 such that the symmetric protocol with noise ``alpha``
    is mutually beneficial for every N >= N_1 and every weight in ``lam``; ``None`` if no N works.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.4, Theorem 4.11 (N_1 made explicit for DP mean estimation,
    derived here; registered as `tsoy.thm4.11`).

    Examples
    --------
    >>> from econ.privacy.models import DPMean
    >>> min_clients(DPMean(), [0.5, 1.0], 2.0)
    5
    """
    lam_ = np.unique(client_weights(lam))
    a = float(positive("alpha", alpha))
    rho, kappa = float(model.rho(1)[0]), float(model.kappa(1)[0])
    margin = lam_ / rho - kappa**2 / a**2
    if np.any(margin <= 0):
        return None
    beta = 1 / (1 / rho + a**2)
    need = 1 + (lam_ / margin - rho) / beta
    return int(max(2, np.ceil(np.max(need) - 1e-12)))


def symmetric_gain(model: DPMean, lam: ArrayLike, alpha: float, n_clients: int) -> np.ndarray:
    """Gains of clients with weights ``lam`` in a symmetric protocol of ``n_clients`` clients with noise ``alpha``.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.1, Theorem 4.1 and Eq. (1), symmetric protocol p^sym of §4.4.

    Examples
    --------
    >>> from econ.privacy.models import DPMean
    >>> symmetric_gain(DPMean(), [0.5, 1.0], 2.0, 5).round(4)
    array([0.0336, 0.2558])
    """
    lam_ = client_weights(lam)
    beta = 1 / (1 / float(model.rho(1)[0]) + float(positive("alpha", alpha)) ** 2)
    return np.array([model.gain(np.full(n_clients, beta), np.full(n_clients, x))[0] for x in lam_])
