r"""IP-FL's contributions: aggregation weights and first-order Shapley values of the updates.

Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4), App.
H, Eq. 15-16 and Alg. 3: the weights :math:`\lambda_i` and each client's first-order Shapley value,
which ranks the providers for the rewards of §4.2.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from games.ipfl.config import FloatArray, IPFLConfig


def aggregation_weights(sizes: ArrayLike, config: IPFLConfig) -> FloatArray:
    r"""The aggregation weights :math:`\lambda_i` of a cluster's payers in the profiler (Eq. 15-16).

    Their shares of the training examples (FedAvg), or equal shares under ``code_compat`` (the
    reference code averages uniformly).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, App. H, Eq. 15-16 (the
    weights :math:`\lambda_i`).

    Examples
    --------
    >>> aggregation_weights([10, 30], IPFLConfig()).tolist()
    [0.25, 0.75]
    >>> aggregation_weights([10, 30], IPFLConfig(code_compat=True)).tolist()
    [0.5, 0.5]
    """
    n = np.asarray(sizes, dtype=np.float64).reshape(-1)
    if n.size == 0 or (n <= 0).any():
        raise ValueError(f"sizes must be positive training-set sizes, got {n.tolist()}")
    return np.full(n.size, 1.0 / n.size) if config.code_compat else n / n.sum()


def shapley_first_order(
    gradient: ArrayLike,
    updates: ArrayLike,
    model: ArrayLike,
    weights: ArrayLike,
    *,
    normalized: bool = True,
) -> FloatArray:
    r"""First-order Shapley contribution of each participant (App. H, Eq. 15-16).

    Normalised (Eq. 16) or not (Eq. 15):

    .. math::

        \psi_i = -g^\top \lambda_i (W_i - W_M) \quad\text{(normalised, Eq. 16)}, \qquad
        \psi_i = -g^\top \lambda_i W_i \quad\text{(Eq. 15)},

    with :math:`g` the mean hold-out loss gradient at the aggregate :math:`W_M`,
    :math:`W_i` the participants' trained parameters (rows of ``updates``) and
    :math:`\lambda_i` the aggregation weights. Under FedAvg
    (:math:`W_M = \sum \lambda_i W_i`, :math:`\sum\lambda_i = 1`) the normalised values sum
    to 0 (``ipfl.shapley.zero_sum``). Computed in float64.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, App. H, Eq. 15-16 and
    Alg. 3; zero sum registered as ``ipfl.shapley.zero_sum``.

    Examples
    --------
    >>> shapley_first_order([1.0, 0.0], [[2.0, 0.0], [0.0, 1.0]], [1.0, 0.5], [0.5, 0.5]).tolist()
    [-0.5, 0.5]
    """
    g = as_vector("gradient", gradient)
    upd = np.atleast_2d(np.asarray(updates, dtype=np.float64))
    lam = np.asarray(weights, dtype=np.float64).reshape(-1)
    if upd.shape != (lam.size, g.size):
        raise ValueError(f"updates must be ({lam.size}, {g.size}), got {upd.shape}")
    rows = upd - as_vector("model", model)[None, :] if normalized else upd
    return -(rows @ g) * lam


def as_vector(name: str, value: ArrayLike) -> FloatArray:
    """``value`` as a finite 1-d float64 vector.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, App. H (the parameter
    vectors of Eq. 15-16).
    """
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr
