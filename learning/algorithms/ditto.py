r"""Ditto (Li et al. 2021): FedAvg for a global model, plus a personal model per client.

Each personal model is pulled toward the global one.

``variant="standard"``: each round the participants train the global model :math:`w`
locally and the server averages (FedAvg); each participant also takes local steps on its
personal objective

.. math::

    v_i \leftarrow v_i - \eta\big(\nabla F_i(v_i) + \lambda (v_i - w^t)\big),

with the global model :math:`w^t` of the start of the round. Clients deploy :math:`v_i`.
``lam = 0`` is Local training; large ``lam`` approaches FedAvg. Werner et al. (2023) use
:math:`\lambda = 1` on MNIST.

``variant="as-run"``: the MNIST/CIFAR code Werner et al. (2023) published, one
step per round. Client :math:`i` takes its minibatch gradient *at its personal model* into a
heavy-ball buffer, :math:`u_i \leftarrow \beta u_i + (1 - d) \nabla F_i(v_i)` (``momentum``
:math:`\beta = 0.9`, ``dampening`` :math:`d = 0`; CoBo's code uses :math:`d = 0.1`; a
client's first step sets :math:`u_i = \nabla F_i(v_i)`), and

.. math::

    w^{t+1} = w^t - \eta\, \frac{1}{m} \sum_i u_i, \qquad
    v_i \leftarrow v_i - \eta\big(u_i + \lambda (v_i - w^t)\big),

so the global model is driven by gradients taken at the personal models, not at :math:`w`.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np
import torch

from econ.validation import choice, in_interval, non_negative
from learning import byzantine
from learning.algorithms.base import Context, SplitAlgorithm, register
from learning.algorithms.exchanges import Dispatch, State
from learning.all_pairs import client_batches, flatten, unflatten
from learning.engine import Params, group_mean, select
from learning.optim import momentum_buffer

__all__ = ["Ditto", "DittoState"]


#: The required entries (``global`` is a keyword, hence the functional form).
_DittoEntries = TypedDict("_DittoEntries", {"global": Params, "personal": Params})


class DittoState(_DittoEntries, total=False):
    """State of :class:`Ditto`.

    ``global`` (one row) and the clients' ``personal`` models, and for ``variant="as-run"`` the
    clients' ``momentum`` buffers (one flat row each) and which clients have ``started``.
    """

    momentum: torch.Tensor
    started: torch.Tensor


@register
class Ditto(SplitAlgorithm[DittoState]):
    """Ditto with proximal weight ``lam``; state :class:`DittoState`.

    ``momentum`` (default 0.9) and ``dampening`` (default 0) belong to the as-run variant; the
    standard one trains with the context's optimiser.
    """

    name = "ditto"
    client_parameters = ("lam", "variant", "momentum", "dampening")
    client_model = "personal"

    def __init__(
        self,
        ctx: Context,
        lam: float = 1.0,
        variant: str = "standard",
        momentum: float | None = None,
        dampening: float = 0.0,
    ) -> None:
        super().__init__(ctx)
        self.lam = float(non_negative("lam", lam))
        self.variant = choice("variant", variant, ("standard", "as-run"))
        if (momentum is not None or dampening) and self.variant == "standard":
            raise ValueError(
                "momentum and dampening belong to variant='as-run'; standard Ditto uses ctx.local"
            )
        beta = 0.9 if momentum is None else momentum
        self.momentum = float(in_interval("momentum", beta, 0.0, 1.0, high_open=True))
        self.dampening = float(in_interval("dampening", dampening, 0.0, 1.0, high_open=True))

    def init(self, models: Params, rng: np.random.Generator) -> DittoState:
        """The global model is the first initial model; each personal model its client's.

        The as-run variant adds zero momentum buffers and marks no client started.
        """
        state: DittoState = {
            "global": select(models, np.array([0])),
            "personal": {k: v.clone() for k, v in models.items()},
        }
        if self.variant == "as-run":
            state["momentum"] = torch.zeros_like(flatten(models))
            state["started"] = torch.zeros(
                flatten(models).shape[0], dtype=torch.bool, device=self.ctx.device
            )
        return state

    def client_models(self, state: DittoState) -> Params:
        """The personal models :math:`v_i`."""
        return state["personal"]

    @property
    def client_held(self) -> tuple[str, ...]:
        """The personal models (and the as-run variant's buffers) stay on the clients."""
        return ("personal",) if self.variant == "standard" else ("personal", "momentum", "started")

    def client_arguments(self) -> dict[str, Any]:
        """``lam`` and ``variant``, and for the as-run variant ``momentum`` and ``dampening``."""
        if self.variant == "standard":
            return {"lam": self.lam, "variant": self.variant}
        return super().client_arguments()

    def dispatch(
        self, state: DittoState, clients: np.ndarray, rng: np.random.Generator
    ) -> Dispatch:
        """Every participant receives the global model :math:`w^t`."""
        return Dispatch(each={}, common={"global": state["global"]}, config={})

    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        r"""Each participant's local work on the global and its personal model.

        Standard: local training of :math:`w^t` (reply ``params``) and local steps of the
        personal model with the pull :math:`\lambda (v_i - w^t)`,

        .. math::

            v_i \leftarrow v_i - \eta\big(\nabla F_i(v_i) + \lambda (v_i - w^t)\big);

        as-run: one step, the heavy-ball buffer :math:`u_i` of the gradient at :math:`v_i`
        (reply ``update``) and
        :math:`v_i \leftarrow v_i - \eta\big(u_i + \lambda (v_i - w^t)\big)` (module
        docstring).

        References
        ----------
        Li, Hu, Beirami and Smith (2021), "Ditto: Fair and Robust Federated Learning Through
        Personalization", Algorithm 1; Werner et al. (2023), the published MNIST/CIFAR code
        (``variant="as-run"``).
        """
        clients = np.asarray(clients, dtype=np.int64)
        personal = sent.each["personal"]
        if self.variant == "as-run":
            lr = ctx.local.sgd.lr
            x, y = client_batches(ctx.train, clients, ctx.local.batch_size, rng)
            grads, loss = ctx.engine.gradients(personal, x, y)
            buffer = momentum_buffer(
                sent.each["momentum"],
                flatten(grads),
                self.momentum,
                self.dampening,
                fresh=~sent.each["started"],
            )
            v = flatten(personal)
            v = v - lr * (buffer + self.lam * (v - flatten(sent.common["global"])))
            return {
                "update": buffer,
                "loss": loss,
                "personal": unflatten(v, personal),
                "momentum": buffer,
                "started": torch.ones_like(sent.each["started"]),
            }
        global_rng, personal_rng = rng.spawn(2)
        zeros = torch.zeros(clients.size, dtype=torch.long, device=ctx.device)
        centre = select(sent.common["global"], zeros)
        trained = ctx.fit(centre, clients, global_rng)
        tuned = ctx.fit(personal, clients, personal_rng, prox_center=centre, prox_mu=self.lam)
        return {
            "params": trained.params,
            "loss": torch.from_numpy(tuned.loss),
            "personal": tuned.params,
        }

    def server_update(
        self, state: DittoState, clients: np.ndarray, replies: State, rng: np.random.Generator
    ) -> tuple[DittoState, dict[str, float]]:
        r"""The new global model from the participants' replies.

        Standard: FedAvg of the participants' trained global models; as-run:
        :math:`w^{t+1} = w^t - \eta \frac{1}{m} \sum_i u_i` over the :math:`m` submitted
        buffers (:func:`learning.byzantine.submit`).

        References
        ----------
        Li, Hu, Beirami and Smith (2021), "Ditto: Fair and Robust Federated Learning Through
        Personalization", Algorithm 1; Werner et al. (2023), the published MNIST/CIFAR code
        (``variant="as-run"``).
        """
        clients = np.asarray(clients, dtype=np.int64)
        if self.variant == "as-run":
            sent = byzantine.submit(self.ctx, replies["update"], clients, rng)
            w = flatten(state["global"])
            lr = self.ctx.local.sgd.lr
            new_global = unflatten(w - lr * sent.mean(0, keepdim=True), state["global"])
            return {**state, "global": new_global}, {"train_loss": float(replies["loss"].mean())}
        zeros = torch.zeros(clients.size, dtype=torch.long, device=self.ctx.device)
        new_global = group_mean(
            replies["params"], self.ctx.train_sizes(clients), zeros, state["global"]
        )
        return {**state, "global": new_global}, {
            "train_loss": float(replies["loss"].cpu().numpy().mean())
        }
