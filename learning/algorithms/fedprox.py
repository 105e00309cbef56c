r"""FedProx (Li et al. 2020): FedAvg with a proximal pull to the global model.

The local objective adds a proximal pull to the global model,

.. math::  \min_w F_i(w) + \frac{\mu}{2} \lVert w - w^t \rVert^2 .

The personalised model is the global model (IP-FL, Khan et al., Tables 4, 5, 10, 11).
The paper gives no :math:`\mu`; collabecon uses :math:`\mu = 0.01`, since the default of
PFLlib (the library whose baselines the comparison follows) is 0, which is FedAvg.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from econ.validation import non_negative
from learning.algorithms.averaging import FedAvg, GroupAveragingState
from learning.algorithms.base import Context, register

__all__ = ["FedProx"]


@register
class FedProx(FedAvg):
    """FedAvg with the proximal term of weight ``mu`` around the round's global model."""

    name = "fedprox"
    client_parameters = ("mu",)

    def __init__(self, ctx: Context, mu: float = 0.01, finetune_steps: int = 0) -> None:
        super().__init__(ctx, finetune_steps=finetune_steps)
        self.mu = float(non_negative("mu", mu))

    def fit_options(self, state: GroupAveragingState, clients: np.ndarray) -> dict[str, Any]:
        r"""Local SGD on the proximal objective around the round's global model :math:`w^t`.

        Each participant minimises :math:`F_i(w) + \frac{\mu}{2} \lVert w - w^t \rVert^2`:
        ``prox_center`` is its start (the global model) and ``prox_mu`` is :math:`\mu`.

        References
        ----------
        Li, Sahu, Zaheer, Sanjabi, Talwalkar and Smith (2020), "Federated Optimization in
        Heterogeneous Networks", Algorithm 2 (FedProx).
        """
        return {"prox_center": self.configure(state, clients), "prox_mu": self.mu}
