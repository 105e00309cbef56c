r"""FedEM (Marfoq et al. 2021, Algorithm 1): client data as mixtures of ``K`` shared components.

Every client's data is a mixture of the same ``K`` components, with the client's own weights.

E-step on client :math:`i`: :math:`q_i(k \mid x, y) \propto \pi_{ik}\, e^{-\ell(\theta_k; x, y)}`;
M-step: :math:`\pi_{ik} = \mathrm{mean}_{(x,y) \in D_i}\, q_i(k \mid x, y)`, and each
component takes local SGD steps on the :math:`q`-weighted loss. Here the weighted loss is
realised by resampling: component :math:`k` trains on :math:`n_i` examples drawn with
probabilities :math:`q_i(k \mid \cdot) / \sum q_i(k \mid \cdot)` (an unbiased estimate of the
normalised weighted gradient), and the server averages component :math:`k` with weights
:math:`n_i \pi_{ik}`, so a component moves by the clients it explains.

**The resampling** (:func:`resample`) is inversion of the empirical distribution function
(Devroye 1986, *Non-Uniform Random Variate Generation*, §II.2.1): with the cumulative
weights :math:`C_j = \sum_{l \le j} q_i(k \mid x_l, y_l)` of client :math:`i`'s examples, a
uniform key :math:`u \in [0, 1)` picks the first example with :math:`C_j > u\, C_{n_i}`, so
example :math:`j` is drawn with probability :math:`q_i(k \mid x_j, y_j) / C_{n_i}`. The keys
of component :math:`k` are one block ``rng.random((m, W))`` over the round's :math:`m`
receivers (:math:`W` the largest training set among them), client :math:`i` using the first
:math:`n_i` keys of its row; each component's local SGD then draws its minibatches over the
receivers (:func:`learning.engine.sample_batches`, one block per component). Every draw of
the client half is thus one row per receiver, so a Flower node, one client with its ``K``
component copies, reproduces the batched round from its rows alone
(:class:`learning.runtimes.flower.streams.RowStream`).

**Client and server halves.** The server keeps the components and :math:`\pi`; it sends
every participant the components and its own row :math:`\pi_i`. The client runs the E-step,
the M-step for :math:`\pi_i`, the resampling and the local SGD of its ``K`` copies, and
replies with the ``K`` trained components, its new :math:`\pi_i` (the server's aggregation
weights :math:`n_i \pi_{ik}`) and its training loss. The server takes the component means
(:func:`learning.engine.group_mean`) and writes the new rows of :math:`\pi`.

FedEM predicts with the output mixture :math:`\sum_k \pi_{ik} p_{\theta_k}(y|x)`; the round
loop needs one parameter set per client, so the client's model here is its most likely
component :math:`\theta_{\arg\max_k \pi_{ik}}` (equal to the mixture when :math:`\pi_i` is
one-hot). :meth:`FedEM.mixture` hands out the components and :math:`\pi` for evaluating the
mixture itself (IP-FL's comparison does).
"""

from __future__ import annotations

from typing import ClassVar, TypedDict

import numpy as np
import torch

from econ.validation import positive_int
from learning.algorithms.base import Context, SplitAlgorithm, register
from learning.algorithms.exchanges import Dispatch, State
from learning.engine import Params, ShardedData, group_mean, select
from learning.per_example import client_rows, per_example_losses

__all__ = ["FedEM", "FedEMState", "resample"]


def resample(weights: np.ndarray, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""Each client's :math:`n_i` examples drawn with replacement in proportion to ``weights``.

    Parameters
    ----------
    weights : ndarray of float, shape (sum(sizes),)
        Non-negative weight of every example, the clients' blocks in order.
    sizes : ndarray of int
        Examples of each client, :math:`n_i \ge 1`.
    rng : numpy.random.Generator
        Source of one ``(len(sizes), max(sizes))`` block of uniform keys.

    Returns
    -------
    ndarray of int64, shape (sum(sizes),)
        Positions into ``weights``: client :math:`i`'s :math:`n_i` draws, each the first
        :math:`j` of its block with :math:`C_j > u\, C_{n_i}` for its next key :math:`u`
        (module docstring). A client whose weights are all zero draws uniformly.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    if sizes.size == 0 or np.any(sizes < 1):
        raise ValueError(f"every client needs at least one example, got sizes {sizes}")
    if weights.shape != (int(sizes.sum()),):
        raise ValueError(f"need one weight per example ({int(sizes.sum())}), got {weights.shape}")
    if np.any(weights < 0) or not np.all(np.isfinite(weights)):
        raise ValueError("weights must be finite and non-negative")
    keys = rng.random((sizes.size, int(sizes.max())))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    out = []
    for i, (start, n) in enumerate(zip(starts, sizes, strict=True)):
        cumulative = np.cumsum(weights[start : start + n])
        if cumulative[-1] <= 0:
            cumulative = np.arange(1.0, n + 1)
        picks = np.searchsorted(cumulative, keys[i, :n] * cumulative[-1], side="right")
        out.append(start + np.minimum(picks, n - 1))
    return np.concatenate(out)


class FedEMState(TypedDict):
    """State of :class:`FedEM`, all on the server.

    The ``components`` (stacked component models) and the mixture weights ``pi`` (N, K).
    """

    components: Params
    pi: torch.Tensor


@register
class FedEM(SplitAlgorithm[FedEMState]):
    """FedEM with ``components`` models; state :class:`FedEMState` (module docstring)."""

    name = "fedem"
    client_parameters: ClassVar[tuple[str, ...]] = ("components",)

    def __init__(self, ctx: Context, components: int = 2) -> None:
        super().__init__(ctx)
        self.components = positive_int("components", components)

    def init(self, models: Params, rng: np.random.Generator) -> FedEMState:
        r"""``K`` components near the first initial model, and uniform :math:`\pi_{ik} = 1/K`.

        Each component is the shared initial model plus independent Gaussian noise of standard
        deviation 0.01 (seeded from ``rng``), so that the components start apart.
        """
        k, n = self.components, self.ctx.n_clients
        # components start apart: the shared initial model plus small independent noise
        gen = torch.Generator().manual_seed(int(rng.integers(2**63)))
        base = select(models, np.zeros(k, dtype=np.int64))
        noisy = {
            name: p + 0.01 * torch.randn(p.shape, generator=gen).to(p.device, p.dtype)
            for name, p in base.items()
        }
        return {"components": noisy, "pi": torch.full((n, k), 1.0 / k, dtype=torch.float64)}

    def dispatch(
        self, state: FedEMState, clients: np.ndarray, rng: np.random.Generator
    ) -> Dispatch:
        r"""Every participant receives the components and its own row :math:`\pi_i`."""
        pi = state["pi"]
        idx = torch.as_tensor(np.asarray(clients), dtype=torch.long, device=pi.device)
        return Dispatch(
            each={"pi": pi.index_select(0, idx)},
            common={"components": state["components"]},
            config={},
        )

    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        r"""Each participant's E-step, M-step for :math:`\pi_i`, resampling and local SGD.

        .. math::

            q_i(k \mid x, y) \propto \pi_{ik}\, e^{-\ell(\theta_k; x, y)}, \qquad
            \pi_{ik} = \mathrm{mean}_{(x,y) \in D_i}\, q_i(k \mid x, y),

        then each of its ``K`` component copies takes local SGD steps on :math:`n_i` examples
        resampled in proportion to :math:`q_i(k \mid \cdot)` (:func:`resample`). Replies
        ``components`` (stacked ``(m, K, ...)``), ``pi`` ``(m, K)`` and ``loss`` (the mean over
        its components).

        References
        ----------
        Marfoq, Neglia, Bellet, Kameni and Vidal (2021), "Federated Multi-Task Learning under a
        Mixture of Distributions", Algorithm 1.
        """
        clients = np.asarray(clients, dtype=np.int64)
        components = sent.common["components"]
        losses, owner = per_example_losses(ctx.engine, components, ctx.train, clients)
        log_pi = torch.log(sent.each["pi"].clamp_min(1e-12)).to(losses)
        q = torch.softmax(log_pi[torch.as_tensor(owner, device=losses.device)] - losses, dim=1)
        q_np = q.double().cpu().numpy()
        rows, _ = client_rows(ctx.train, clients)
        sizes = ctx.train.sizes_numpy()[clients]
        new_pi = np.stack([q_np[owner == j].mean(axis=0) for j in range(clients.size)])
        offsets = torch.as_tensor(np.concatenate([[0], np.cumsum(sizes)[:-1]]), device=ctx.device)
        trained, train_loss = [], []
        for c in range(self.components):
            picks = rows[torch.as_tensor(resample(q_np[:, c], sizes, rng), device=rows.device)]
            resampled = ShardedData(
                x=ctx.train.x[picks],
                y=ctx.train.y[picks],
                offsets=offsets,
                sizes=torch.as_tensor(sizes, device=ctx.device),
            )
            result = ctx.engine.local_sgd(
                select(components, np.full(clients.size, c)),
                resampled,
                np.arange(clients.size),
                steps=ctx.local.steps,
                batch_size=ctx.local.batch_size,
                sgd=ctx.local.sgd,
                rng=rng,
            )
            trained.append(result.params)
            train_loss.append(result.loss)
        return {
            "components": {name: torch.stack([t[name] for t in trained], 1) for name in components},
            "pi": torch.as_tensor(new_pi),
            "loss": torch.as_tensor(np.mean(train_loss, axis=0)),
        }

    def server_update(
        self, state: FedEMState, clients: np.ndarray, replies: State, rng: np.random.Generator
    ) -> tuple[FedEMState, dict[str, float]]:
        r"""Average the trained component copies and store the participants' new :math:`\pi_i`.

        Component :math:`k` becomes the mean of its trained copies weighted by
        :math:`n_i \pi_{ik}` (:func:`learning.engine.group_mean`); the participants' rows of
        :math:`\pi` are their replies.

        References
        ----------
        Marfoq, Neglia, Bellet, Kameni and Vidal (2021), "Federated Multi-Task Learning under a
        Mixture of Distributions", Algorithm 1.
        """
        clients = np.asarray(clients, dtype=np.int64)
        k = self.components
        new_pi = replies["pi"].to(torch.float64)
        sizes = self.ctx.train_sizes(clients).to(torch.float64)
        weights = (new_pi.to(sizes.device) * sizes[:, None]).reshape(-1)
        trained = {name: p.reshape(-1, *p.shape[2:]) for name, p in replies["components"].items()}
        groups = torch.arange(k, device=self.ctx.device).repeat(clients.size)
        components = group_mean(trained, weights, groups, state["components"])
        pi = state["pi"].clone()
        pi[torch.as_tensor(clients, device=pi.device)] = new_pi.to(pi.device)
        return {"components": components, "pi": pi}, {
            "train_loss": float(replies["loss"].double().mean())
        }

    def client_models(self, state: FedEMState) -> Params:
        r"""Each client's most likely component :math:`\theta_{\arg\max_k \pi_{ik}}`.

        It equals the mixture prediction when :math:`\pi_i` is one-hot; :meth:`mixture` gives
        what the mixture itself needs.
        """
        best = state["pi"].argmax(dim=1).cpu().numpy()
        return select(state["components"], best)

    def cluster_models(self, state: FedEMState) -> Params:
        """The ``K`` component models (for cluster-level evaluation)."""
        return state["components"]

    def mixture(self, state: FedEMState) -> tuple[Params, np.ndarray]:
        r"""The components and the mixture weights :math:`\pi` (N, K) of the mixture prediction.

        Client :math:`i` predicts :math:`\sum_k \pi_{ik} p_{\theta_k}(y|x)`.
        """
        return state["components"], state["pi"].double().cpu().numpy()
