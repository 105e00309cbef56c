"""A tiny synthetic federation for the engine, loop and algorithm tests.

Five clients of unequal sizes, 8x8 single-channel images, three classes given by a fixed
linear rule (so there is something to learn), two ground-truth clusters.
"""

from __future__ import annotations

import numpy as np
import torch

from learning.algorithms import Context, LocalTraining
from learning.build import ENGINES
from learning.engine import Engine, ShardedData, Task, broadcast, parameters_of
from learning.models import build_model
from learning.optim import SGDConfig

TRAIN_SIZES = (7, 12, 3, 20, 9)
TEST_SIZES = (3, 4, 2, 5, 3)
CLUSTERS = np.array([0, 0, 1, 1, 1])
N_CLASSES = 3
SHAPE = (1, 8, 8)
CPU = torch.device("cpu")


def _client_arrays(sizes: tuple[int, ...], rng: np.random.Generator):
    rule = np.random.default_rng(99).normal(size=(int(np.prod(SHAPE)), N_CLASSES))
    xs, ys = [], []
    for n in sizes:
        x = rng.normal(size=(n, *SHAPE)).astype(np.float32)
        xs.append(x)
        ys.append(np.argmax(x.reshape(n, -1) @ rule, axis=1).astype(np.int64))
    return xs, ys


def tiny_data(seed: int = 0) -> tuple[ShardedData, ShardedData]:
    rng = np.random.default_rng(seed)
    train = ShardedData.from_arrays(*_client_arrays(TRAIN_SIZES, rng), CPU)
    test = ShardedData.from_arrays(*_client_arrays(TEST_SIZES, rng), CPU)
    return train, test


def tiny_model(model: str = "lenet5", seed: int = 0) -> torch.nn.Module:
    return build_model(model, SHAPE, N_CLASSES, generator=torch.Generator().manual_seed(seed))


def tiny_engine(name: str = "batched", model: str = "lenet5") -> Engine:
    return ENGINES[name](tiny_model(model), Task.for_classes(N_CLASSES), CPU)


def tiny_context(engine: str = "batched", *, steps: int = 3, momentum: float = 0.5) -> Context:
    train, test = tiny_data()
    return Context(
        engine=tiny_engine(engine),
        train=train,
        test=test,
        local=LocalTraining(steps, 4, SGDConfig(0.1, momentum=momentum, weight_decay=1e-3)),
        clusters=CLUSTERS,
    )


def initial_models(ctx: Context):
    return broadcast(parameters_of(ctx.engine.model), ctx.n_clients)
