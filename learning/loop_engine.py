"""The reference engine: one client after another, with an ``nn.Module`` and ``torch.optim``.

:class:`LoopEngine` does the work of :class:`learning.engine.BatchedEngine` one client at a
time: ``torch.optim.SGD`` (or ``torch.optim.Adadelta``) on a copy of the architecture holding
the client's row of the stacked parameters. The tests hold the batched engine to it.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from learning.engine import (
    EVAL_CHUNK,
    Engine,
    Evaluation,
    LocalResult,
    Params,
    ShardedData,
    parameters_of,
)
from learning.optim import AdadeltaConfig, Optimizer

__all__ = ["LoopEngine"]


class LoopEngine(Engine):
    """The reference: one client after another, ``nn.Module`` + ``torch.optim.SGD``."""

    name = "loop"

    def _client_model(self, params: Params, i: int) -> nn.Module:
        model = copy.deepcopy(self.model)
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(params[name][i])
        return model

    def gradients(
        self, params: Params, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[Params, torch.Tensor]:
        """Per-client gradients and mean losses, one client after another (``backward``).

        Model ``k`` on the batch ``x[k], y[k]``, on a copy of the architecture holding row
        ``k`` of ``params``.
        """
        grads: list[Params] = []
        losses = []
        for i in range(x.shape[0]):
            model = self._client_model(params, i)
            loss = self.task.loss(model(x[i]), y[i])
            loss.backward()
            grads.append({n: _gradient(p).detach() for n, p in model.named_parameters()})
            losses.append(loss.detach())
        return _stack(grads), torch.stack(losses)

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
        n_clients, steps = rows.shape[0], rows.shape[1]
        new_params: list[Params] = []
        new_momentum: list[Params] = []
        losses = np.zeros(n_clients)
        for i in range(n_clients):
            model = self._client_model(params, i)
            named = dict(model.named_parameters())
            opt: torch.optim.Optimizer
            if isinstance(sgd, AdadeltaConfig):
                opt = torch.optim.Adadelta(model.parameters(), lr=sgd.lr, rho=sgd.rho, eps=sgd.eps)
            else:
                opt = torch.optim.SGD(
                    model.parameters(),
                    lr=sgd.lr,
                    momentum=sgd.momentum,
                    weight_decay=sgd.weight_decay,
                    dampening=sgd.dampening,
                )
            if momentum is not None:
                for name, p in named.items():
                    opt.state[p]["momentum_buffer"] = momentum[name][i].clone()
            total = 0.0
            for t in range(steps):
                batch = rows[i, t]
                opt.zero_grad()
                loss = self.task.loss(model(data.x[batch]), data.y[batch])
                loss.backward()
                if prox_center is not None and prox_mu:
                    with torch.no_grad():
                        for name, p in named.items():
                            _gradient(p).add_(p - prox_center[name][i], alpha=prox_mu)
                opt.step()
                total += float(loss.detach())
            losses[i] = total / steps
            new_params.append(parameters_of(model))
            if sgd.momentum > 0:
                new_momentum.append(
                    {name: opt.state[p]["momentum_buffer"].detach() for name, p in named.items()}
                )
        return LocalResult(
            _stack(new_params), _stack(new_momentum) if new_momentum else None, losses
        )

    @torch.no_grad()
    def evaluate(
        self, params: Params, data: ShardedData, clients: np.ndarray | None = None
    ) -> Evaluation:
        """Model ``i`` of ``params`` on the data of client ``clients[i]`` (all by default).

        One model after another, in chunks of :data:`learning.engine.EVAL_CHUNK` examples.
        """
        clients = np.arange(data.n_clients) if clients is None else np.asarray(clients)
        sizes, starts = data.sizes_numpy(), data.offsets.cpu().numpy()
        return self._each(
            params,
            [
                (data.x[starts[c] : starts[c] + sizes[c]], data.y[starts[c] : starts[c] + sizes[c]])
                for c in clients
            ],
        )

    @torch.no_grad()
    def evaluate_on(self, params: Params, x: np.ndarray, y: np.ndarray) -> Evaluation:
        """Every model of ``params`` on one common set ``(x, y)`` (e.g. the target).

        One model after another, in chunks of :data:`learning.engine.EVAL_CHUNK` examples.
        """
        xt, yt = self._common_set(x, y)
        k = next(iter(params.values())).shape[0]
        return self._each(params, [(xt, yt)] * k)

    def _each(self, params: Params, sets: list[tuple[torch.Tensor, torch.Tensor]]) -> Evaluation:
        loss_sum = torch.zeros(len(sets), dtype=torch.float64)
        hits = torch.zeros(len(sets), dtype=torch.float64)
        for i, (x, y) in enumerate(sets):
            model = self._client_model(params, i)
            for start in range(0, x.shape[0], EVAL_CHUNK):
                out = model(x[start : start + EVAL_CHUNK])
                yc = y[start : start + EVAL_CHUNK]
                loss_sum[i] += float(self.task.losses(out, yc).sum())
                if self.task.classification:
                    hits[i] += float(self.task.correct(out, yc).sum())
        return self._evaluation(loss_sum, hits, np.array([x.shape[0] for x, _ in sets]))


def _gradient(p: torch.Tensor) -> torch.Tensor:
    """``p.grad`` after a backward pass that reached ``p``."""
    assert p.grad is not None, "the backward pass did not reach this parameter"
    return p.grad


def _stack(items: list[Params]) -> Params:
    return {name: torch.stack([item[name] for item in items]) for name in items[0]}
