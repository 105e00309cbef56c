r"""Per-FedAvg (Fallah et al. 2020), first-order MAML version as in PFLlib's ``PerAvg``.

Each local step of client :math:`i` takes two minibatches :math:`B, B'`:

.. math::

    \theta' = \theta - \alpha \nabla F_i(\theta; B), \qquad
    \theta \leftarrow \theta - \beta \nabla F_i(\theta'; B'),

and the server averages :math:`\theta` (weights :math:`n_i`). The personalised model is one
gradient step of size :math:`\alpha` from the global model on a minibatch of the client's
own data, :math:`\theta_i = \theta - \alpha \nabla F_i(\theta)` (Fallah et al. 2020, Eq. 3;
PFLlib's ``train_one_step``). :math:`\alpha` is the learning rate, :math:`\beta` the outer
(meta) step, 0.001 by default: IP-FL's comparison, Khan et al. §6, gives no value;
PFLlib's default of 0 would freeze the outer step.

As a federation: every participant receives the global model and takes its MAML steps on its
own data (``client_update``), the server takes the data-weighted mean (``server_update``);
after the last round every client receives the global model and takes its personalisation
step (the finish exchange: ``client_finish``, ``server_finish``).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import torch

from econ.validation import positive
from learning.algorithms.base import Context, SplitAlgorithm, register
from learning.algorithms.exchanges import Dispatch, FinishExchange, State
from learning.engine import Params, broadcast, group_mean, sample_batches, select

__all__ = ["PerFedAvg", "PerFedAvgState"]


def _rows(ctx: Context, clients: np.ndarray, steps: int, rng: np.random.Generator) -> torch.Tensor:
    """Rows of ``ctx.train`` of ``steps`` minibatches of each of ``clients``.

    Shape ``(len(clients), steps, batch_size)``: one :func:`sample_batches` draw.
    """
    data = ctx.train
    picks = sample_batches(data.sizes_numpy()[clients], steps, ctx.local.batch_size, rng)
    picks = picks + data.offsets.cpu().numpy()[clients][:, None, None]
    return torch.as_tensor(picks, dtype=torch.long, device=ctx.device)


def _starts(sent: Dispatch, n: int, device: torch.device) -> Params:
    """``n`` copies of the global model that ``sent`` carries."""
    return select(sent.common["global"], torch.zeros(n, dtype=torch.long, device=device))


#: The required entry (``global`` is a keyword, hence the functional form).
_PerFedAvgEntries = TypedDict("_PerFedAvgEntries", {"global": Params})


class PerFedAvgState(_PerFedAvgEntries, total=False):
    """State of :class:`PerFedAvg`.

    ``global`` (one row) and, after ``finish``, the clients' ``personal`` models.
    """

    personal: Params


@register
class PerFedAvg(SplitAlgorithm[PerFedAvgState], FinishExchange[PerFedAvgState]):
    """First-order Per-FedAvg; state :class:`PerFedAvgState`.

    :meth:`client_models` is the global model for every client until ``finish``, and the
    personalised models (Eq. 3) after it.
    """

    name = "per-fedavg"
    client_parameters = ("beta",)

    def __init__(self, ctx: Context, beta: float = 0.001) -> None:
        super().__init__(ctx)
        self.beta = float(positive("beta", beta))

    def init(self, models: Params, rng: np.random.Generator) -> PerFedAvgState:
        """The global model is the first initial model."""
        return {"global": select(models, np.array([0]))}

    def dispatch(
        self, state: PerFedAvgState, clients: np.ndarray, rng: np.random.Generator
    ) -> Dispatch:
        """Every participant receives the global model."""
        return Dispatch(each={}, common={"global": state["global"]}, config={})

    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        r"""``ctx.local.steps`` first-order MAML steps from the global model.

        .. math::

            \theta' = \theta - \alpha \nabla F_i(\theta; B), \qquad
            \theta \leftarrow \theta - \beta \nabla F_i(\theta'; B'),

        the minibatch pairs :math:`B, B'` of step :math:`t` being minibatches
        :math:`2t, 2t + 1` of one :func:`sample_batches` draw; replies the trained ``params``
        and each client's mean inner ``loss``.

        References
        ----------
        Fallah, Mokhtari and Ozdaglar (2020), "Personalized Federated Learning with Theoretical
        Guarantees: A Model-Agnostic Meta-Learning Approach", Algorithm 1 (first-order
        version, as PFLlib's ``PerAvg``).
        """
        clients = np.asarray(clients, dtype=np.int64)
        steps = ctx.local.steps
        rows = _rows(ctx, clients, 2 * steps, rng)
        data, alpha = ctx.train, ctx.local.sgd.lr
        params = _starts(sent, clients.size, ctx.device)
        total = torch.zeros(clients.size, dtype=torch.float64, device=ctx.device)
        for t in range(steps):
            first, second = rows[:, 2 * t], rows[:, 2 * t + 1]
            grads, loss = ctx.engine.gradients(params, data.x[first], data.y[first])
            inner = {k: p - alpha * grads[k] for k, p in params.items()}
            outer, _ = ctx.engine.gradients(inner, data.x[second], data.y[second])
            params = {k: (p - self.beta * outer[k]).detach() for k, p in params.items()}
            total += loss.detach().double()
        return {"params": params, "loss": total / steps}

    def server_update(
        self, state: PerFedAvgState, clients: np.ndarray, replies: State, rng: np.random.Generator
    ) -> tuple[PerFedAvgState, dict[str, float]]:
        """The data-weighted mean of the participants' models (weights :math:`n_i`)."""
        groups = torch.zeros(len(clients), dtype=torch.long, device=self.ctx.device)
        weights = self.ctx.train_sizes(clients)
        new = group_mean(replies["params"], weights, groups, state["global"])
        return {"global": new}, {"train_loss": float(replies["loss"].mean())}

    def client_models(self, state: PerFedAvgState) -> Params:
        """The personalised models after ``finish``; before it the global model for everyone."""
        if "personal" in state:
            return state["personal"]
        return broadcast({k: v[0] for k, v in state["global"].items()}, self.ctx.n_clients)

    def final_dispatch(self, state: PerFedAvgState) -> Dispatch:
        """Every client receives the global model."""
        return Dispatch(each={}, common={"global": state["global"]}, config={})

    def client_finish(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        r"""The personalised model: one gradient step of size :math:`\alpha` from the global model.

        :math:`\theta_i = \theta - \alpha \nabla F_i(\theta)` on a minibatch of the client's
        training data.

        References
        ----------
        Fallah, Mokhtari and Ozdaglar (2020), "Personalized Federated Learning with Theoretical
        Guarantees: A Model-Agnostic Meta-Learning Approach", Eq. (3).
        """
        clients = np.asarray(clients, dtype=np.int64)
        rows = _rows(ctx, clients, 1, rng)[:, 0]
        start = _starts(sent, clients.size, ctx.device)
        grads, _ = ctx.engine.gradients(start, ctx.train.x[rows], ctx.train.y[rows])
        alpha = ctx.local.sgd.lr
        return {"personal": {k: (p - alpha * grads[k]).detach() for k, p in start.items()}}

    def server_finish(self, state: PerFedAvgState, replies: State) -> PerFedAvgState:
        """The personalised models are the clients' models."""
        return {**state, "personal": replies["personal"]}
