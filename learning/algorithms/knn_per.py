r"""kNN-Per (Marfoq et al. 2022): FedAvg, then a per-client mixture with a kNN prediction.

The paper is "Personalized federated learning through local memorization". After FedAvg, each
client mixes the global model's prediction with a k-nearest-neighbour prediction over its own
training set,

.. math::

    p_i(y \mid x) = \lambda\, p_{kNN,i}(y \mid x) + (1 - \lambda)\, p_{global}(y \mid x),
    \qquad
    p_{kNN,i}(y \mid x) = \frac{\sum_{j \in N_k(x)} w_j \mathbb 1[y_j = y]}{\sum_{j} w_j},
    \quad w_j = e^{-d_j^2 / (F s)},

where the keys are the global model's outputs (logits, dimension ``F``), :math:`d_j` the Euclidean
distance to the ``k`` nearest stored keys and ``s`` the kernel ``scale`` (the authors' published
code for Werner 2024, Table 2.1: ``k = 10``, ``s = 1``). Training is plain FedAvg, so
:meth:`client_models` is the global model; :meth:`KNNPer.evaluate` gives the personalised accuracy.
With ``lam=None``, :math:`\lambda` is chosen from :data:`LAMBDA_GRID` by the pooled cross-entropy on
a held-out fifth of every client's training data (datastore: the other four fifths), then the
datastore is the whole training set.

The personalised evaluation is federated in two exchanges, each a client half on the client's
own data and a server half on the clients' reports. To choose :math:`\lambda`, client
:math:`i` reports its summed held-out cross-entropy :math:`L_i(\lambda)` for every grid value
(:meth:`KNNPer.client_held_out`) and the server takes
:math:`\arg\min_\lambda \sum_i L_i(\lambda)` (:meth:`KNNPer.pool_lambda`); each client's
held-out fifth is the first fifth of a shuffle of its training set, the argsort of its row of
one block of uniform keys (:func:`learning.engine.sample_batches`), so that a node draws its
own row (:class:`learning.runtimes.flower.streams.RowStream`). Then every client reports its test loss
and accuracy under the mixture (:meth:`KNNPer.client_evaluation`), which the server collects
(:meth:`KNNPer.pool_evaluation`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch.func import functional_call

from econ.validation import positive, positive_int, unit_interval
from learning.algorithms.averaging import FedAvg
from learning.algorithms.base import Context, register
from learning.algorithms.exchanges import State
from learning.engine import Evaluation, Params, ShardedData, sample_batches

__all__ = ["LAMBDA_GRID", "KNNPer", "knn_probabilities"]

#: The mixture weights searched when ``lam`` is None.
LAMBDA_GRID = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)


def knn_probabilities(
    keys: torch.Tensor,
    labels: torch.Tensor,
    queries: torch.Tensor,
    n_classes: int,
    k: int,
    scale: float,
) -> torch.Tensor:
    r"""The kNN prediction :math:`p_{kNN}(y \mid x)` for each query of ``queries (m, F)``.

    The store is ``keys (n, F)`` with ``labels (n,)``; the prediction puts Gaussian-kernel
    weights :math:`w_j = e^{-d_j^2 / (F s)}` (``s`` the ``scale``) on the labels of the ``k``
    nearest keys,

    .. math::

        p_{kNN}(y \mid x) = \frac{\sum_{j \in N_k(x)} w_j \mathbb 1[y_j = y]}{\sum_{j} w_j}.

    References
    ----------
    Marfoq, Neglia, Vidal and Kameni (2022), "Personalized Federated Learning through Local
    Memorization".
    """
    k = min(k, keys.shape[0])
    d2 = torch.cdist(queries, keys).square()
    near, idx = d2.topk(k, dim=1, largest=False)
    w = torch.exp(-(near - near[:, :1]) / (keys.shape[1] * scale))  # shift: same ratios
    votes = torch.zeros(queries.shape[0], n_classes, dtype=w.dtype, device=w.device)
    votes.scatter_add_(1, labels[idx], w)
    return votes / votes.sum(dim=1, keepdim=True)


def _client(data: ShardedData, i: int) -> tuple[torch.Tensor, torch.Tensor]:
    start, size = int(data.offsets[i]), int(data.sizes[i])
    return data.x[start : start + size], data.y[start : start + size]


def _log_likelihoods(mixture: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r""":math:`\log p(y \mid x)` of each query under ``mixture`` (floored at 1e-12)."""
    return torch.log(mixture.gather(1, y[:, None]).clamp_min(1e-12))


@register
class KNNPer(FedAvg):
    """kNN-Per on FedAvg: ``k`` neighbours, kernel ``scale``, mixture weight ``lam``.

    ``lam=None`` chooses the weight on held-out data; see the module docstring.

    The personalised evaluation's client halves (:meth:`client_held_out`,
    :meth:`client_evaluation`) work on the clients of any context, a node's one-client
    context included; its server halves (:meth:`pool_lambda`, :meth:`pool_evaluation`) read
    only the clients' reports; :meth:`evaluate` composes them for every client at once.
    """

    name = "knn-per"
    client_parameters = ("k", "scale")

    def __init__(
        self, ctx: Context, k: int = 10, scale: float = 1.0, lam: float | None = None
    ) -> None:
        super().__init__(ctx)
        self.k = positive_int("k", k)
        self.scale = float(positive("scale", scale))
        self.lam = None if lam is None else float(unit_interval("lam", lam))

    def global_model(self, state: State) -> Params:
        """The global model (one row), the model whose outputs are the kNN keys."""
        return state["groups"]

    def _mixture(
        self,
        ctx: Context,
        model: Params,
        store: tuple[torch.Tensor, torch.Tensor],
        queries: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(kNN probabilities, global probabilities) on ``queries``.

        The kNN part uses the datastore ``store`` of one client.
        """
        params = {name: p[0] for name, p in model.items()}
        with torch.no_grad():
            keys = functional_call(ctx.engine.model, params, (store[0],))
            logits = functional_call(ctx.engine.model, params, (queries,))
        knn = knn_probabilities(keys, store[1], logits, logits.shape[1], self.k, self.scale)
        return knn, torch.softmax(logits, dim=1)

    def client_held_out(
        self, ctx: Context, model: Params, clients: np.ndarray, rng: np.random.Generator
    ) -> torch.Tensor:
        r"""Summed held-out cross-entropy :math:`L_i(\lambda)` of each of ``clients``.

        One value for every :math:`\lambda` of :data:`LAMBDA_GRID`, shape
        ``(len(clients), len(LAMBDA_GRID))``.

        Client :math:`i` holds out the first :math:`\max(1, \lfloor n_i / 5 \rfloor)`
        examples of a shuffle of its training set (row :math:`i` of one
        :func:`~learning.engine.sample_batches` draw) and stores the rest; a client of one
        example holds out nothing and reports zeros. ``model`` is the global model (one
        row).
        """
        clients = np.asarray(clients, dtype=np.int64)
        sizes = ctx.train.sizes_numpy()[clients]
        shuffles = sample_batches(sizes, 1, int(sizes.max()), rng)[:, 0]
        out = torch.zeros(clients.size, len(LAMBDA_GRID), dtype=torch.float64)
        for row, (i, n) in enumerate(zip(clients, sizes, strict=True)):
            if n < 2:
                continue
            x, y = _client(ctx.train, int(i))
            order = torch.as_tensor(shuffles[row, :n], device=x.device)
            cut = max(1, int(n) // 5)
            held, kept = order[:cut], order[cut:]
            knn, glob = self._mixture(ctx, model, (x[kept], y[kept]), x[held])
            for j, lam in enumerate(LAMBDA_GRID):
                out[row, j] = float(-_log_likelihoods(lam * knn + (1 - lam) * glob, y[held]).sum())
        return out

    @staticmethod
    def pool_lambda(held_out: torch.Tensor) -> float:
        r"""The grid value with the lowest pooled held-out cross-entropy.

        :math:`\arg\min_\lambda \sum_i L_i(\lambda)` from the clients' reports ``held_out``
        (one row each, :meth:`client_held_out`).
        """
        if held_out.ndim != 2 or held_out.shape[1] != len(LAMBDA_GRID):
            raise ValueError(
                f"held_out must have one column per grid value ({len(LAMBDA_GRID)}), "
                f"got shape {tuple(held_out.shape)}"
            )
        totals = held_out.double().sum(dim=0).cpu().numpy()
        return LAMBDA_GRID[int(np.argmin(totals))]

    def client_evaluation(
        self, ctx: Context, model: Params, clients: np.ndarray, lam: float
    ) -> State:
        r"""Each of ``clients``' personalised test ``loss``, ``accuracy`` and test count ``n``.

        The loss is the mean cross-entropy of the mixture
        :math:`\lambda\, p_{kNN,i} + (1 - \lambda)\, p_{global}` with :math:`\lambda` =
        ``lam`` and the client's whole training set the datastore; one row each. ``model`` is
        the global model (one row).

        References
        ----------
        Marfoq, Neglia, Vidal and Kameni (2022), "Personalized Federated Learning through Local
        Memorization".
        """
        lam = float(unit_interval("lam", lam))
        clients = np.asarray(clients, dtype=np.int64)
        loss, acc = np.zeros(clients.size), np.zeros(clients.size)
        count = np.zeros(clients.size, dtype=np.int64)
        for row, i in enumerate(clients):
            x, y = _client(ctx.test, int(i))
            knn, glob = self._mixture(ctx, model, _client(ctx.train, int(i)), x)
            p = lam * knn + (1 - lam) * glob
            loss[row] = float(-_log_likelihoods(p, y).mean())
            acc[row] = float((p.argmax(1) == y).double().mean())
            count[row] = y.shape[0]
        return {
            "loss": torch.from_numpy(loss),
            "accuracy": torch.from_numpy(acc),
            "n": torch.from_numpy(count),
        }

    @staticmethod
    def pool_evaluation(reports: State) -> Evaluation:
        """The federation's personalised :class:`~learning.engine.Evaluation`.

        It is read from the clients' reports (:meth:`client_evaluation`, stacked in client
        order).
        """
        return Evaluation(
            loss=reports["loss"].cpu().numpy(),
            accuracy=reports["accuracy"].cpu().numpy(),
            n=reports["n"].cpu().numpy().astype(np.int64),
        )

    def choose_lambda(self, state: State, rng: np.random.Generator) -> float:
        """The grid value with the lowest pooled held-out cross-entropy over every client.

        :meth:`pool_lambda` of every client's :meth:`client_held_out`.
        """
        everyone = np.arange(self.ctx.n_clients)
        return self.pool_lambda(
            self.client_held_out(self.ctx, self.global_model(state), everyone, rng)
        )

    def evaluate(self, state: State, rng: np.random.Generator) -> tuple[Evaluation, float]:
        r"""Personalised test loss and accuracy of every client, and the :math:`\lambda` used.

        The loss is the cross-entropy of the mixture; :math:`\lambda` is ``lam``, or
        :meth:`choose_lambda` with ``rng``.
        """
        lam = self.choose_lambda(state, rng) if self.lam is None else self.lam
        everyone = np.arange(self.ctx.n_clients)
        reports = self.client_evaluation(self.ctx, self.global_model(state), everyone, lam)
        return self.pool_evaluation(reports), lam
