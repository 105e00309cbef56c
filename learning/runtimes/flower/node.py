"""The client side of a Flower federation, without Flower: what a node computes.

A node knows its partition number and the directory of its data. From its own partition
(:func:`learning.runtimes.flower.partitions.read_partition`) and the run's configuration it builds a
one-client :class:`learning.algorithms.Context`, and runs the algorithm's client half
(:meth:`learning.algorithms.base.SplitAlgorithm.client_update`) on it, drawing its minibatches
from its row of the round's stream (:class:`learning.runtimes.flower.streams.RowStream`). The
contexts are cached per process, so a node builds its engine once per run.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import torch

from learning.algorithms import Context, Dispatch, LocalTraining, SplitAlgorithm, build_algorithm
from learning.algorithms.exchanges import FinishExchange, Survey
from learning.build import build_engine
from learning.engine import Params, ShardedData
from learning.models import build_model
from learning.optim import SGDConfig
from learning.runtimes.flower.partitions import read_meta, read_partition
from learning.runtimes.flower.streams import RowStream
from learning.train import TrainConfig

__all__ = ["PHASES", "client_evaluate", "client_work", "node_context", "train_config"]

_CONTEXTS: dict[tuple[str, int, str], Context] = {}


def train_config(run: str) -> TrainConfig:
    """The :class:`TrainConfig` of a run from its JSON (``TrainConfig.to_dict``)."""
    return TrainConfig(**json.loads(run))


def local_training(config: TrainConfig) -> LocalTraining:
    """The local-training settings of ``config``."""
    return LocalTraining(
        config.local_steps,
        config.batch_size,
        SGDConfig(config.lr, config.momentum, config.weight_decay),
        dp=config.dp,
    )


def node_context(data_dir: str, partition: int, run: str) -> Context:
    """A one-client context on the CPU: partition ``partition`` of ``data_dir``."""
    key = (str(data_dir), int(partition), run)
    if key not in _CONTEXTS:
        config = train_config(run)
        meta = read_meta(data_dir)
        part = read_partition(data_dir, partition)
        architecture = build_model(
            config.model,
            meta.input_shape,
            meta.n_classes,
            generator=torch.Generator().manual_seed(0),
        )
        device = torch.device("cpu")
        _CONTEXTS[key] = Context(
            engine=build_engine(config.engine, architecture, meta.n_classes, device),
            train=ShardedData.from_arrays([part.x_train], [part.y_train], device),
            test=ShardedData.from_arrays([part.x_test], [part.y_test], device),
            local=local_training(config),
            clusters=np.zeros(1, dtype=np.int64),
        )
    return _CONTEXTS[key]


#: The client halves a node runs, by the phase its message names.
PHASES = ("survey", "train", "finish")


def client_work(
    ctx: Context,
    algorithm: str,
    client_params: dict[str, Any],
    sent: Dispatch,
    phase: str,
    stream: RowStream | None,
) -> dict[str, Any]:
    """The client half ``phase`` of ``algorithm`` on the one client of ``ctx``; its reply row.

    The phase is :meth:`~learning.algorithms.base.Survey.client_survey` (no stream),
    ``client_update`` or ``client_finish`` (minibatches from ``stream``).
    """
    built = build_algorithm(algorithm, ctx, **client_params)
    if not isinstance(built, SplitAlgorithm):
        raise ValueError(f"algorithm {algorithm!r} has no client half")
    me = np.array([0])
    if phase == "survey" and isinstance(built, Survey):
        return built.client_survey(ctx, sent, me)
    if phase == "train" and stream is not None:
        return built.client_update(ctx, sent, me, stream)  # type: ignore[arg-type]
    if phase == "finish" and stream is not None and isinstance(built, FinishExchange):
        return built.client_finish(ctx, sent, me, stream)  # type: ignore[arg-type]
    raise ValueError(
        f"{algorithm!r} has no {phase!r} client half with the stream given; "
        f"phases: {', '.join(PHASES)} (train and finish draw from the round's stream)"
    )


def client_evaluate(ctx: Context, model: Params) -> dict[str, float]:
    """The node's model (one row) on its own test set: loss, accuracy, examples."""
    ev = ctx.engine.evaluate(model, ctx.test)
    out = {"loss": float(ev.loss[0]), "num-examples": int(ev.n[0])}
    if ev.accuracy is not None:
        out["accuracy"] = float(ev.accuracy[0])
    return out
