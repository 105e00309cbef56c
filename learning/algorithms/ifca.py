r"""IFCA: the Iterative Federated Clustering Algorithm (Ghosh et al. 2020, Algorithm 1).

The server keeps ``K`` cluster models :math:`\theta_1..\theta_K`. Each round every
participating client picks the model with the lowest loss on one minibatch of its own data,
:math:`\hat j_i = \arg\min_j F_i(\theta_j)`, and

- option I (``option="gradient"``) sends its minibatch gradient at :math:`\theta_{\hat j_i}`;
  the server steps :math:`\theta_j \leftarrow \theta_j - \frac{\gamma}{m}
  \sum_{i: \hat j_i = j} g_i` (divided by all ``m`` participants, as in the paper);
- option II (``option="model"``) trains locally from :math:`\theta_{\hat j_i}` and the
  server averages, per cluster, the models of its clients (unchanged without clients).

With ``momentum`` :math:`\beta > 0` (option I only) each client keeps a heavy-ball buffer
:math:`u_i \leftarrow \beta u_i + (1 - d) g_i` (``dampening`` :math:`d`, default 0; a
client's first step sets :math:`u_i = g_i`) that persists when it switches cluster, and
sends :math:`u_i` instead of :math:`g_i`: the authors' MNIST ``ifca-grad`` run
(:math:`\beta = 0.9`; Werner 2024, Table 2.1); CoBo's code uses :math:`d = 0.1`.

``init="random"`` draws ``K`` different initial models (model 0 is the given start; the others
shuffle the entries of each of its tensors, which keeps PyTorch's iid initialisation law);
``init="same"`` starts all ``K`` from the given model; ``init="oracle"`` starts cluster model ``k``
from the initial model of the first client of true cluster ``k``, every client assigned to its own
cluster (the synthetic experiments' oracle initialisation in the authors' code for Werner et al.
2023, Fig. 3; ``K`` must be the number of true clusters).

Two quirks of CoBo's published code (the IFCA baseline of Hashemi et al. 2024, Table 2), off by
default: ``aggregate="sum"`` steps each cluster model by the *sum* of its clients' gradients instead
of dividing by ``m``, and ``fresh_batches=True`` scores each candidate model on a minibatch
of its own.
"""

from __future__ import annotations

from typing import ClassVar, TypedDict

import numpy as np
import torch

from econ.validation import choice, in_interval, positive
from learning import byzantine
from learning.algorithms.base import Context, SplitAlgorithm, register
from learning.algorithms.exchanges import Dispatch, State
from learning.all_pairs import client_batches, flatten, pairwise_losses, unflatten
from learning.engine import Params, broadcast, group_mean, select
from learning.optim import momentum_buffer
from learning.rng import torch_generator

__all__ = ["IFCA", "IFCAState", "shuffled_models"]


def shuffled_models(model: Params, k: int, rng: np.random.Generator) -> Params:
    """``k`` models stacked: ``model`` (one row) and ``k - 1`` random permutations of it.

    Row 0 is ``model``; rows ``1..k-1`` permute the entries of each of its tensors at random,
    which keeps an iid initialisation law.
    """
    generator = torch_generator(rng)
    out = {}
    for name, p in model.items():
        flat = p[0].reshape(-1)
        rows = [flat] + [
            flat[torch.randperm(flat.numel(), generator=generator).to(flat.device)]
            for _ in range(k - 1)
        ]
        out[name] = torch.stack(rows).reshape(k, *p.shape[1:])
    return out


class _IFCAEntries(TypedDict):
    clusters: Params
    assignment: torch.Tensor


class IFCAState(_IFCAEntries, total=False):
    """State of :class:`IFCA`.

    ``clusters`` (stacked cluster models), ``assignment`` (last choice of each client, int64)
    and, with ``momentum``, the clients' buffers ``momentum``
    (one flat row each) and which clients have ``started``.
    """

    momentum: torch.Tensor
    started: torch.Tensor


@register
class IFCA(SplitAlgorithm[IFCAState]):
    """IFCA with ``n_clusters`` models, state :class:`IFCAState`.

    ``n_clusters`` defaults to the number of ground-truth clusters; see the module docstring.
    """

    name = "ifca"
    client_parameters: ClassVar[tuple[str, ...]] = (
        "n_clusters",
        "option",
        "momentum",
        "dampening",
        "fresh_batches",
    )

    def __init__(
        self,
        ctx: Context,
        n_clusters: int | None = None,
        option: str = "gradient",
        init: str = "random",
        lr: float | None = None,
        momentum: float = 0.0,
        dampening: float = 0.0,
        aggregate: str = "mean",
        fresh_batches: bool = False,
    ) -> None:
        super().__init__(ctx)
        self.n_clusters = ctx.cluster_count(n_clusters)
        self.option = choice("option", option, ("gradient", "model"))
        self.init_rule = choice("init", init, ("random", "same", "oracle"))
        truth = np.unique(ctx.clusters)
        if self.init_rule == "oracle" and truth.size != self.n_clusters:
            raise ValueError(
                f"init='oracle' needs n_clusters = the {truth.size} true clusters, "
                f"got {self.n_clusters}"
            )
        self.aggregate = choice("aggregate", aggregate, ("mean", "sum"))
        if self.aggregate == "sum" and self.option != "gradient":
            raise ValueError("aggregate='sum' needs option='gradient'")
        self.fresh_batches = bool(fresh_batches)
        self.lr = float(positive("lr", lr)) if lr is not None else ctx.local.sgd.lr
        self.momentum = float(in_interval("momentum", momentum, 0.0, 1.0, high_open=True))
        if self.momentum > 0 and self.option != "gradient":
            raise ValueError(f"momentum={momentum} needs option='gradient', got {option!r}")
        self.dampening = float(in_interval("dampening", dampening, 0.0, 1.0, high_open=True))

    def init(self, models: Params, rng: np.random.Generator) -> IFCAState:
        """The ``K`` cluster models by the ``init`` rule, every client assigned to cluster 0.

        ``"random"``: :func:`shuffled_models` of the first initial model; ``"same"``: ``K``
        copies of it; ``"oracle"``: cluster ``k`` starts from the initial model of the first
        client of true cluster ``k`` and every client is assigned to its own cluster. With
        ``momentum``, zero buffers and no client started.
        """
        first = select(models, np.array([0]))
        assignment = torch.zeros(self.ctx.n_clients, dtype=torch.long, device=self.ctx.device)
        if self.init_rule == "random":
            clusters = shuffled_models(first, self.n_clusters, rng)
        elif self.init_rule == "same":
            clusters = broadcast({k: v[0] for k, v in first.items()}, self.n_clusters)
        else:
            truth, owner = np.unique(np.asarray(self.ctx.clusters), return_inverse=True)
            leaders = np.array([np.flatnonzero(owner == c)[0] for c in range(truth.size)])
            clusters = select(models, leaders)
            assignment = torch.as_tensor(owner, dtype=torch.long, device=self.ctx.device)
        state: IFCAState = {"clusters": clusters, "assignment": assignment}
        if self.momentum > 0:
            state["momentum"] = torch.zeros_like(flatten(models))
            state["started"] = torch.zeros(
                self.ctx.n_clients, dtype=torch.bool, device=self.ctx.device
            )
        return state

    def client_models(self, state: IFCAState) -> Params:
        """The model of the cluster each client chose last (its initial one until it chooses)."""
        return select(state["clusters"], state["assignment"])

    def cluster_models(self, state: IFCAState) -> Params:
        """The ``n_clusters`` cluster models (for cluster-level evaluation)."""
        return state["clusters"]

    def choose(
        self,
        clusters: Params,
        clients: np.ndarray,
        rng: np.random.Generator,
        ctx: Context | None = None,
    ) -> torch.Tensor:
        r"""Each client's cluster: the model with the lowest loss on one minibatch of its data.

        :math:`\hat j_i = \arg\min_j F_i(\theta_j)` on a minibatch of its training data in
        ``ctx`` (the algorithm's by default; on a minibatch per candidate with
        ``fresh_batches``).

        References
        ----------
        Ghosh, Chung, Yin and Ramchandran (2020), "An Efficient Framework for Clustered
        Federated Learning", Algorithm 1.
        """
        ctx = self.ctx if ctx is None else ctx
        size = ctx.local.batch_size
        if not self.fresh_batches:
            x, y = client_batches(ctx.train, clients, size, rng)
            return pairwise_losses(ctx.engine, clusters, x, y).argmin(dim=0)
        losses = []
        for k in range(self.n_clusters):
            x, y = client_batches(ctx.train, clients, size, rng)
            one = select(clusters, np.array([k]))
            losses.append(pairwise_losses(ctx.engine, one, x, y)[0])
        return torch.stack(losses).argmin(dim=0)

    def dispatch(self, state: IFCAState, clients: np.ndarray, rng: np.random.Generator) -> Dispatch:
        """Every participant receives all cluster models.

        With ``momentum`` each also receives its own buffer and whether it has started.
        """
        each: State = {}
        if self.momentum > 0:
            idx = torch.as_tensor(np.asarray(clients), device=state["momentum"].device)
            each = {"momentum": state["momentum"][idx], "started": state["started"][idx]}
        return Dispatch(each=each, common={"clusters": state["clusters"]}, config={})

    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        r"""Each participant picks its cluster :math:`\hat j_i` and works on that model.

        The reply is the cluster it picks on its own minibatch (:meth:`choose`), and its
        minibatch gradient at :math:`\theta_{\hat j_i}` (option I, or its momentum buffer
        :math:`u_i \leftarrow \beta u_i + (1 - d) g_i`) or its locally trained model from
        :math:`\theta_{\hat j_i}` (option II).

        References
        ----------
        Ghosh, Chung, Yin and Ramchandran (2020), "An Efficient Framework for Clustered
        Federated Learning", Algorithm 1.
        """
        clusters = sent.common["clusters"]
        chosen = self.choose(clusters, clients, rng, ctx)
        start = select(clusters, chosen)
        if self.option == "model":
            trained = ctx.fit(start, clients, rng)
            return {
                "chosen": chosen,
                "params": trained.params,
                "loss": torch.from_numpy(trained.loss),
            }
        x, y = client_batches(ctx.train, clients, ctx.local.batch_size, rng)
        grads, loss = ctx.engine.gradients(start, x, y)
        g = flatten(grads)
        replies: State = {"chosen": chosen, "loss": loss}
        if self.momentum > 0:
            g = momentum_buffer(
                sent.each["momentum"], g, self.momentum, self.dampening, fresh=~sent.each["started"]
            )
            replies["momentum"] = g
        replies["update"] = g
        return replies

    def server_update(
        self, state: IFCAState, clients: np.ndarray, replies: State, rng: np.random.Generator
    ) -> tuple[IFCAState, dict[str, float]]:
        r"""Update the cluster models from the replies and record each participant's choice.

        Option I: :math:`\theta_j \leftarrow \theta_j - \frac{\gamma}{m}
        \sum_{i: \hat j_i = j} g_i` over the submitted gradients (without the division by
        :math:`m` for ``aggregate="sum"``); option II: the per-cluster data-weighted mean.

        References
        ----------
        Ghosh, Chung, Yin and Ramchandran (2020), "An Efficient Framework for Clustered
        Federated Learning", Algorithm 1.
        """
        clients = np.asarray(clients, dtype=np.int64)
        clusters = state["clusters"]
        chosen = replies["chosen"]
        out = state.copy()
        if self.option == "gradient":
            g = replies["update"]
            if self.momentum > 0:
                buffer, started = state["momentum"].clone(), state["started"].clone()
                idx = torch.as_tensor(clients, device=buffer.device)
                buffer[idx] = replies["momentum"]
                started[idx] = True
                out["momentum"], out["started"] = buffer, started
            g = byzantine.submit(self.ctx, g, clients, rng)
            step = torch.zeros_like(flatten(clusters)).index_add_(0, chosen, g)
            if self.aggregate == "mean":
                step /= clients.size
            new = unflatten(flatten(clusters) - self.lr * step, clusters)
            train_loss = float(replies["loss"].mean())
        else:
            new = group_mean(replies["params"], self.ctx.train_sizes(clients), chosen, clusters)
            train_loss = float(replies["loss"].cpu().numpy().mean())
        assignment = state["assignment"].clone()
        assignment[torch.as_tensor(clients, device=assignment.device)] = chosen
        out["clusters"], out["assignment"] = new, assignment
        return out, {"train_loss": train_loss}
