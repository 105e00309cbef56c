r"""FedSoft (Ruan & Joe-Wong 2022, Algorithm 1): soft clustering with proximal local updates.

``K`` cluster models :math:`c_s` on the server and one local model per client, which stays
on the client. Every ``tau`` rounds the server sends the cluster models to the participants
and each estimates its importance weights :math:`u_{is}`, the share of its points on which
:math:`c_s` has the smallest loss (zero counts smoothed to ``smoother`` :math:`\cdot n_i`,
then normalised), and reports them. The server forms
:math:`v_{si} = u_{is} n_i / \sum_j u_{js} n_j` and, for each cluster, samples
``selection_size`` participants without replacement with probabilities :math:`v_{s\cdot}`.
Only the selected clients work: each receives the cluster models and its :math:`u_{i\cdot}`
and trains its local model on

.. math::  F_i(w) + \frac{\lambda}{2} \sum_s u_{is} \lVert w - c_s \rVert^2

(a proximal pull of weight :math:`\lambda` to :math:`\sum_s u_{is} c_s`, since
:math:`\sum_s u_{is} = 1`), then sends it back; each cluster model becomes the plain mean
of its selected clients' models. The personalised model is the client's local model.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import torch

from econ.validation import non_negative, positive, positive_int
from learning.algorithms.base import Context, SplitAlgorithm, register
from learning.algorithms.exchanges import Dispatch, State, Survey
from learning.engine import Params, group_mean, select
from learning.per_example import per_example_losses

__all__ = ["FedSoft", "FedSoftState", "argmin_shares"]


def argmin_shares(
    losses: torch.Tensor, owner: np.ndarray, n_owners: int, smoother: float
) -> np.ndarray:
    """FedSoft's importance weights :math:`u_{is}` from per-example ``losses`` ``(rows, K)``.

    :math:`u_{is}` is the share of client ``i``'s rows (``owner`` gives each row's client) where
    model ``s`` has the smallest loss; zero counts become ``smoother * n_i``; rows are
    normalised to sum to 1.

    References
    ----------
    Ruan and Joe-Wong (2022), "FedSoft: Soft Clustered Federated Learning with Proximal Local
    Updating", Algorithm 1.
    """
    k = losses.shape[1]
    best = losses.argmin(dim=1).cpu().numpy()
    counts = np.zeros((n_owners, k))
    np.add.at(counts, (owner, best), 1.0)
    n = counts.sum(axis=1, keepdims=True)
    counts = np.where(counts == 0, smoother * n, counts)
    return counts / counts.sum(axis=1, keepdims=True)


class _FedSoftEntries(TypedDict):
    clusters: Params
    local: Params
    u: torch.Tensor
    round: torch.Tensor


class FedSoftState(_FedSoftEntries, total=False):
    """State of :class:`FedSoft`.

    ``clusters`` (the ``K`` cluster models), ``local`` (the clients' local models, held by the
    clients), ``u`` (the importance weights the clients
    last reported, one row per client) and ``round``; inside ``server_update`` also the
    round's plan, the clusters' ``selected`` participants.
    """

    selected: torch.Tensor


@register
class FedSoft(SplitAlgorithm[FedSoftState], Survey[FedSoftState]):
    """FedSoft with ``clusters`` models, state :class:`FedSoftState`.

    See the module docstring for the round.
    """

    name = "fedsoft"
    client_parameters = ("lam", "smoother")
    client_model = "local"

    def __init__(
        self,
        ctx: Context,
        clusters: int = 2,
        lam: float = 0.01,
        tau: int = 2,
        selection_size: int | None = None,
        smoother: float = 1e-4,
    ) -> None:
        super().__init__(ctx)
        self.clusters = positive_int("clusters", clusters)
        self.lam = float(non_negative("lam", lam))
        self.tau = positive_int("tau", tau)
        self.selection_size = (
            None if selection_size is None else positive_int("selection_size", selection_size)
        )
        self.smoother = float(positive("smoother", smoother))

    def init(self, models: Params, rng: np.random.Generator) -> FedSoftState:
        r"""Every cluster model and local model starts at the initial model; :math:`u_{is} = 1/K`.

        The cluster models are copies of the first client's initial model, each local model its
        client's; the round counter starts at 0.
        """
        n = self.ctx.n_clients
        return {
            "clusters": select(models, np.zeros(self.clusters, dtype=np.int64)),
            "local": {k: v.clone() for k, v in models.items()},
            "u": torch.full((n, self.clusters), 1.0 / self.clusters, dtype=torch.float64),
            "round": torch.zeros((), dtype=torch.long),
        }

    @property
    def client_held(self) -> tuple[str, ...]:
        """The local (personalised) models stay on the clients."""
        return ("local",)

    def client_models(self, state: FedSoftState) -> Params:
        """The clients' local models (the personalised ones)."""
        return state["local"]

    def cluster_models(self, state: FedSoftState) -> Params:
        """The ``K`` cluster models (for cluster-level evaluation)."""
        return state["clusters"]

    def survey(self, state: FedSoftState, clients: np.ndarray) -> Dispatch | None:
        r"""Every ``tau`` rounds (from round 0), ask the participants for their importance weights.

        The participants receive the cluster models to estimate their importance weights
        (Algorithm 1, the estimation every :math:`\tau` rounds); None otherwise.
        """
        if int(state["round"]) % self.tau:
            return None
        return Dispatch(each={}, common={"clusters": state["clusters"]}, config={})

    def client_survey(self, ctx: Context, sent: Dispatch, clients: np.ndarray) -> State:
        r"""Each participant's :math:`u_{i\cdot}` on its training data, ``(n, K)`` float64.

        The shares come from the per-example losses of the cluster models
        (:func:`argmin_shares`).
        """
        clients = np.asarray(clients, dtype=np.int64)
        losses, owner = per_example_losses(ctx.engine, sent.common["clusters"], ctx.train, clients)
        shares = argmin_shares(losses, owner, clients.size, self.smoother)
        return {"u": torch.as_tensor(shares)}

    def server_survey(
        self, state: FedSoftState, clients: np.ndarray, replies: State
    ) -> FedSoftState:
        r"""The participants' reported :math:`u_{i\cdot}` replace their rows of ``u``."""
        u = state["u"].clone()
        u[torch.as_tensor(np.asarray(clients, dtype=np.int64))] = replies["u"].to(u)
        return {**state, "u": u}

    def selection(
        self, state: FedSoftState, clients: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        r"""Each cluster's selected participants (positions among ``clients``, sorted).

        One row per cluster: ``selection_size`` (default ``max(1, m // K)``, at most ``m``) drawn
        without replacement with probabilities :math:`v_{si} \propto u_{is} n_i`.
        """
        sizes = self.ctx.train.sizes_numpy()[clients].astype(np.float64)
        v = state["u"][torch.as_tensor(clients)].numpy() * sizes[:, None]
        size = min(self.selection_size or max(1, clients.size // self.clusters), clients.size)
        return np.stack(
            [
                np.sort(rng.choice(clients.size, size, replace=False, p=v[:, s] / v[:, s].sum()))
                for s in range(self.clusters)
            ]
        )

    def dispatch(
        self, state: FedSoftState, clients: np.ndarray, rng: np.random.Generator
    ) -> Dispatch:
        r"""Select each cluster's participants and send the selected ones the cluster models.

        The selected clients (the union of the clusters' selections, :meth:`selection`) receive
        the cluster models and each its own :math:`u_{i\cdot}`; the selection goes to the plan.
        """
        clients = np.asarray(clients, dtype=np.int64)
        chosen = self.selection(state, clients, rng)
        union = np.unique(chosen)
        return Dispatch(
            each={"u": state["u"][torch.as_tensor(clients[union])]},
            common={"clusters": state["clusters"]},
            config={},
            receivers=union,
            plan={"selected": torch.as_tensor(chosen)},
        )

    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        r"""Local training of each selected client's local model with the proximal pull.

        The local objective is
        :math:`F_i(w) + \frac{\lambda}{2} \sum_s u_{is} \lVert w - c_s \rVert^2`, a pull of
        weight :math:`\lambda` to :math:`\sum_s u_{is} c_s`; the reply is the trained model
        (``params``, also kept as ``local``) and the training loss.

        References
        ----------
        Ruan and Joe-Wong (2022), "FedSoft: Soft Clustered Federated Learning with Proximal
        Local Updating", Algorithm 1.
        """
        clusters = sent.common["clusters"]
        dtype = next(iter(clusters.values())).dtype
        u = sent.each["u"].to(ctx.device, dtype)
        centre = {name: torch.tensordot(u, c, dims=([1], [0])) for name, c in clusters.items()}
        trained = ctx.fit(sent.each["local"], clients, rng, prox_center=centre, prox_mu=self.lam)
        return {
            "params": trained.params,
            "local": trained.params,
            "loss": torch.from_numpy(trained.loss),
        }

    def server_update(
        self, state: FedSoftState, clients: np.ndarray, replies: State, rng: np.random.Generator
    ) -> tuple[FedSoftState, dict[str, float]]:
        """Each cluster model becomes the plain mean of its selected clients' models.

        The round counter advances and the plan's selection is dropped from the state.

        References
        ----------
        Ruan and Joe-Wong (2022), "FedSoft: Soft Clustered Federated Learning with Proximal
        Local Updating", Algorithm 1.
        """
        chosen = state["selected"].cpu().numpy()
        rows = np.searchsorted(np.unique(chosen), chosen.reshape(-1))
        groups = np.repeat(np.arange(self.clusters), chosen.shape[1])
        device = self.ctx.device
        clusters = group_mean(
            select(replies["params"], rows),
            torch.ones(rows.size, device=device),
            torch.as_tensor(groups, device=device),
            state["clusters"],
        )
        new = state.copy()
        new.pop("selected", None)
        new["clusters"], new["round"] = clusters, state["round"] + 1
        return new, {"train_loss": float(replies["loss"].cpu().numpy().mean())}
