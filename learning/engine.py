"""The many-client training engine: every client's local SGD at once.

Parameters of ``K`` copies of one architecture are *stacked*: a :data:`Params` dict maps each
parameter name to a tensor whose leading axis is the client. :class:`BatchedEngine` runs the
hand-stacked layers of :mod:`learning.stacked` (``torch.vmap`` of
``torch.func.grad_and_value`` of a ``functional_call`` for other architectures), so a
single call does the forward and backward pass of all ``K`` clients, each on its own weights
and its own minibatch, and then a functional step of the local optimiser
(:mod:`learning.optim`: SGD with momentum, weight decay and an optional proximal pull, or
Adadelta) for all of them. :class:`learning.loop_engine.LoopEngine` does the same work one
client at a time; it is the reference the tests hold the batched engine to.

Data of all clients lives on the device as one flat tensor (:class:`ShardedData`: client
``k`` owns rows ``offsets[k] : offsets[k] + sizes[k]``), so clients with unequal data sizes
cost no padding. Every client takes the same number of local steps per call; its minibatch
indices come from :func:`sample_batches` (numpy, so identical on every device).
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from econ.validation import non_negative, positive_int
from learning import stacked
from learning.optim import AdadeltaConfig, Optimizer, adadelta_step, sgd_step

__all__ = [
    "EVAL_CHUNK",
    "BatchedEngine",
    "Engine",
    "Evaluation",
    "LocalResult",
    "Params",
    "ShardedData",
    "Task",
    "broadcast",
    "group_mean",
    "parameters_of",
    "sample_batches",
    "select",
]

#: Stacked parameters: name -> tensor with a leading client axis.
Params = dict[str, torch.Tensor]

#: Examples (summed over clients) per evaluation chunk.
EVAL_CHUNK = 8192


# --------------------------------------------------------------------------- stacked params


def parameters_of(model: nn.Module) -> Params:
    """The parameters of ``model`` as a plain dict of detached copies (no client axis)."""
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def broadcast(params: Mapping[str, torch.Tensor], n: int) -> Params:
    """``n`` copies of one model's ``params``, stacked on a new leading client axis."""
    return {name: p.unsqueeze(0).repeat(n, *([1] * p.ndim)) for name, p in params.items()}


def select(params: Mapping[str, torch.Tensor], index: torch.Tensor | np.ndarray) -> Params:
    """Rows ``index`` of stacked ``params`` (a gather along the client axis)."""
    device = next(iter(params.values())).device
    idx = (
        index.to(device=device, dtype=torch.long)
        if isinstance(index, torch.Tensor)
        else torch.as_tensor(np.asarray(index), dtype=torch.long, device=device)
    )
    return {name: p.index_select(0, idx) for name, p in params.items()}


def group_mean(
    params: Mapping[str, torch.Tensor],
    weights: torch.Tensor,
    groups: torch.Tensor,
    previous: Mapping[str, torch.Tensor],
) -> Params:
    r"""Weighted mean of stacked client ``params`` within each group.

    .. math::

        \bar w_g = \frac{\sum_{k: g_k = g} n_k w_k}{\sum_{k: g_k = g} n_k}
                  = w^{\mathrm{prev}}_g
                    + \frac{\sum_{k: g_k = g} n_k (w_k - w^{\mathrm{prev}}_g)}{\sum_{k: g_k = g} n_k},

    the FedAvg aggregate (McMahan et al. 2017, Algorithm 1) taken per group. The second form
    is the one computed: clients start a round from their group's model, so the differences
    are small, while in float32 a running sum of the ``n_k w_k`` rounds at the scale of the
    weights times the data and can swamp small steps. Groups whose clients carry no weight
    keep their ``previous`` value (stacked, one row per group).
    """
    n_groups = next(iter(previous.values())).shape[0]
    weights = weights.to(next(iter(params.values())).dtype)
    total = torch.zeros(n_groups, dtype=weights.dtype, device=weights.device)
    total.index_add_(0, groups, weights)
    out = {}
    for name, p in params.items():
        w = weights.reshape(-1, *([1] * (p.ndim - 1)))
        base = previous[name]
        step = (p - base.index_select(0, groups)) * w
        acc = torch.zeros_like(base).index_add_(0, groups, step)
        t = total.reshape(-1, *([1] * (p.ndim - 1)))
        out[name] = base + torch.where(t > 0, acc / t.clamp_min(1e-30), 0.0)
    return out


# --------------------------------------------------------------------------- data on device


@dataclass(frozen=True, slots=True)
class ShardedData:
    """Examples of ``K`` clients as one flat tensor on a device.

    Attributes
    ----------
    x, y : Tensor
        All clients' inputs and targets, concatenated in client order.
    offsets, sizes : Tensor of int64, shape (K,)
        Client ``k`` owns rows ``offsets[k] : offsets[k] + sizes[k]``.
    """

    x: torch.Tensor
    y: torch.Tensor
    offsets: torch.Tensor
    sizes: torch.Tensor

    @classmethod
    def from_arrays(
        cls, xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], device: torch.device | str
    ) -> ShardedData:
        """Concatenate the clients' numpy arrays and move them to ``device`` once."""
        if len(xs) != len(ys) or not xs:
            raise ValueError(f"need one x and one y per client, got {len(xs)} and {len(ys)}")
        sizes = np.array([len(x) for x in xs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        x = torch.from_numpy(np.ascontiguousarray(np.concatenate(xs), dtype=np.float32))
        y_np = np.concatenate(ys)
        y = torch.from_numpy(y_np.astype(np.int64 if y_np.dtype.kind in "iu" else np.float32))
        return cls(
            x=x.to(device),
            y=y.to(device),
            offsets=torch.from_numpy(offsets).to(device),
            sizes=torch.from_numpy(sizes).to(device),
        )

    @property
    def n_clients(self) -> int:
        """The number of clients :math:`K`."""
        return int(self.sizes.shape[0])

    def sizes_numpy(self) -> np.ndarray:
        """``sizes`` as a numpy ``int64`` array."""
        return self.sizes.cpu().numpy()


def sample_batches(
    sizes: np.ndarray, steps: int, batch_size: int, rng: np.random.Generator
) -> np.ndarray:
    """Local minibatch indices ``(K, steps, batch_size)`` for clients of ``sizes``.

    Each client shuffles its examples afresh and walks through the permutation cyclically:
    step ``t`` takes positions ``t B .. (t + 1) B - 1`` modulo its size, so ``ceil(n_k / B)``
    steps are one epoch, and a client with fewer than ``B`` examples repeats some.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.size == 0 or np.any(sizes < 1):
        raise ValueError(f"every client needs at least one example, got sizes {sizes}")
    keys = rng.random((sizes.size, int(sizes.max())))
    keys[np.arange(keys.shape[1])[None, :] >= sizes[:, None]] = 2.0  # padding sorts last
    permutation = np.argsort(keys, axis=1, kind="stable")
    positions = np.arange(steps * batch_size)[None, :] % sizes[:, None]
    picks = np.take_along_axis(permutation, positions, axis=1)
    return picks.reshape(sizes.size, steps, batch_size)


# --------------------------------------------------------------------------- task and config


@dataclass(frozen=True, slots=True)
class Task:
    """What the outputs mean: class logits (cross-entropy) or a regression value (MSE)."""

    classification: bool

    @classmethod
    def for_classes(cls, n_classes: int) -> Task:
        """Classification when ``n_classes > 0``, regression when 0."""
        return cls(classification=n_classes > 0)

    def losses(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-example loss: cross-entropy, or squared error."""
        if self.classification:
            return F.cross_entropy(out, y, reduction="none")
        return (out.reshape(y.shape) - y).square().reshape(y.shape[0], -1).mean(dim=1)

    def loss(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean loss over the batch."""
        if self.classification:
            return F.cross_entropy(out, y)
        return (out.reshape(y.shape) - y).square().mean()

    def correct(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """1.0 where the arg-max class equals the label (classification only)."""
        return (out.argmax(dim=-1) == y).to(out.dtype)


@dataclass(frozen=True, slots=True)
class LocalResult:
    """Outcome of local training: new stacked parameters, momentum, mean training loss."""

    params: Params
    momentum: Params | None
    loss: np.ndarray  # (K,) mean minibatch loss over the steps


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Per-model mean loss and accuracy (None for regression) and example counts."""

    loss: np.ndarray
    accuracy: np.ndarray | None
    n: np.ndarray


# --------------------------------------------------------------------------- engines


class Engine(ABC):
    """Local training and evaluation of stacked client models of one architecture.

    Parameters
    ----------
    model : nn.Module
        The architecture (its own weights are not used). It must have no buffers.
    task : Task
        Loss and accuracy of its outputs.
    device : torch.device
        Where parameters and data live.
    """

    name: str

    def __init__(self, model: nn.Module, task: Task, device: torch.device) -> None:
        if any(True for _ in model.buffers()):
            raise ValueError("the engine needs models without buffers (no BatchNorm statistics)")
        self.model = copy.deepcopy(model).to(device)
        self.task = task
        self.device = device

    def local_sgd(
        self,
        params: Params,
        data: ShardedData,
        clients: np.ndarray,
        *,
        steps: int,
        batch_size: int,
        sgd: Optimizer,
        rng: np.random.Generator,
        momentum: Params | None = None,
        prox_center: Params | None = None,
        prox_mu: float = 0.0,
    ) -> LocalResult:
        """``steps`` SGD steps for each of ``clients``, minibatches from :func:`sample_batches`.

        Row ``i`` of ``params`` is client ``clients[i]``; the minibatches hold ``batch_size``
        examples.

        ``momentum`` carries the buffers of a previous call (None starts from zero);
        ``prox_center`` (stacked like ``params``) and ``prox_mu`` add the proximal term.
        """
        steps = positive_int("steps", steps)
        batch_size = positive_int("batch_size", batch_size)
        prox_mu = float(non_negative("prox_mu", prox_mu))
        if isinstance(sgd, AdadeltaConfig) and (prox_mu or momentum is not None):
            raise ValueError("Adadelta runs without a proximal term or carried momentum")
        clients = np.asarray(clients, dtype=np.int64)
        sizes = data.sizes_numpy()[clients]
        local = sample_batches(sizes, steps, batch_size, rng)
        starts = data.offsets.cpu().numpy()[clients]
        rows = torch.from_numpy(local + starts[:, None, None]).to(self.device)
        return self._train(params, data, rows, sgd, momentum, prox_center, prox_mu)

    @abstractmethod
    def gradients(
        self, params: Params, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[Params, torch.Tensor]:
        """Per-client gradients and mean losses: model ``k`` on the batch ``x[k], y[k]``."""

    @abstractmethod
    def _train(
        self,
        params: Params,
        data: ShardedData,
        rows: torch.Tensor,
        sgd: Optimizer,
        momentum: Params | None,
        prox_center: Params | None,
        prox_mu: float,
    ) -> LocalResult:
        """Run the steps on global row indices ``rows`` of shape (K, steps, B)."""

    @abstractmethod
    def evaluate(
        self, params: Params, data: ShardedData, clients: np.ndarray | None = None
    ) -> Evaluation:
        """Model ``i`` of ``params`` on the data of client ``clients[i]`` (all by default)."""

    @abstractmethod
    def evaluate_on(self, params: Params, x: np.ndarray, y: np.ndarray) -> Evaluation:
        """Every model of ``params`` on one common set ``(x, y)`` (e.g. the target)."""

    def _common_set(self, x: np.ndarray, y: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        one = ShardedData.from_arrays([x], [y], self.device)
        return one.x, one.y

    def _evaluation(self, loss_sum: torch.Tensor, hits: torch.Tensor, n: np.ndarray) -> Evaluation:
        counts = np.maximum(n, 1)
        return Evaluation(
            loss=loss_sum.double().cpu().numpy() / counts,
            accuracy=hits.double().cpu().numpy() / counts if self.task.classification else None,
            n=np.asarray(n, dtype=np.int64),
        )


class BatchedEngine(Engine):
    """All clients at once: ``vmap(grad_and_value(functional_call))`` per local step."""

    name = "batched"

    def __init__(self, model: nn.Module, task: Task, device: torch.device) -> None:
        super().__init__(model, task, device)

        def loss(params: Params, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return task.loss(functional_call(self.model, params, (x,)), y)

        def forward(params: Params, x: torch.Tensor) -> torch.Tensor:
            return functional_call(self.model, params, (x,))

        self._grad_and_loss: Callable[..., tuple[Params, torch.Tensor]]
        if stacked.supports(self.model):  # hand-batched layers: 1.9x faster than vmap on CPU
            self._grad_and_loss = partial(stacked.loss_and_grad, self.model, task.losses)
        else:
            self._grad_and_loss = vmap(grad_and_value(loss))
        self._forward_own = vmap(forward)
        self._forward_common = vmap(forward, in_dims=(0, None))

    def gradients(
        self, params: Params, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[Params, torch.Tensor]:
        """Per-client gradients and mean losses, every client in one batched call.

        Model ``k`` on the batch ``x[k], y[k]``: the hand-batched layers of
        :mod:`learning.stacked` where the model supports them, else
        ``vmap(grad_and_value(...))``.
        """
        grads, loss = self._grad_and_loss(params, x, y)
        return grads, loss

    def _train(
        self,
        params: Params,
        data: ShardedData,
        rows: torch.Tensor,
        sgd: Optimizer,
        momentum: Params | None,
        prox_center: Params | None,
        prox_mu: float,
    ) -> LocalResult:
        params = {k: v.detach() for k, v in params.items()}
        losses = torch.zeros(rows.shape[0], device=self.device)
        state: Params | None = None
        for t in range(rows.shape[1]):
            batch = rows[:, t]
            grads, loss = self._grad_and_loss(params, data.x[batch], data.y[batch])
            with torch.no_grad():
                if isinstance(sgd, AdadeltaConfig):
                    params, state = adadelta_step(params, grads, state, sgd)
                else:  # from the second step on, the weights are this call's own
                    params, momentum = sgd_step(
                        params, grads, momentum, sgd, prox_center, prox_mu, in_place=t > 0
                    )
                losses += loss.detach()
        return LocalResult(params, momentum, (losses / rows.shape[1]).double().cpu().numpy())

    @torch.no_grad()
    def evaluate(
        self, params: Params, data: ShardedData, clients: np.ndarray | None = None
    ) -> Evaluation:
        """Model ``i`` of ``params`` on the data of client ``clients[i]`` (all by default).

        Every model at once, ``EVAL_CHUNK // K`` examples per model at a time (:data:`EVAL_CHUNK`
        in all); a client whose examples run out within a chunk repeats its last one there,
        uncounted.
        """
        clients = np.arange(data.n_clients) if clients is None else np.asarray(clients)
        idx = torch.as_tensor(clients, dtype=torch.long, device=self.device)
        sizes, starts = data.sizes[idx], data.offsets[idx]
        n = sizes.cpu().numpy()
        k = len(clients)
        chunk = max(1, min(EVAL_CHUNK // k, int(n.max(initial=1))))
        loss_sum = torch.zeros(k, device=self.device)
        hits = torch.zeros(k, device=self.device)
        for start in range(0, int(n.max(initial=0)), chunk):
            pos = torch.arange(start, start + chunk, device=self.device).expand(k, chunk)
            valid = pos < sizes[:, None]
            rows = starts[:, None] + torch.minimum(pos, sizes[:, None] - 1)
            out = self._forward_own(params, data.x[rows])
            y = data.y[rows]
            mask = valid.to(loss_sum.dtype)
            flat_out, flat_y = out.reshape(k * chunk, -1), y.reshape(k * chunk, *y.shape[2:])
            loss_sum += (self.task.losses(flat_out, flat_y).reshape(k, chunk) * mask).sum(1)
            if self.task.classification:
                hits += (self.task.correct(out, y) * mask).sum(1)
        return self._evaluation(loss_sum, hits, n)

    @torch.no_grad()
    def evaluate_on(self, params: Params, x: np.ndarray, y: np.ndarray) -> Evaluation:
        """Every model of ``params`` on one common set ``(x, y)`` (e.g. the target).

        Every model at once, on ``EVAL_CHUNK // K`` examples of the set at a time
        (:data:`EVAL_CHUNK` in all).
        """
        xt, yt = self._common_set(x, y)
        k = next(iter(params.values())).shape[0]
        chunk = max(1, EVAL_CHUNK // k)
        loss_sum = torch.zeros(k, device=self.device)
        hits = torch.zeros(k, device=self.device)
        for start in range(0, xt.shape[0], chunk):
            xc, yc = xt[start : start + chunk], yt[start : start + chunk]
            out = self._forward_common(params, xc)
            m = xc.shape[0]
            flat_y = yc.expand(k, *yc.shape).reshape(k * m, *yc.shape[1:])
            loss_sum += self.task.losses(out.reshape(k * m, -1), flat_y).reshape(k, m).sum(1)
            if self.task.classification:
                hits += self.task.correct(out, yc).sum(1)
        return self._evaluation(loss_sum, hits, np.full(k, xt.shape[0]))
