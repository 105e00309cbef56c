r"""Ditto (Li et al. 2021): FedAvg for a global model, plus a personal model per client
pulled toward it.

Each round the participants train the global model :math:`w` locally and the server
averages (FedAvg); each participant also takes local steps on its personal objective

.. math::

    v_i \leftarrow v_i - \eta\big(\nabla F_i(v_i) + \lambda (v_i - w^t)\big),

with the global model :math:`w^t` of the start of the round. Clients deploy :math:`v_i`.
``lam = 0`` is Local training; large ``lam`` approaches FedAvg. Werner et al. (2023) use
:math:`\lambda = 1` on MNIST. (The authors' code drives :math:`w` with gradients taken at the
personal models, spec ch2 §8 item 15; this is the standard Ditto.)
"""

from __future__ import annotations

import numpy as np
import torch

from econ.validation import non_negative
from learning.algorithms.base import Algorithm, Context, State, register
from learning.engine import Params, group_mean, select

__all__ = ["Ditto"]


@register
class Ditto(Algorithm):
    """Ditto with proximal weight ``lam``; state ``global`` (one row) and ``personal``."""

    name = "ditto"

    def __init__(self, ctx: Context, lam: float = 1.0) -> None:
        super().__init__(ctx)
        self.lam = float(non_negative("lam", lam))

    def init(self, models: Params, rng: np.random.Generator) -> State:
        return {
            "global": select(models, np.array([0])),
            "personal": {k: v.clone() for k, v in models.items()},
        }

    def client_models(self, state: State) -> Params:
        return state["personal"]

    def round(
        self, state: State, clients: np.ndarray, rng: np.random.Generator
    ) -> tuple[State, dict[str, float]]:
        clients = np.asarray(clients, dtype=np.int64)
        global_rng, personal_rng = rng.spawn(2)
        zeros = torch.zeros(clients.size, dtype=torch.long, device=self.ctx.device)
        centre = select(state["global"], zeros)
        trained = self.ctx.fit(centre, clients, global_rng)
        new_global = group_mean(
            trained.params, self.ctx.train_sizes(clients), zeros, state["global"]
        )
        idx = torch.as_tensor(clients, device=self.ctx.device)
        personal = self.ctx.fit(
            select(state["personal"], idx),
            clients,
            personal_rng,
            prox_center=centre,
            prox_mu=self.lam,
        )
        updated = {}
        for k, v in state["personal"].items():
            updated[k] = v.clone()
            updated[k][idx] = personal.params[k]
        return {"global": new_global, "personal": updated}, {
            "train_loss": float(personal.loss.mean())
        }
