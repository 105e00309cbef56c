"""Group averaging: ``local``, ``fedavg`` and ``oracle`` as one algorithm.

Clients are assigned to groups; each group holds one model. In a round every participating
client starts from its group's model, takes the local SGD steps, and each group's model
becomes the data-weighted mean of its clients' results (FedAvg's aggregate, McMahan et al.
2017, Algorithm 1):

.. math::

    w_g \\leftarrow \\frac{\\sum_{k \\in S_g} n_k w_k}{\\sum_{k \\in S_g} n_k}.

The three algorithms differ only in the assignment:

- ``local``: every client is its own group (no collaboration);
- ``fedavg``: one group of everyone;
- ``oracle``: the ground-truth clusters (FedAvg within each known cluster; the upper
  baseline of the clustering experiments, Werner 2024, ch. 2 §2.4).

With ``finetune_steps > 0`` each client finally takes that many local steps from its group
model and keeps the result as its personal model (FedAvg + fine-tuning).

Personalised methods that move clients between groups (IFCA, clustering) subclass
:class:`GroupAveraging` and override :meth:`GroupAveraging.configure` or the assignment.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
import torch

from econ.validation import non_negative
from learning.algorithms.base import Context, FederatedAlgorithm, State, register
from learning.engine import LocalResult, Params, group_mean, select

__all__ = ["FedAvg", "GroupAveraging", "Local", "Oracle"]


class GroupAveraging(FederatedAlgorithm):
    """FedAvg within fixed groups of clients (see the module docstring).

    State: ``groups`` (stacked group models), ``assignment`` (group of each client, int64
    tensor) and, after fine-tuning, ``personal`` (stacked client models).
    """

    def __init__(self, ctx: Context, finetune_steps: int = 0) -> None:
        super().__init__(ctx)
        self.finetune_steps = int(non_negative("finetune_steps", finetune_steps))

    @abstractmethod
    def assignment(self) -> np.ndarray:
        """Group index of each client, values ``0 .. G-1``."""

    def init(self, models: Params, rng: np.random.Generator) -> State:
        assignment = np.asarray(self.assignment(), dtype=np.int64)
        first = [int(np.flatnonzero(assignment == g)[0]) for g in range(assignment.max() + 1)]
        return {
            "groups": select(models, np.array(first)),
            "assignment": torch.as_tensor(assignment, device=self.ctx.device),
        }

    def configure(self, state: State, clients: np.ndarray) -> Params:
        return select(state["groups"], state["assignment"][self._index(clients)])

    def aggregate(self, state: State, clients: np.ndarray, trained: LocalResult) -> State:
        groups = state["assignment"][self._index(clients)]
        weights = self.ctx.train_sizes(clients)
        return {
            **state,
            "groups": group_mean(trained.params, weights, groups, state["groups"]),
        }

    def _index(self, clients: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.asarray(clients), dtype=torch.long, device=self.ctx.device)

    def client_models(self, state: State) -> Params:
        if "personal" in state:
            return state["personal"]
        return select(state["groups"], state["assignment"])

    def finish(self, state: State, rng: np.random.Generator) -> State:
        if not self.finetune_steps:
            return state
        everyone = np.arange(self.ctx.n_clients)
        tuned = self.ctx.fit(self.client_models(state), everyone, rng, steps=self.finetune_steps)
        return {**state, "personal": tuned.params}


@register
class Local(GroupAveraging):
    """Each client trains alone on its own data."""

    name = "local"

    def assignment(self) -> np.ndarray:
        return np.arange(self.ctx.n_clients)


@register
class FedAvg(GroupAveraging):
    """Federated averaging over all clients (McMahan et al. 2017), optional fine-tuning."""

    name = "fedavg"

    def assignment(self) -> np.ndarray:
        return np.zeros(self.ctx.n_clients, dtype=np.int64)


@register
class Oracle(GroupAveraging):
    """FedAvg within each ground-truth cluster of clients."""

    name = "oracle"

    def assignment(self) -> np.ndarray:
        _, inverse = np.unique(self.ctx.clusters, return_inverse=True)
        return inverse.astype(np.int64)
