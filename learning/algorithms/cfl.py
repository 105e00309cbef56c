r"""Clustered Federated Learning (Sattler, Müller, Samek 2021), the reference rule.

All clients start in one cluster. Each round every participant trains locally from its
cluster's model and sends its update :math:`\Delta\theta_i`. A cluster ``c`` with more than
two participants is split in two when, after ``min_round`` rounds, its mean update is small
but some update is large (near a stationary point of FedAvg that is not one of every client),

.. math::

    \Big\lVert \tfrac{1}{|c|} \sum_{i\in c} \Delta\theta_i \Big\rVert < \varepsilon_1,
    \qquad \max_{i\in c} \lVert \Delta\theta_i \rVert > \varepsilon_2,

by complete-linkage agglomerative clustering of the cosine similarities
:math:`\alpha_{ij}` of the updates (:func:`cosine_bipartition`). Splits are never undone
(the failure of Werner et al. 2023, §2.1, Example 3). Then each cluster's model becomes the
data-weighted mean of its participants' models.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import torch

from econ.validation import non_negative, positive
from learning.algorithms.base import Context, FederatedAlgorithm, register
from learning.all_pairs import flatten
from learning.engine import LocalResult, Params, group_mean, select

__all__ = ["CFL", "CFLState", "cosine_bipartition"]


def cosine_bipartition(updates: torch.Tensor) -> np.ndarray:
    r"""Labels 0/1 of the complete-linkage bipartition of ``updates (n, P)``.

    The distance is the cosine distance :math:`1 - \alpha_{ij}` between the updates.
    """
    u = updates.double()
    unit = u / (u.norm(dim=1, keepdim=True) + 1e-12)
    distance = (1.0 - unit @ unit.T).clamp_min(0.0).cpu().numpy()
    np.fill_diagonal(distance, 0.0)
    from sklearn.cluster import AgglomerativeClustering  # scikit-learn costs seconds to import

    model = AgglomerativeClustering(n_clusters=2, linkage="complete", metric="precomputed")
    return model.fit(distance).labels_.astype(np.int64)


class CFLState(TypedDict):
    """State of :class:`CFL`.

    ``groups`` (stacked cluster models), ``assignment`` (cluster of each client), ``rounds``
    (rounds done, a 0-d tensor).
    """

    groups: Params
    assignment: torch.Tensor
    rounds: torch.Tensor


@register
class CFL(FederatedAlgorithm[CFLState]):
    """CFL with thresholds ``eps1``, ``eps2`` on update norms; state :class:`CFLState`.

    Clusters are split only after ``min_round`` rounds.
    """

    name = "cfl"

    def __init__(
        self, ctx: Context, eps1: float = 0.4, eps2: float = 1.6, min_round: int = 20
    ) -> None:
        super().__init__(ctx)
        self.eps1 = float(positive("eps1", eps1))
        self.eps2 = float(positive("eps2", eps2))
        self.min_round = int(non_negative("min_round", min_round))

    def init(self, models: Params, rng: np.random.Generator) -> CFLState:
        """One cluster of every client, whose model is the first initial model; no rounds done."""
        return {
            "groups": select(models, np.array([0])),
            "assignment": torch.zeros(self.ctx.n_clients, dtype=torch.long, device=self.ctx.device),
            "rounds": torch.tensor(0),
        }

    def configure(self, state: CFLState, clients: np.ndarray) -> Params:
        """Every participant starts from the model of its cluster."""
        return select(state["groups"], state["assignment"][torch.as_tensor(clients)])

    def client_models(self, state: CFLState) -> Params:
        """The model of each client's cluster."""
        return select(state["groups"], state["assignment"])

    def aggregate(self, state: CFLState, clients: np.ndarray, trained: LocalResult) -> CFLState:
        r"""Split the clusters that meet the criterion, then average within each cluster.

        The update of participant :math:`i` is :math:`\Delta\theta_i = \theta_i - \theta_c`,
        its trained model less its cluster's. After ``min_round`` rounds, a cluster :math:`c`
        with more than two participants and

        .. math::

            \Big\lVert \tfrac{1}{|c|} \sum_{i\in c} \Delta\theta_i \Big\rVert
            < \varepsilon_1,
            \qquad \max_{i\in c} \lVert \Delta\theta_i \rVert > \varepsilon_2

        is split by :func:`cosine_bipartition` of its participants' updates: the second part
        moves to a new cluster that starts from a copy of :math:`c`'s model. Each cluster's
        model then becomes the data-weighted mean of its participants' trained models
        (:func:`learning.engine.group_mean`).

        References
        ----------
        Sattler, Müller and Samek (2021), "Clustered Federated Learning: Model-Agnostic
        Distributed Multitask Optimization Under Privacy Constraints", IEEE TNNLS.
        """
        assignment = state["assignment"].clone()
        idx = torch.as_tensor(clients, device=assignment.device)
        start = select(state["groups"], assignment[idx])
        updates = flatten(trained.params) - flatten(start)
        groups = state["groups"]
        rounds = int(state["rounds"]) + 1
        for c in torch.unique(assignment[idx]).tolist():
            members = (assignment[idx] == c).nonzero().flatten()
            u = updates[members]
            if (
                rounds > self.min_round
                and members.numel() > 2
                and float(u.mean(0).norm()) < self.eps1
                and float(u.norm(dim=1).max()) > self.eps2
            ):
                labels = torch.as_tensor(cosine_bipartition(u), device=idx.device)
                new_id = next(iter(groups.values())).shape[0]
                groups = {k: torch.cat([v, v[c : c + 1]]) for k, v in groups.items()}
                moved = idx[members[labels == 1]]
                assignment[moved] = new_id
        chosen = assignment[idx]
        merged = group_mean(trained.params, self.ctx.train_sizes(clients), chosen, groups)
        return {"groups": merged, "assignment": assignment, "rounds": torch.tensor(rounds)}
