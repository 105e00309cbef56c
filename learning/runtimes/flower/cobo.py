r"""CoBo (Hashemi et al. 2024, Algorithm 1) on Flower: pair gradients at midpoints computed
by the clients, the collaboration weights on the server.

The server (:func:`serve_cobo`) holds the client models, their momentum buffers and the
weights :math:`W`; node :math:`k` holds client :math:`k`'s partition
(:func:`learning.runtimes.flower.partitions.write_partitions` of a ``TrainConfig`` with algorithm
``cobo``). A round of :class:`learning.algorithms.cobo.CoBo`:

1. the server samples the pairs (:func:`learning.algorithms.cobo.sample_pairs`) and sends
   each client in a pair the midpoints :math:`z_{ij} = (x_i + x_j)/2` of its pairs
   (``query.cobo_pairs``); the client returns :math:`\nabla f_i(z_{ij}; \xi_i)` at each, on
   its pair minibatch :math:`\xi_i`; the server forms
   :math:`s_{ij} = \langle \nabla f_i(z_{ij}), \nabla f_j(z_{ij}) \rangle` and updates
   :math:`W` (:func:`learning.algorithms.cobo.update_weights`);
2. every local step, each participant returns its minibatch gradient at its current model
   (``train.cobo_step``) and the server takes the step with momentum and the Laplacian
   penalty :math:`\rho \sum_k w_{ik}(x_i - x_k)`, as :meth:`CoBo.round` does.

Every minibatch is the node's row of the round's batched draw
(:class:`learning.runtimes.flower.streams.RowStream` of the round stream's second child, block 0 the
pair minibatch, block :math:`1 + s` local step :math:`s`), so for one seed the models are
those of :func:`learning.train.train` up to the summation order of the midpoint
gradients (computed one model at a time on the nodes, batched in process).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid

from learning.algorithms import Context as AlgorithmContext
from learning.algorithms.cobo import CoBo, local_step, sample_pairs, update_weights
from learning.build import build_engine
from learning.engine import (
    Params,
    SGDConfig,
    ShardedData,
    broadcast,
    parameters_of,
    sample_batches,
)
from learning.models import build_model
from learning.rng import draw_entropy, init_rng, round_rng, torch_generator
from learning.runtimes.flower.node import local_training, node_context
from learning.runtimes.flower.partitions import read_meta, write_partitions
from learning.runtimes.flower.records import pack, record_of, scalar, stack, unpack
from learning.runtimes.flower.requests import Requests, answer, discover, metric, partition_of
from learning.runtimes.flower.streams import RowStream, stream_state
from learning.train import TrainConfig

__all__ = ["FlowerCoBoResult", "register_cobo", "serve_cobo", "write_cobo_partitions"]

KIND = "cobo"


def write_cobo_partitions(
    config: TrainConfig, directory: str | os.PathLike[str], data_dir: str | None = None
) -> None:
    """:func:`write_partitions` of ``config`` (algorithm ``cobo``), marked for
    :func:`serve_cobo`."""
    if config.algorithm != "cobo":
        raise ValueError(f"algorithm must be 'cobo', got {config.algorithm!r}")
    if config.dp is not None:
        raise ValueError("dp_noise_multiplier: DP-SGD training runs in process only")
    write_partitions(config, directory, data_dir)
    path = Path(directory) / "meta.json"
    raw = json.loads(path.read_text())
    raw["kind"] = KIND
    path.write_text(json.dumps(raw))


def _minibatch(
    ctx: AlgorithmContext, config: Any, block: int, size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    stream = RowStream(
        str(config["stream"]), int(config["row"]), int(config["rows"]), int(config["width"])
    )
    stream.block = int(block)
    local = sample_batches(ctx.train.sizes_numpy(), 1, size, stream)[:, 0]  # type: ignore[arg-type]
    rows = torch.from_numpy(local[0])
    return ctx.train.x[rows], ctx.train.y[rows]


def register_cobo(app: ClientApp) -> None:
    """Register CoBo's node half on ``app`` (the message types of the module docstring)."""

    def ctx_of(message: Message, context: Context) -> AlgorithmContext:
        data_dir, partition = partition_of(message, context)
        return node_context(data_dir, partition, str(message.content["config"]["run"]))

    @app.query("cobo_pairs")
    def _pairs(message: Message, context: Context) -> Message:
        config = record_of(message.content, "config", ConfigRecord)
        ctx = ctx_of(message, context)
        x, y = _minibatch(ctx, config, 0, int(scalar(config["batch"])))
        mids = unpack(
            record_of(message.content, "arrays", ArrayRecord).to_torch_state_dict(), "model"
        )
        p = next(iter(mids.values())).shape[0]
        grads, _ = ctx.engine.gradients(mids, x.expand(p, *x.shape), y.expand(p, *y.shape))
        return answer(message, {"arrays": ArrayRecord(pack(grads, "gradient"))})

    @app.train("cobo_step")
    def _step(message: Message, context: Context) -> Message:
        config = record_of(message.content, "config", ConfigRecord)
        ctx = ctx_of(message, context)
        x, y = _minibatch(ctx, config, int(scalar(config["block"])), int(scalar(config["batch"])))
        model = unpack(
            record_of(message.content, "arrays", ArrayRecord).to_torch_state_dict(), "model"
        )
        grads, loss = ctx.engine.gradients(model, x[None], y[None])
        return answer(
            message,
            {
                "arrays": ArrayRecord(pack(grads, "gradient")),
                "metrics": MetricRecord({"loss": float(loss[0])}),
            },
        )


@dataclass(frozen=True, slots=True)
class FlowerCoBoResult:
    """Outcome of :func:`serve_cobo`: the client models (stacked), the weights :math:`W`,
    the mean training loss and the number of pairs of every round, the seconds."""

    config: TrainConfig
    models: Params
    weights: torch.Tensor
    train_loss: tuple[float, ...]
    pairs: tuple[int, ...]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no models)."""
        from econ.outputs import plain

        return plain(
            {
                "kind": KIND,
                "config": self.config.to_dict(),
                "weights": self.weights.numpy(),
                "train_loss": list(self.train_loss),
                "pairs": list(self.pairs),
                "seconds": self.seconds,
            }
        )


def serve_cobo(
    grid: Grid, meta_dir: str, node_data_dir: str = "", timeout: float = 600.0
) -> FlowerCoBoResult:
    """Run the CoBo federation whose ``meta.json`` is in ``meta_dir`` (module docstring);
    initial models and streams from the seed as :func:`learning.train.train` draws
    them."""
    meta = read_meta(meta_dir)
    config = TrainConfig(**meta.config)
    run = json.dumps(config.to_dict(), sort_keys=True)
    base: dict[str, Any] = {"run": run, "data-dir": node_data_dir}
    nodes, answers = discover(grid, meta.n_clients, "query", base, timeout)
    sizes = np.array([int(scalar(m["num-examples"])) for m in answers], dtype=np.int64)
    requests = Requests(grid, nodes, base, timeout)
    _, model_rng, loop_rng = np.random.default_rng(config.seed).spawn(3)
    model = build_model(
        config.model, meta.input_shape, meta.n_classes, generator=torch_generator(model_rng)
    )
    cpu = torch.device("cpu")
    reported = torch.as_tensor(sizes)
    nothing = torch.empty(0)
    server_data = ShardedData(nothing, nothing, torch.zeros_like(reported), reported)
    ctx = AlgorithmContext(
        engine=build_engine(config.engine, model, meta.n_classes, cpu),
        train=server_data,
        test=server_data,
        local=local_training(config),
        clusters=meta.clusters,
    )
    algorithm = CoBo(ctx, **config.algorithm_params)
    entropy = draw_entropy(np.random.default_rng(loop_rng))
    state = algorithm.init(broadcast(parameters_of(model), meta.n_clients), init_rng(entropy))
    sgd = ctx.local.sgd
    if not isinstance(sgd, SGDConfig):
        raise ValueError("CoBo's local steps are SGD steps, not Adadelta")
    losses_by_round: list[float] = []
    pairs_by_round: list[int] = []
    started = time.perf_counter()
    for r in range(config.rounds):
        rng = round_rng(entropy, r)
        n = meta.n_clients
        per_round = config.clients_per_round
        clients = (
            np.arange(n)
            if per_round is None
            else np.sort(rng.choice(n, size=per_round, replace=False))
        )
        t = int(state["round"])
        pair_rng, batch_rng = rng.spawn(2)
        pairs = sample_pairs(algorithm.schedule, t, clients, pair_rng)
        stream = {
            "stream": stream_state(batch_rng),
            "rows": int(clients.size),
            "width": int(sizes[clients].max()),
        }
        position = {int(c): k for k, c in enumerate(clients)}
        models, momentum = state["models"], state["momentum"]
        idx = torch.as_tensor(clients)
        local_params = {k: v.index_select(0, idx) for k, v in models.items()}
        mids = {
            name: 0.5 * (p[pairs[:, 0]] + p[pairs[:, 1]]) if pairs.size else p[:0]
            for name, p in models.items()
        }
        askers = sorted({int(c) for c in pairs.reshape(-1)})
        asked = []
        for c in askers:
            mine = np.flatnonzero((pairs[:, 0] == c) | (pairs[:, 1] == c))
            asked.append((c, mine))
        replies = requests.ask(
            "query.cobo_pairs",
            [c for c, _ in asked],
            [pack({k: v[mine] for k, v in mids.items()}, "model") for _, mine in asked],
            [{**stream, "row": position[c], "batch": algorithm.pair_batch_size} for c, _ in asked],
        )
        gradient_at: dict[tuple[int, int], torch.Tensor] = {}
        for (c, mine), reply in zip(asked, replies, strict=True):
            grads = unpack(
                record_of(reply.content, "arrays", ArrayRecord).to_torch_state_dict(), "gradient"
            )
            flat = torch.cat([g.reshape(g.shape[0], -1) for g in grads.values()], 1)
            for row, p in enumerate(mine):
                gradient_at[(int(p), c)] = flat[row]
        inner = (
            torch.stack(
                [
                    (gradient_at[(p, int(i))] * gradient_at[(p, int(j))]).sum()
                    for p, (i, j) in enumerate(pairs)
                ]
            )
            if pairs.size
            else torch.zeros(0)
        )
        weights = update_weights(
            state["weights"],
            pairs,
            inner,
            gamma=algorithm.gamma,
            domain=algorithm.domain,
            solver=algorithm.inner_solver,
        )
        w_local = weights.index_select(0, idx).index_select(1, idx)
        mom = {k: v.index_select(0, idx) for k, v in momentum.items()}
        fresh: torch.Tensor | None = ~state["started"].index_select(0, idx)
        losses = []
        for s in range(ctx.local.steps):
            got = requests.ask(
                "train.cobo_step",
                clients,
                [
                    pack({k: v[i : i + 1] for k, v in local_params.items()}, "model")
                    for i in range(clients.size)
                ],
                [
                    {**stream, "row": i, "block": 1 + s, "batch": ctx.local.batch_size}
                    for i in range(clients.size)
                ],
            )
            grads = stack(
                [
                    unpack(
                        record_of(m.content, "arrays", ArrayRecord).to_torch_state_dict(),
                        "gradient",
                    )
                    for m in got
                ]
            )
            losses.append(torch.tensor([float(metric(m, "loss")) for m in got]))
            local_params, mom = local_step(
                local_params, grads, mom, w_local, sgd, algorithm.rho, fresh
            )
            fresh = None
        new_models = {k: v.clone() for k, v in models.items()}
        new_momentum = {k: v.clone() for k, v in momentum.items()}
        for name in new_models:
            new_models[name][idx] = local_params[name]
            new_momentum[name][idx] = mom[name]
        started_mask = state["started"].clone()
        started_mask[idx] = True
        state = {
            "models": new_models,
            "momentum": new_momentum,
            "started": started_mask,
            "weights": weights,
            "round": torch.tensor(t + 1, dtype=torch.int64),
        }
        losses_by_round.append(float(torch.stack(losses).mean()))
        pairs_by_round.append(int(pairs.shape[0]))
    return FlowerCoBoResult(
        config=config,
        models=state["models"],
        weights=state["weights"],
        train_loss=tuple(losses_by_round),
        pairs=tuple(pairs_by_round),
        seconds=time.perf_counter() - started,
    )
