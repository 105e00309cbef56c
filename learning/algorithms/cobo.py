r"""CoBo: collaborative learning via bilevel optimisation (Hashemi, He and Jaggi, NeurIPS 2024).

Every client :math:`i` keeps a personal model :math:`x_i`; a collaboration matrix
:math:`W \in [0, 1]^{n \times n}` (symmetric, :math:`W^0 = \mathbf 1 \mathbf 1^\top`) says who
pulls whom. One round (the paper's Section 2, "Algorithm": Algorithm 1 and the updates of
:math:`w_{ij}` and :math:`x_i`):

1. **Inner step** (client selection, projected gradient *ascent*) on sampled pairs only:

   .. math::

       z_{ij} = \tfrac12 (x_i + x_j), \qquad
       s_{ij} = \langle \nabla f_i(z_{ij}; \xi_i), \nabla f_j(z_{ij}; \xi_j) \rangle, \qquad
       w_{ij} \leftarrow \mathrm{clip}_{[0, 1]}(w_{ij} + \gamma s_{ij}) = w_{ji}.

   ``inner_solver="exact"`` takes the vertex :math:`w_{ij} = \mathbb 1[s_{ij} > 0]` instead
   (unchanged when :math:`s_{ij} = 0`): the Frank-Wolfe step the proof of Theorem 1 assumes (its
   Case 2 sets :math:`w_{ik} = 0` in one step, which a finite :math:`\gamma` does not guarantee).
2. **Outer step** (SGD on the loss plus the graph-Laplacian penalty, with the fresh
   :math:`W^{t+1}` and the snapshot :math:`X^t`):

   .. math::

       X \leftarrow X - \eta \big( G + \rho\, (D_W - W) X \big), \qquad D_W = \mathrm{diag}(W \mathbf 1).

**Pairs** (Algorithm 1, "with a probability 1/n"; Section 4.1 and Table 1 for the schedules): each
unordered pair of participating clients is drawn independently with probability :math:`p_t`
(:class:`~learning.algorithms.cobo_steps.PairSchedule`): ``constant`` :math:`p = 2/n` (the official code's reading of "1/n per
ordered pair", :math:`n - 1` pairs per round), ``time`` :math:`\min(1, c/(t+1))` or
:math:`\min(1, c/\sqrt{t+1})`, ``mixed`` (constant until ``switch_at`` rounds, then time-decaying;
paper: 0.2% of the run and 1/t, code: 800 iterations and :math:`1/\sqrt t`), ``all`` (every pair,
every round).

**Simplex variant** (Remark 1; the LLM experiment of Section 4.3): ``domain="simplex"``
starts from :math:`W^0 = (\mathbf 1 \mathbf 1^\top - I)/(n - 1)`, adds :math:`\gamma s_{ij}` to
both :math:`w_{ij}` and :math:`w_{ji}` and projects every touched row onto the probability
simplex (sort-based Euclidean projection). :math:`W` is then row-stochastic, not symmetric.
The second midpoint gradient uses client :math:`j`'s data (the paper's definition; the
official LLM code uses client :math:`i`'s again).

**Elasticity** (Section 2, "Algorithm": pairwise updates need no global synchronisation):
:func:`~learning.algorithms.cobo_steps.join_client` adds a row and column of ones (a fresh client trusts everyone until the midpoint
gradients disagree) and :func:`~learning.algorithms.cobo_steps.leave_client` deletes them; in the federated algorithm, clients
absent from a round neither train nor update their weights.

The steps themselves, on stacked tensors, are in :mod:`learning.algorithms.cobo_steps`; the
pairwise work (gradients at pairwise midpoints) in one call is its
:func:`~learning.algorithms.cobo_steps.pairwise_work`. :class:`CoBo` splits that work between
the clients, each computing its gradients at its pairs' midpoints on its own data
(:func:`midpoint_gradients`), and the server, which forms the inner products
(:func:`inner_products`). :mod:`learning.algorithms.cobo_quadratic` runs the algorithm on
Example 2 of the paper (clustered quadratics) with exact gradients, started far from all
optima (Point A of Figure 1).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import torch

from econ.validation import choice, non_negative, positive, positive_int
from learning.algorithms.base import Context, SplitAlgorithm, register
from learning.algorithms.cobo_steps import (
    DOMAINS,
    INNER_SOLVERS,
    PairSchedule,
    initial_weights,
    local_step,
    sample_pairs,
    update_weights,
)
from learning.algorithms.exchanges import Dispatch, MultiExchange, State
from learning.all_pairs import gradients_on, paired_products
from learning.engine import Engine, Params, sample_batches, select
from learning.optim import SGDConfig

__all__ = ["CoBo", "CoBoState", "inner_products", "midpoint_gradients"]


# --------------------------------------------------------------------------- federated algorithm


class _CoBoEntries(TypedDict):
    models: Params
    momentum: Params
    started: torch.Tensor
    weights: torch.Tensor
    round: torch.Tensor


class CoBoState(_CoBoEntries, total=False):
    """State of :class:`CoBo`.

    Every client's ``models`` and ``momentum`` buffers (stacked), which clients have ``started``,
    the collaboration weights :math:`W` (``weights``) and the ``round``. Between ``dispatch`` and
    ``server_update`` it also carries the round's memo (each dispatch's ``plan``): the sampled
    ``pairs``, the minibatch positions of every local step (``batches``), the participants' current
    models and buffers (``local``, ``local_momentum``), which of them take their ``fresh`` first
    step, the ``losses`` so far, the updated :math:`W` (``new_weights``), the midpoint ``slots`` of
    the pairs' exchange and the current local ``step``.
    """

    pairs: torch.Tensor
    batches: torch.Tensor
    local: Params
    local_momentum: Params
    fresh: torch.Tensor
    losses: torch.Tensor
    new_weights: torch.Tensor
    slots: torch.Tensor
    step: torch.Tensor


@register
class CoBo(SplitAlgorithm[CoBoState], MultiExchange[CoBoState]):
    r"""CoBo on the round loop (see the module docstring); state :class:`CoBoState`.

    Each round: sample pairs among the participating clients, draw one fresh minibatch per
    client, update :math:`W` from the midpoint inner products, then ``local.steps`` outer
    steps

    .. math::

        m \leftarrow \beta m + (1 - d)(g + \lambda x), \qquad
        x_i \leftarrow x_i - \eta \Big(m_i + \rho \sum_k w_{ik} (x_i - x_k)\Big)

    with the context's optimiser (learning rate :math:`\eta`, momentum :math:`\beta`, dampening
    :math:`d`, weight decay :math:`\lambda`; a client's first step sets :math:`m = g + \lambda x`,
    :func:`learning.optim.momentum_buffer`) on the gradient part only (the penalty has no momentum,
    as in the official vision code), the sum running over the participating clients.

    **Client and server halves** (:class:`~learning.algorithms.exchanges.MultiExchange`, one
    exchange for the pairs and one per local step). ``dispatch`` samples the pairs and draws
    every minibatch of the round (the pair minibatch, then one per step), and sends each
    client in a pair the midpoints :math:`z_{ij}` of its pairs with its pair minibatch's
    positions; the client returns its gradients at them on its own data
    (:func:`midpoint_gradients`), the server forms :math:`s_{ij}` (:func:`inner_products`)
    and updates :math:`W` (:func:`~learning.algorithms.cobo_steps.update_weights`). Then every local step, each participant
    returns its minibatch gradient at its current model, and the server takes the step above
    (:func:`~learning.algorithms.cobo_steps.local_step`): the penalty needs every participant's model, so the step is the
    server's.

    Parameters
    ----------
    rho : float
        Penalty :math:`\rho` (code: 0.05). Keep :math:`\eta\rho n < 2` for stability: the penalty
        step :math:`X \leftarrow (I - \eta\rho L_W) X` has :math:`\lambda_{\max}(L_W) = n` at
        :math:`W = \mathbf 1 \mathbf 1^\top`.
    gamma : float
        Inner step size :math:`\gamma` (code: 0.01).
    schedule, p_const, switch_at, decay : see :class:`~learning.algorithms.cobo_steps.PairSchedule`
        Default ``mixed``: :math:`2/n` for the first ``switch_at`` rounds, then :math:`1/t`.
    domain : {"box", "simplex"}
    inner_solver : {"pgd", "exact"}
    pair_batch_size : int, optional
        Minibatch of each client for the midpoint gradients (the theory's :math:`b`);
        the context's local batch size when None.
    """

    name = "cobo"

    def __init__(
        self,
        ctx: Context,
        rho: float = 0.05,
        gamma: float = 0.01,
        schedule: str = "mixed",
        p_const: float | None = None,
        switch_at: int = 10,
        decay: str = "1/t",
        domain: str = "box",
        inner_solver: str = "pgd",
        pair_batch_size: int | None = None,
    ) -> None:
        super().__init__(ctx)
        self.pair_batch_size = (
            ctx.local.batch_size
            if pair_batch_size is None
            else positive_int("pair_batch_size", pair_batch_size)
        )
        self.rho = float(non_negative("rho", rho))
        self.gamma = float(positive("gamma", gamma))
        self.schedule = PairSchedule(schedule, p_const, int(switch_at), decay)
        self.domain = choice("domain", domain, DOMAINS)
        self.inner_solver = choice("inner_solver", inner_solver, INNER_SOLVERS)
        if domain == "simplex" and inner_solver == "exact":
            raise ValueError("inner_solver='exact' is defined on the box domain only")

    def init(self, models: Params, rng: np.random.Generator) -> CoBoState:
        r"""Every client's model is its initial row, with a zero momentum buffer, not started.

        :math:`W^0` is :func:`~learning.algorithms.cobo_steps.initial_weights` of the domain
        (:math:`\mathbf 1 \mathbf 1^\top` on the box, :math:`(\mathbf 1 \mathbf 1^\top - I)/(n-1)`
        on the simplex); the round counter starts at 0.

        References
        ----------
        Hashemi, He and Jaggi (2024), "CoBo: Collaborative Learning via Bilevel Optimization",
        Section 2 ("Algorithm"), Algorithm 1.
        """
        n = self.ctx.n_clients
        return {
            "models": {k: v.clone() for k, v in models.items()},
            "momentum": {k: torch.zeros_like(v) for k, v in models.items()},
            "started": torch.zeros(n, dtype=torch.bool, device=self.ctx.device),
            "weights": initial_weights(n, self.domain).to(self.ctx.device),
            "round": torch.zeros((), dtype=torch.int64),
        }

    def _sgd(self) -> SGDConfig:
        sgd = self.ctx.local.sgd
        if not isinstance(sgd, SGDConfig):
            raise ValueError("CoBo's local steps are SGD steps, not Adadelta")
        return sgd

    def dispatch(self, state: CoBoState, clients: np.ndarray, rng: np.random.Generator) -> Dispatch:
        """Draw the round's pairs and minibatches; send the pairs' exchange.

        ``rng``'s first child draws the pairs, its second the pair minibatch and one minibatch
        per local step. Each client in a pair receives the midpoints of its pairs; when no pair
        was drawn, the first local step's exchange is sent instead.
        """
        self._sgd()
        clients = np.asarray(clients, dtype=np.int64)
        pair_rng, batch_rng = rng.spawn(2)
        pairs = sample_pairs(self.schedule, int(state["round"]), clients, pair_rng)
        sizes = self.ctx.train.sizes_numpy()[clients]
        first = sample_batches(sizes, 1, self.pair_batch_size, batch_rng)[:, 0]
        steps = [
            sample_batches(sizes, 1, self.ctx.local.batch_size, batch_rng)[:, 0]
            for _ in range(self.ctx.local.steps)
        ]
        idx = torch.as_tensor(clients, device=self.ctx.device)
        plan: State = {
            "pairs": torch.from_numpy(pairs),
            "batches": torch.from_numpy(np.stack(steps)),
            "local": select(state["models"], idx),
            "local_momentum": select(state["momentum"], idx),
            "fresh": ~state["started"].index_select(0, idx),
        }
        if pairs.shape[0] == 0:
            return self._first_step(state, clients, plan, torch.zeros(0))
        position = np.full(self.ctx.n_clients, -1, dtype=np.int64)
        position[clients] = np.arange(clients.size)
        local_pairs = position[pairs]
        receivers, count, slots = _midpoint_slots(local_pairs, clients.size)
        width = int(count.max())
        block = torch.as_tensor(local_pairs, device=self.ctx.device)
        flat_slots = torch.as_tensor(slots, device=self.ctx.device)
        midpoints: Params = {}
        for name, v in plan["local"].items():
            z = 0.5 * (v.index_select(0, block[:, 0]) + v.index_select(0, block[:, 1]))
            padded = z.new_zeros(receivers.size * width, *z.shape[1:])
            padded[flat_slots[:, 0]] = z
            padded[flat_slots[:, 1]] = z
            midpoints[name] = padded.reshape(receivers.size, width, *z.shape[1:])
        return Dispatch(
            each={
                "midpoints": midpoints,
                "count": torch.from_numpy(count),
                "batch": torch.from_numpy(first[receivers]),
            },
            common={},
            config={"exchange": "pairs"},
            receivers=receivers,
            plan={**plan, "slots": flat_slots},
        )

    def _first_step(
        self, state: CoBoState, clients: np.ndarray, plan: State, inner: torch.Tensor
    ) -> Dispatch:
        """Take the inner step on the round's pairs, then send the first local step's exchange.

        ``inner`` holds the pairs' inner products :math:`s_{ij}`.
        """
        weights = update_weights(
            state["weights"],
            plan["pairs"].numpy(),
            inner,
            gamma=self.gamma,
            domain=self.domain,
            solver=self.inner_solver,
        )
        return self._step_exchange({**plan, "new_weights": weights}, 0)

    @staticmethod
    def _step_exchange(plan: State, step: int) -> Dispatch:
        """Local step ``step``: every participant's current model and minibatch positions."""
        return Dispatch(
            each={"model": plan["local"], "batch": plan["batches"][step]},
            common={},
            config={"exchange": "step"},
            plan={**plan, "step": torch.tensor(step)},
        )

    def _stepped(self, state: CoBoState, clients: np.ndarray, replies: State) -> State:
        """The round's memo after the local step whose gradients are ``replies``."""
        idx = torch.as_tensor(np.asarray(clients, dtype=np.int64), device=self.ctx.device)
        coupling = state["new_weights"].index_select(0, idx).index_select(1, idx)
        local, momentum = local_step(
            state["local"],
            replies["gradient"],
            state["local_momentum"],
            coupling,
            self._sgd(),
            self.rho,
            state.get("fresh"),
        )
        loss = replies["loss"].detach()[None]
        done = {k: v for k, v in state.items() if k in _MEMO and k != "fresh"}
        losses = loss if "losses" not in state else torch.cat([state["losses"], loss])
        return {**done, "local": local, "local_momentum": momentum, "losses": losses}

    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        r"""Gradients of each participant on its own minibatch of the sent positions.

        In the pairs' exchange, the gradients :math:`\nabla f_i(z_{ij}; \xi_i)` at the sent
        midpoints (:func:`midpoint_gradients`); in a local step's exchange, the minibatch
        gradient :math:`\nabla f_i(x_i; \xi_i)` at the participant's current model, with its
        loss.

        References
        ----------
        Hashemi, He and Jaggi (2024), "CoBo: Collaborative Learning via Bilevel Optimization",
        Section 2 ("Algorithm"), Algorithm 1.
        """
        data = ctx.train
        clients = np.asarray(clients, dtype=np.int64)
        local = sent.each["batch"].cpu().numpy()
        rows = torch.from_numpy(local + data.offsets.cpu().numpy()[clients][:, None])
        rows = rows.to(ctx.device)
        x, y = data.x[rows], data.y[rows]
        if sent.config["exchange"] == "pairs":
            grads = midpoint_gradients(ctx.engine, sent.each["midpoints"], sent.each["count"], x, y)
            return {"gradient": grads}
        grads, loss = ctx.engine.gradients(sent.each["model"], x, y)
        return {"gradient": {k: g.detach() for k, g in grads.items()}, "loss": loss.detach()}

    def next_dispatch(
        self, state: CoBoState, clients: np.ndarray, replies: State
    ) -> Dispatch | None:
        r"""The round's next exchange from the replies to the last one; None after the last step.

        After the pairs' exchange: :math:`s_{ij}` (:func:`inner_products`), the inner step on
        :math:`W` and the first local step's exchange. After a local step: the outer step

        .. math::

            x_i \leftarrow x_i - \eta \Big(m_i + \rho \sum_k w_{ik} (x_i - x_k)\Big)

        (:func:`~learning.algorithms.cobo_steps.local_step`) and the next step's exchange.

        References
        ----------
        Hashemi, He and Jaggi (2024), "CoBo: Collaborative Learning via Bilevel Optimization",
        Section 2 ("Algorithm"), Algorithm 1.
        """
        if "step" not in state:  # the pairs' exchange
            inner = inner_products(replies["gradient"], state["slots"])
            plan = {k: v for k, v in state.items() if k in _MEMO}
            return self._first_step(state, clients, plan, inner)
        step = int(state["step"])
        if step + 1 == self.ctx.local.steps:
            return None
        return self._step_exchange(self._stepped(state, clients, replies), step + 1)

    def server_update(
        self, state: CoBoState, clients: np.ndarray, replies: State, rng: np.random.Generator
    ) -> tuple[CoBoState, dict[str, float]]:
        """Take the last outer step and store the participants' models, buffers and new W.

        The participants are marked started and the round counter advances. Metrics: the mean
        minibatch loss over the round's local steps (``train_loss``) and the number of sampled
        ``pairs``.
        """
        done = self._stepped(state, clients, replies)
        idx = torch.as_tensor(np.asarray(clients, dtype=np.int64), device=self.ctx.device)
        models = {k: v.clone() for k, v in state["models"].items()}
        momentum = {k: v.clone() for k, v in state["momentum"].items()}
        for name in models:
            models[name][idx] = done["local"][name].detach()
            momentum[name][idx] = done["local_momentum"][name].detach()
        started = state["started"].clone()
        started[idx] = True
        new_state: CoBoState = {
            "models": models,
            "momentum": momentum,
            "started": started,
            "weights": state["new_weights"],
            "round": torch.tensor(int(state["round"]) + 1, dtype=torch.int64),
        }
        metrics = {
            "train_loss": float(done["losses"].mean()),
            "pairs": float(state["pairs"].shape[0]),
        }
        return new_state, metrics

    def client_models(self, state: CoBoState) -> Params:
        """The personal models :math:`x_i`."""
        return state["models"]


#: The entries of CoBo's round memo (a dispatch's ``plan``) that go on to the next exchange.
_MEMO = ("pairs", "batches", "local", "local_momentum", "fresh", "losses", "new_weights")


def _midpoint_slots(pairs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each pair's midpoint goes among the receivers of the pairs' exchange.

    Returns the receivers (positions among the ``n`` participants that are in a pair), how many
    midpoints each gets, and for each pair ``(i, j)`` of ``pairs`` (positions) the slots of
    its two gradients (receiver row times the largest count, plus the midpoint's place).
    Each receiver gets the pairs it opens, then those it closes, in pair order: the order in
    which :func:`learning.all_pairs.midpoint_gradient_products` runs them on its batch.
    """
    degree = np.bincount(pairs.reshape(-1), minlength=n)
    receivers = np.flatnonzero(degree)
    row = np.full(n, -1, dtype=np.int64)
    row[receivers] = np.arange(receivers.size)
    width = int(degree.max())
    filled = np.zeros(receivers.size, dtype=np.int64)
    slots = np.empty_like(pairs)
    for side in (0, 1):
        for p, client in enumerate(pairs[:, side]):
            r = row[client]
            slots[p, side] = r * width + filled[r]
            filled[r] += 1
    return receivers, degree[receivers], slots


def midpoint_gradients(
    engine: Engine, midpoints: Params, count: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> Params:
    r"""The client half of CoBo's pairwise work: gradients at the received midpoints.

    Receiver ``r``'s gradients :math:`\nabla f_r(z; \xi_r)` at the first ``count[r]`` of its
    midpoints ``midpoints[r]`` on its minibatch ``(x[r], y[r])``, laid out (and zero-padded) like
    ``midpoints``: :func:`learning.all_pairs.gradients_on` on the batched engine (every midpoint a
    slot, run in order of its batch), the engine's per-client gradients otherwise.
    """
    first = next(iter(midpoints.values()))
    receivers, width = first.shape[0], first.shape[1]
    counts = count.to(device=first.device, dtype=torch.long)
    starts = torch.arange(receivers, device=first.device) * width
    slots = torch.cat(
        [s + torch.arange(int(c), device=first.device) for s, c in zip(starts, counts, strict=True)]
    )
    batches = torch.repeat_interleave(torch.arange(receivers, device=first.device), counts)
    flat = {k: v.reshape(receivers * width, *v.shape[2:]) for k, v in midpoints.items()}
    if engine.name == "batched":
        grads, _ = gradients_on(engine.model, engine.task, flat, x, y, batches, slots)
    else:
        grads, _ = engine.gradients(
            select(flat, slots), x.index_select(0, batches), y.index_select(0, batches)
        )
    out: Params = {}
    for name, v in flat.items():
        padded = torch.zeros_like(v)
        padded[slots] = grads[name].detach()
        out[name] = padded.reshape(midpoints[name].shape)
    return out


def inner_products(gradients: Params, slots: torch.Tensor) -> torch.Tensor:
    r"""The server half of CoBo's pairwise work: the inner products :math:`s_{ij}`.

    :math:`s_{ij}` of each pair is formed from the receivers' midpoint gradients
    (:func:`midpoint_gradients`, stacked one row per receiver); ``slots[p]`` are the positions
    (receiver row times the rows' width plus the midpoint) of pair ``p``'s two gradients.
    """
    flat = {k: g.reshape(-1, *g.shape[2:]) for k, g in gradients.items()}
    return paired_products(flat, slots[:, 0], slots[:, 1])
