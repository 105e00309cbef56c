r"""Group averaging: ``local``, ``fedavg`` and ``oracle`` as one algorithm.

Clients are assigned to groups; each group holds one model. In a round every participating
client starts from its group's model, takes the local SGD steps, and each group's model
becomes the data-weighted mean of its clients' results (FedAvg's aggregate, McMahan et al.
2017, Algorithm 1):

.. math::

    w_g \leftarrow \frac{\sum_{k \in S_g} n_k w_k}{\sum_{k \in S_g} n_k}
        = w_g + \frac{\sum_{k \in S_g} n_k (w_k - w_g)}{\sum_{k \in S_g} n_k}.

:func:`learning.engine.group_mean` computes the second form, which float32 rounds far less
(the oracle of the synthetic regression, weights ~100 and 16 clients of 9 examples, stalled
at a mean parameter error of 1.45e-4 with the first and reaches 2.5e-5 with the second).

The three algorithms differ only in the assignment:

- ``local``: every client is its own group (no collaboration);
- ``fedavg``: one group of everyone;
- ``oracle``: the ground-truth clusters (FedAvg within each known cluster; the upper
  baseline of the clustering experiments, Werner 2024, ch. 2 §2.4).

With ``finetune_steps > 0`` each client finally takes that many local steps from its group
model and keeps the result as its personal model (FedAvg + fine-tuning).

**Momentum across rounds.** Local training is the context's SGD; with heavy-ball momentum
:math:`\beta` (``ctx.local.sgd.momentum``) its buffer :math:`u` starts at zero every round by
default (FedAvg with a fresh local optimiser). ``keep_momentum`` carries it over instead:

- ``"client"``: each client keeps its own buffer, :math:`u_k \leftarrow \beta u_k + g_k`
  at every local step of every round it takes part in. With one local step per round this is
  the authors' MNIST Global/GT in their published code (FedSGD; Werner 2024, Table 2.1):
  :math:`w_g \leftarrow w_g - \eta \sum_{k \in S_g} n_k u_k / \sum_{k \in S_g} n_k`.
- ``"group"``: one buffer per group, handed to its clients at the start of the round and
  replaced by the same data-weighted mean as the models,
  :math:`U_g \leftarrow \sum_{k \in S_g} n_k u_k / \sum_{k \in S_g} n_k`. With one
  full-batch step per round this is gradient descent with momentum on the group's pooled data,
  :math:`U_g \leftarrow \beta U_g + \bar g_g`, :math:`w_g \leftarrow w_g - \eta U_g`: the
  synthetic code's Groundtruth (one buffer per cluster) and Centralized (the runs of
  Werner et al. 2023, Fig. 3).

The two agree when every client takes part in every round with one local step (the mean is
linear); they differ with partial participation or several local steps. The synthetic code's
EMA :math:`u \leftarrow 0.9u + 0.1g` at step :math:`\eta` is the heavy ball at step
:math:`0.1\eta` for a buffer started at zero; PyTorch's dampened SGD
starts it at the first gradient instead, a transient this form does not reproduce.

Personalised methods that move clients between groups (IFCA, clustering) subclass
:class:`GroupAveraging` and override :meth:`GroupAveraging.configure` or the assignment.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, TypedDict

import numpy as np
import torch

from econ.validation import choice, non_negative
from learning.algorithms.base import Context, FederatedAlgorithm, register
from learning.algorithms.exchanges import Dispatch, FinishExchange, State
from learning.engine import LocalResult, Params, group_mean, select

__all__ = ["KEEP_MOMENTUM", "FedAvg", "GroupAveraging", "GroupAveragingState", "Local", "Oracle"]

#: Who owns a momentum buffer that persists across rounds (module docstring).
KEEP_MOMENTUM = ("client", "group")


class _GroupAveragingEntries(TypedDict):
    groups: Params
    assignment: torch.Tensor


class GroupAveragingState(_GroupAveragingEntries, total=False):
    """State of :class:`GroupAveraging`.

    ``groups`` (stacked group models), ``assignment`` (group of each client, int64 tensor),
    with ``keep_momentum`` the buffers ``momentum`` (stacked, one row per client or per group)
    and, after fine-tuning, ``personal`` (stacked client models).
    """

    momentum: Params
    personal: Params


class GroupAveraging(FederatedAlgorithm[GroupAveragingState], FinishExchange[GroupAveragingState]):
    """FedAvg within fixed groups of clients; state :class:`GroupAveragingState`.

    See the module docstring for the aggregate and the momentum options.
    """

    def __init__(
        self, ctx: Context, finetune_steps: int = 0, keep_momentum: str | None = None
    ) -> None:
        super().__init__(ctx)
        self.finetune_steps = int(non_negative("finetune_steps", finetune_steps))
        self.keep_momentum = (
            None if keep_momentum is None else choice("keep_momentum", keep_momentum, KEEP_MOMENTUM)
        )
        if self.keep_momentum is not None and ctx.local.sgd.momentum == 0:
            raise ValueError(
                f"keep_momentum={keep_momentum!r} needs local SGD with momentum > 0; "
                f"ctx.local.sgd.momentum is {ctx.local.sgd.momentum}"
            )

    @abstractmethod
    def assignment(self) -> np.ndarray:
        """Group index of each client, values ``0 .. G-1``."""

    def init(self, models: Params, rng: np.random.Generator) -> GroupAveragingState:
        """Each group's model is the initial model of its first client.

        With ``keep_momentum`` the buffers start at zero, one row per client (``"client"``) or
        per group (``"group"``).
        """
        assignment = np.asarray(self.assignment(), dtype=np.int64)
        first = [int(np.flatnonzero(assignment == g)[0]) for g in range(assignment.max() + 1)]
        state: GroupAveragingState = {
            "groups": select(models, np.array(first)),
            "assignment": torch.as_tensor(assignment, device=self.ctx.device),
        }
        if self.keep_momentum is not None:
            owners = models if self.keep_momentum == "client" else state["groups"]
            state["momentum"] = {k: torch.zeros_like(v) for k, v in owners.items()}
        return state

    def configure(self, state: GroupAveragingState, clients: np.ndarray) -> Params:
        """Every participant starts from the model of its group."""
        return select(state["groups"], state["assignment"][self._index(clients)])

    def _owners(self, state: GroupAveragingState, clients: np.ndarray) -> torch.Tensor:
        """Row of ``state["momentum"]`` that each of ``clients`` reads and writes."""
        index = self._index(clients)
        return index if self.keep_momentum == "client" else state["assignment"][index]

    def fit_options(self, state: GroupAveragingState, clients: np.ndarray) -> dict[str, Any]:
        """With ``keep_momentum``, each participant's kept ``momentum`` buffer; else none."""
        if self.keep_momentum is None:
            return {}
        return {"momentum": select(state["momentum"], self._owners(state, clients))}

    def aggregate(
        self, state: GroupAveragingState, clients: np.ndarray, trained: LocalResult
    ) -> GroupAveragingState:
        r"""Each group's model becomes the data-weighted mean of its participants' models.

        .. math::

            w_g \leftarrow w_g + \frac{\sum_{k \in S_g} n_k (w_k - w_g)}{\sum_{k \in S_g} n_k},

        with :math:`S_g` the round's participants in group :math:`g` (a group without one keeps
        its model). With ``keep_momentum="group"`` the group buffers are averaged the same way;
        with ``"client"`` each participant's buffer is replaced by its own.

        References
        ----------
        McMahan et al. (2017), "Communication-Efficient Learning of Deep Networks from
        Decentralized Data", Algorithm 1 (FederatedAveraging).
        """
        groups = state["assignment"][self._index(clients)]
        weights = self.ctx.train_sizes(clients)
        new: GroupAveragingState = {
            **state,
            "groups": group_mean(trained.params, weights, groups, state["groups"]),
        }
        momentum = trained.momentum
        if self.keep_momentum == "group":
            assert momentum is not None  # kept momentum needs sgd.momentum > 0 (__init__)
            new["momentum"] = group_mean(momentum, weights, groups, state["momentum"])
        elif self.keep_momentum == "client":
            assert momentum is not None
            index = self._index(clients)
            new["momentum"] = {
                k: v.index_copy(0, index, momentum[k]) for k, v in state["momentum"].items()
            }
        return new

    def _index(self, clients: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.asarray(clients), dtype=torch.long, device=self.ctx.device)

    def client_models(self, state: GroupAveragingState) -> Params:
        """The fine-tuned personal models if there are any, else each client's group model."""
        if "personal" in state:
            return state["personal"]
        return select(state["groups"], state["assignment"])

    def final_dispatch(self, state: GroupAveragingState) -> Dispatch | None:
        """With ``finetune_steps``, every client receives its group's model."""
        if not self.finetune_steps:
            return None
        return Dispatch(
            each={"start": self.client_models(state)},
            common={},
            config={"steps": self.finetune_steps},
        )

    def client_finish(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        """Fine-tuning: ``steps`` local steps from the group's model."""
        tuned = ctx.fit(sent.each["start"], clients, rng, steps=int(sent.config["steps"]))
        return {"personal": tuned.params}

    def server_finish(self, state: GroupAveragingState, replies: State) -> GroupAveragingState:
        """The fine-tuned models are the clients' personal models."""
        return {**state, "personal": replies["personal"]}


@register
class Local(GroupAveraging):
    """Each client trains alone on its own data."""

    name = "local"

    def assignment(self) -> np.ndarray:
        """Every client is its own group: ``0 .. n-1``."""
        return np.arange(self.ctx.n_clients)


@register
class FedAvg(GroupAveraging):
    """Federated averaging over all clients (McMahan et al. 2017), optional fine-tuning."""

    name = "fedavg"

    def assignment(self) -> np.ndarray:
        """One group of every client: all zeros.

        References
        ----------
        McMahan et al. (2017), "Communication-Efficient Learning of Deep Networks from
        Decentralized Data", Algorithm 1 (FederatedAveraging).
        """
        return np.zeros(self.ctx.n_clients, dtype=np.int64)


@register
class Oracle(GroupAveraging):
    """FedAvg within each ground-truth cluster of clients."""

    name = "oracle"

    def assignment(self) -> np.ndarray:
        """The ground-truth clusters of ``ctx.clusters``, renumbered ``0 .. G-1``.

        References
        ----------
        Werner (2024), ch. 2, §2.4: the oracle baseline of the clustering experiments.
        """
        _, inverse = np.unique(self.ctx.clusters, return_inverse=True)
        return inverse.astype(np.int64)
