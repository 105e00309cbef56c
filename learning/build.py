"""One wiring from a dataset to a running federation: federation -> model -> engine -> context.

Every experiment of collabecon (``collabecon train``, IP-FL, CoBo, Table 1, the benchmarks)
builds its clients with :func:`build`: it deals the dataset out with
:func:`learning.federation.make_federation` (seeded by ``data_rng``), draws the initial model
with :func:`learning.models.build_model` (seeded by ``model_rng``), puts it on the engine
registered by name, and gives the clients' data on the device. :meth:`Built.context` then
makes the :class:`learning.algorithms.Context` an algorithm runs in.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from econ.validation import choice, in_interval
from learning.algorithms import Context, LocalTraining
from learning.device import resolve_device
from learning.engine import (
    BatchedEngine,
    Engine,
    Params,
    ShardedData,
    Task,
    broadcast,
    parameters_of,
)
from learning.federation import Federation, make_federation
from learning.loop_engine import LoopEngine
from learning.models import build_model
from learning.rng import torch_generator

__all__ = ["ENGINES", "Built", "build", "build_engine"]

#: Registry: engine name -> class.
ENGINES: dict[str, Callable[[torch.nn.Module, Task, torch.device], Engine]] = {
    BatchedEngine.name: BatchedEngine,
    LoopEngine.name: LoopEngine,
}

#: A map applied to every client's labels (e.g. ``y % 2`` for a two-class task).
LabelMap = Callable[[np.ndarray], np.ndarray]


def build_engine(name: str, model: torch.nn.Module, n_classes: int, device: torch.device) -> Engine:
    """The engine registered as ``name`` (``"batched"`` or ``"loop"``) for ``model`` on ``device``."""
    choice("engine", name, tuple(ENGINES))
    return ENGINES[name](model, Task.for_classes(n_classes), device)


@dataclass(frozen=True, slots=True)
class Built:
    """A federation with its initial model on an engine.

    Attributes
    ----------
    federation : Federation
        The clients' data (numpy) and their true clusters.
    model : torch.nn.Module
        The initial model as drawn (the engine holds its own copy on the device).
    engine : Engine
        The engine that trains and evaluates stacked client models.
    initial : Params
        The initial parameters on the engine's device, one copy (no leading client axis).
    labels : callable or None
        The map applied to every client's labels, if any.
    """

    federation: Federation
    model: torch.nn.Module
    engine: Engine
    initial: Params
    labels: LabelMap | None = None

    @property
    def device(self) -> torch.device:
        """The engine's device, where the parameters and the data live."""
        return self.engine.device

    def sharded(self, part: str) -> ShardedData:
        """Every client's ``"train"`` or ``"test"`` examples on the device."""
        choice("part", part, ("train", "test"))
        clients = self.federation.clients
        ys = [getattr(c, f"y_{part}") for c in clients]
        if self.labels is not None:
            ys = [self.labels(y) for y in ys]
        return ShardedData.from_arrays([getattr(c, f"x_{part}") for c in clients], ys, self.device)

    def context(
        self,
        local: LocalTraining,
        *,
        train: ShardedData | None = None,
        test: ShardedData | None = None,
    ) -> Context:
        """The context an algorithm runs in.

        It holds the clients' train and test data (or the given ones), local training
        ``local`` and the true clusters.
        """
        return Context(
            engine=self.engine,
            train=self.sharded("train") if train is None else train,
            test=self.sharded("test") if test is None else test,
            local=local,
            clusters=self.federation.clusters,
        )

    def split_validation(
        self,
        share: float,
        rng: np.random.Generator,
        *,
        corrupt: Callable[[int, np.ndarray], np.ndarray] | None = None,
    ) -> tuple[ShardedData, ShardedData]:
        """Every client's training examples split at random into training and validation data.

        Client ``j`` holds out ``min(max(1, round(share * n_j)), n_j - 1)`` of its ``n_j``
        examples (a permutation drawn from ``rng``, client by client), so both parts are
        non-empty. ``corrupt(j, y)`` may replace client ``j``'s training labels (validation
        stays clean). Returns ``(train, validation)`` on the device.

        Raises
        ------
        ValueError
            ``share`` outside (0, 1), or a client with fewer than 2 training examples.
        """
        in_interval("share", share, 0.0, 1.0, low_open=True, high_open=True)
        xs_t, ys_t, xs_v, ys_v = [], [], [], []
        for j, c in enumerate(self.federation.clients):
            if c.n_train < 2:
                raise ValueError(
                    f"client {j} has {c.n_train} training examples; needs 2 (train + validation)"
                )
            y = c.y_train if self.labels is None else self.labels(c.y_train)
            order = rng.permutation(c.n_train)
            held = min(max(1, round(share * c.n_train)), c.n_train - 1)
            xs_v.append(c.x_train[order[:held]])
            ys_v.append(y[order[:held]])
            xs_t.append(c.x_train[order[held:]])
            y_train = y[order[held:]].copy()
            ys_t.append(y_train if corrupt is None else corrupt(j, y_train))
        return (
            ShardedData.from_arrays(xs_t, ys_t, self.device),
            ShardedData.from_arrays(xs_v, ys_v, self.device),
        )

    def start(self, n: int | None = None) -> Params:
        """The initial parameters stacked for ``n`` clients (default: every client)."""
        return broadcast(self.initial, len(self.federation.clients) if n is None else n)


def build(
    dataset: str,
    partition: str,
    n_clients: int,
    *,
    model: str,
    data_rng: np.random.Generator,
    model_rng: np.random.Generator,
    engine: str = "batched",
    device: str | torch.device | None = "cpu",
    data_dir: str | os.PathLike[str] | None = None,
    labels: LabelMap | None = None,
    require_data: bool = False,
    federation_params: Mapping[str, Any] | None = None,
) -> Built:
    """Deal ``dataset`` to ``n_clients`` clients by ``partition`` and draw the model ``model``.

    ``federation_params`` go to :func:`learning.federation.make_federation` (test and target
    fractions, dataset and partition parameters). With ``require_data`` every client must
    hold at least one training and one test example.

    Raises
    ------
    ValueError
        Unknown names, a bad partition parameter, an unusable device, or (``require_data``)
        a client left without training or test data.
    """
    federation = make_federation(
        dataset, partition, n_clients, seed=data_rng, data_dir=data_dir,
        **dict(federation_params or {}),
    )  # fmt: skip
    if require_data:
        for k, client in enumerate(federation.clients):
            if client.n_train < 1 or client.n_test < 1:
                raise ValueError(
                    f"client {k} has {client.n_train} training and {client.n_test} test "
                    "examples; every client needs at least one of each (use fewer clients)"
                )
    net = build_model(
        model, federation.input_shape, federation.n_classes, generator=torch_generator(model_rng)
    )
    dev = resolve_device(device)
    eng = build_engine(engine, net, federation.n_classes, dev)
    initial = {k: v.to(dev) for k, v in parameters_of(net).items()}
    return Built(federation, net, eng, initial, labels)
