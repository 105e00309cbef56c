r"""FedAvg with server momentum (FedAvgM), written against collabecon's public protocol.

Each round the participants start from the server model :math:`w`, take their local SGD
steps, and the server moves along the momentum of the averaged update (Hsu, Qi and Brown
2019, "Measuring the Effects of Non-Identical Data Distribution for Federated Visual
Classification", section 3, FedAvgM):

.. math::

    \Delta = w - \frac{\sum_{k \in S} n_k w_k}{\sum_{k \in S} n_k}, \qquad
    v \leftarrow \beta v + \Delta, \qquad w \leftarrow w - v.

With :math:`\beta = 0` it is FedAvg (McMahan et al. 2017, Algorithm 1).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import torch

from learning.algorithms import Context, FederatedAlgorithm
from learning.engine import LocalResult, Params, broadcast


class ServerMomentumState(TypedDict):
    """The server model ``model`` and its momentum ``velocity`` (each one row)."""

    model: Params
    velocity: Params


class ServerMomentumFedAvg(FederatedAlgorithm[ServerMomentumState]):
    """FedAvg whose server steps with heavy-ball momentum ``beta`` (module docstring)."""

    name = "toy-fedavgm"

    def __init__(self, ctx: Context, beta: float = 0.9) -> None:
        super().__init__(ctx)
        if not 0 <= beta < 1:
            raise ValueError(f"beta must be in [0, 1), got {beta}")
        self.beta = float(beta)

    def init(self, models: Params, rng: np.random.Generator) -> ServerMomentumState:
        """The first client's initial model, with zero velocity."""
        model = {k: v[:1].clone() for k, v in models.items()}
        return {"model": model, "velocity": {k: torch.zeros_like(v) for k, v in model.items()}}

    def configure(self, state: ServerMomentumState, clients: np.ndarray) -> Params:
        """Every participant starts from the server model."""
        return {k: v.expand(len(clients), *v.shape[1:]).clone() for k, v in state["model"].items()}

    def aggregate(
        self, state: ServerMomentumState, clients: np.ndarray, trained: LocalResult
    ) -> ServerMomentumState:
        """The momentum step on the data-weighted mean of the trained models."""
        sizes = self.ctx.train_sizes(clients).to(torch.float32)
        weights = sizes / sizes.sum()
        model, velocity = {}, {}
        for key, w in state["model"].items():
            rows = trained.params[key]
            mean = torch.tensordot(weights.to(rows.dtype), rows, dims=1).unsqueeze(0)
            velocity[key] = self.beta * state["velocity"][key] + (w - mean)
            model[key] = w - velocity[key]
        return {"model": model, "velocity": velocity}

    def client_models(self, state: ServerMomentumState) -> Params:
        """Every client deploys the server model."""
        return broadcast({k: v[0] for k, v in state["model"].items()}, self.ctx.n_clients)
