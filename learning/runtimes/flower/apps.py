"""Flower's ServerApp strategy and ClientApp for every algorithm with a client half.

:data:`client_app` answers three message types on a node:

``query``
    its partition number and training-set size (Flower's ``num-examples``), or, with the
    phase ``survey``, its answer to the algorithm's survey;
``train``
    the algorithm's client half on its own partition (:func:`learning.runtimes.flower.node.client_work`:
    a round's ``client_update``, or ``client_finish`` after the last round), minibatches
    drawn from its row of the round's stream;
``evaluate``
    its model on its own test set.

:class:`~learning.runtimes.flower.strategy.SplitStrategy` runs each round on the grid.
:func:`serve` is the whole run on a :class:`flwr.serverapp.Grid`: query, initial models from
the seed exactly as :func:`learning.train.train` draws them, the rounds, the final
evaluation.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from flwr.app import (
    ArrayRecord,
    ConfigRecord,
    Context,
    Message,
    MetricRecord,
    MetricRecordValues,
    RecordDict,
)
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from learning.algorithms import Context as AlgorithmContext
from learning.algorithms import Dispatch, SplitAlgorithm, State, build_algorithm
from learning.build import build_engine
from learning.engine import Params, ShardedData, broadcast, parameters_of
from learning.loop import RoundRecord
from learning.models import build_model
from learning.rng import draw_entropy, finish_rng, init_rng, torch_generator
from learning.runtimes.flower.duopoly_node import register_duopoly
from learning.runtimes.flower.ipfl import play_ipfl_on_flower, register_ipfl
from learning.runtimes.flower.node import client_evaluate, client_work, local_training, node_context
from learning.runtimes.flower.partitions import read_meta
from learning.runtimes.flower.records import pack, record_of, scalar, unpack
from learning.runtimes.flower.requests import checked_replies, source_node, wait_for_nodes
from learning.runtimes.flower.strategy import SplitStrategy
from learning.runtimes.flower.streams import RowStream
from learning.train import TrainConfig, dp_accounting, dp_epsilon

__all__ = ["FlowerResult", "SplitStrategy", "check_flower_config", "client_app", "serve"]

client_app = ClientApp()
register_ipfl(client_app)
register_duopoly(client_app)


def _data_dir(message: Message, context: Context) -> str:
    sent = str(message.content["config"]["data-dir"])
    return sent or str(context.node_config["data-dir"])


def _partition(context: Context) -> int:
    return int(context.node_config["partition-id"])


@client_app.query()
def _query(message: Message, context: Context) -> Message:
    config = record_of(message.content, "config", ConfigRecord)
    partition = _partition(context)
    if "phase" in config:
        return _work(message, context)
    metrics: dict[str, Any] = {"partition-id": partition, "num-examples": 0}
    try:
        ctx = node_context(_data_dir(message, context), partition, str(config["run"]))
        metrics["num-examples"] = int(ctx.train.sizes[0])
    except ValueError:  # a node beyond the run's clients has no partition
        metrics["num-examples"] = -1
    return Message(RecordDict({"metrics": MetricRecord(metrics)}), reply_to=message)


@client_app.train()
def _train(message: Message, context: Context) -> Message:
    return _work(message, context)


def _work(message: Message, context: Context) -> Message:
    """The node's client half of the phase its message names."""
    config = record_of(message.content, "config", ConfigRecord)
    ctx = node_context(_data_dir(message, context), _partition(context), str(config["run"]))
    flat = record_of(message.content, "arrays", ArrayRecord).to_torch_state_dict()
    sent = Dispatch(
        each=unpack(flat, "each"),
        common=unpack(flat, "common"),
        config=json.loads(str(config["options"])),
    )
    phase = str(config["phase"])
    stream = None
    if "stream" in config:
        stream = RowStream(
            str(config["stream"]),
            int(scalar(config["row"])),
            int(scalar(config["rows"])),
            int(scalar(config["width"])),
        )
    held = json.loads(str(config["held"]))
    store = _store_key(str(config["run"]))
    if held:
        mine = _held(message, context, store)
        sent = Dispatch({**sent.each, **mine}, sent.common, sent.config)
    replies = client_work(
        ctx,
        str(config["algorithm"]),
        json.loads(str(config["client-params"])),
        sent,
        phase,
        stream,
    )
    if held:
        kept = {k: replies.pop(k) for k in held}
        context.state[store] = ArrayRecord(pack(kept, "held"))
    content = RecordDict(
        {
            "reply": ArrayRecord(pack(replies, "reply")),
            "metrics": MetricRecord({"num-examples": int(ctx.train.sizes[0])}),
        }
    )
    return Message(content, reply_to=message)


def _store_key(run: str) -> str:
    """Where a node keeps its client-held state of the run ``run`` (its JSON)."""
    return "held-" + hashlib.sha256(run.encode()).hexdigest()[:16]


def _held(message: Message, context: Context, store: str) -> dict[str, Any]:
    """The node's client-held rows: its own, or the initial ones the server sent first."""
    if store in context.state:
        return unpack(record_of(context.state, store, ArrayRecord).to_torch_state_dict(), "held")
    return unpack(record_of(message.content, "arrays", ArrayRecord).to_torch_state_dict(), "held")


@client_app.evaluate()
def _evaluate(message: Message, context: Context) -> Message:
    config = record_of(message.content, "config", ConfigRecord)
    run = str(config["run"])
    ctx = node_context(_data_dir(message, context), _partition(context), run)
    key = str(config["model-held"])
    if key:
        model = _held(message, context, _store_key(run))[key]
    else:
        model = unpack(
            record_of(message.content, "arrays", ArrayRecord).to_torch_state_dict(), "model"
        )
    metrics: dict[str, MetricRecordValues] = dict(client_evaluate(ctx, model))
    content = RecordDict({"metrics": MetricRecord(metrics)})
    if key and bool(config["report"]):
        content["model"] = ArrayRecord(pack(model, "model"))
    return Message(content, reply_to=message)


def check_flower_config(config: TrainConfig) -> None:
    """Refuse a run the Flower federation does not run.

    Raises
    ------
    ValueError
        An algorithm without a client half (:func:`flower_algorithms`).
    """
    if config.algorithm not in flower_algorithms():
        raise ValueError(
            f"algorithm {config.algorithm!r} has no client half; Flower runs "
            f"{', '.join(flower_algorithms())}"
        )


@dataclass(frozen=True, slots=True)
class FlowerResult:
    """Outcome of :func:`serve`.

    The final client models (stacked, one row per client), the algorithm's state, the history
    by round, each client's test loss and accuracy (None for regression) on its own node, the
    seconds the rounds took, and under DP-SGD each client's ε (:func:`learning.train.dp_epsilon`
    of its reported training-set size) and its ``accounting``
    (:func:`learning.train.dp_accounting`).
    """

    config: TrainConfig
    models: Params
    state: State
    history: tuple[RoundRecord, ...]
    loss: np.ndarray
    accuracy: np.ndarray | None
    seconds: float
    epsilon: np.ndarray | None = None
    accounting: dict[str, str] | None = None


def serve(
    grid: Grid, meta_dir: str, node_data_dir: str = "", timeout: float = 600.0
) -> FlowerResult:
    """Run the experiment whose ``meta.json`` is in ``meta_dir`` on the nodes of ``grid``.

    ``node_data_dir`` is the partitions' directory as the nodes see it (empty: each node's
    own ``data-dir`` setting).
    """
    meta = read_meta(meta_dir)
    config = TrainConfig(**meta.config)
    check_flower_config(config)
    run = json.dumps(config.to_dict(), sort_keys=True)
    base: dict[str, Any] = {"run": run, "data-dir": node_data_dir}
    every = wait_for_nodes(grid, meta.n_clients, timeout)
    query = [
        Message(RecordDict({"config": ConfigRecord(base)}), dst_node_id=n, message_type="query")
        for n in every
    ]
    answers = checked_replies(grid.send_and_receive(query, timeout=timeout), len(every), "query")
    nodes: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for answer in answers:
        metrics = record_of(answer.content, "metrics", MetricRecord)
        k, size = int(scalar(metrics["partition-id"])), int(scalar(metrics["num-examples"]))
        if 0 <= k < meta.n_clients and size > 0:
            nodes[k], sizes[k] = source_node(answer), size
    missing = sorted(set(range(meta.n_clients)) - set(nodes))
    if missing:
        raise RuntimeError(f"no node holds partitions {missing}")
    device = torch.device("cpu")
    rng = np.random.default_rng(config.seed)
    _, model_rng, loop_rng = rng.spawn(3)
    model = build_model(
        config.model, meta.input_shape, meta.n_classes, generator=torch_generator(model_rng)
    )
    reported = torch.tensor([sizes[k] for k in range(meta.n_clients)], dtype=torch.long)
    nothing = torch.empty(0)
    server_data = ShardedData(nothing, nothing, torch.zeros_like(reported), reported)
    ctx = AlgorithmContext(
        engine=build_engine(config.engine, model, meta.n_classes, device),
        train=server_data,
        test=server_data,
        local=local_training(config),
        clusters=meta.clusters,
    )
    algorithm = build_algorithm(config.algorithm, ctx, **config.algorithm_params)
    if not isinstance(algorithm, SplitAlgorithm):
        raise ValueError(
            f"algorithm {config.algorithm!r} has no client half; Flower runs "
            f"{', '.join(flower_algorithms())}"
        )
    initial = broadcast(parameters_of(model), meta.n_clients)
    entropy = draw_entropy(np.random.default_rng(loop_rng))
    state = algorithm.init(initial, init_rng(entropy))
    initial_held = {k: state.pop(k) for k in algorithm.client_held}
    strategy = SplitStrategy(
        algorithm,
        [nodes[k] for k in range(meta.n_clients)],
        base,
        entropy,
        config,
        initial_held,
        timeout,
    )
    started = time.perf_counter()
    strategy.start(
        grid, ArrayRecord(pack(state, "state")), num_rounds=config.rounds, timeout=timeout
    )
    state = strategy.finish(grid, finish_rng(entropy))
    return FlowerResult(
        config=config,
        models=algorithm.client_models(state) if strategy.reported is None else strategy.reported,
        state=state,
        history=tuple(strategy.history),
        loss=strategy.evaluation["loss"],
        accuracy=strategy.evaluation.get("accuracy"),
        seconds=time.perf_counter() - started,
        epsilon=dp_epsilon(config, [sizes[k] for k in range(meta.n_clients)]),
        accounting=dp_accounting(config, [sizes[k] for k in range(meta.n_clients)]),
    )


def run_kind(meta_dir: str) -> str:
    """What the federation in ``meta_dir`` runs.

    ``"ipfl"`` is :mod:`learning.runtimes.flower.ipfl`, ``"defection-free"``
    :mod:`learning.runtimes.flower.duopoly`, ``"defection-free-n"``
    :mod:`learning.runtimes.flower.n_firms` and ``"split"`` :func:`serve`.
    """
    raw = json.loads((Path(meta_dir) / "meta.json").read_text())
    return str(raw.get("kind", "split"))


def serve_any(grid: Grid, meta_dir: str, node_data_dir: str = "") -> Any:
    """Serve the federation in ``meta_dir`` as :func:`run_kind` says.

    With :func:`serve`, :func:`learning.runtimes.flower.ipfl.play_ipfl_on_flower`,
    :func:`learning.runtimes.flower.duopoly.serve_duopoly` or
    :func:`learning.runtimes.flower.n_firms.serve_n_firms`.
    """
    kind = run_kind(meta_dir)
    if kind == "ipfl":
        return play_ipfl_on_flower(grid, meta_dir, node_data_dir)
    if kind == "defection-free":
        # the mediator imports the game; the nodes, which import this module, need not
        from learning.runtimes.flower.duopoly import serve_duopoly

        return serve_duopoly(grid, meta_dir, node_data_dir)
    if kind == "defection-free-n":
        from learning.runtimes.flower.n_firms import serve_n_firms

        return serve_n_firms(grid, meta_dir, node_data_dir)
    return serve(grid, meta_dir, node_data_dir)


def flower_algorithms() -> tuple[str, ...]:
    """Registered algorithms with a client half (those a Flower federation runs)."""
    from learning.algorithms import ALGORITHMS

    return tuple(sorted(n for n, cls in ALGORITHMS.items() if issubclass(cls, SplitAlgorithm)))


#: seconds between a simulated server's looks for its replies (Flower's default: 0.1); a
#: round of FedAvg waits for two exchanges
PULL_INTERVAL = 0.005


def server_app_for(runs: list[tuple[str, str]], results: list[Any]) -> ServerApp:
    """A ServerApp that runs each ``(meta_dir, node_data_dir)`` of ``runs`` in turn.

    The runs share the same nodes; each :class:`FlowerResult` (or the exception) is appended
    to ``results``. On Flower's in-memory grid (the simulation's) the server looks for
    replies every :data:`PULL_INTERVAL` seconds.
    """
    app = ServerApp()

    @app.main()
    def _main(grid: Grid, context: Context) -> None:
        # the simulation runtime's module, imported by it already (a ClientApp needs none of it)
        from flwr.superlink.grid.inmemory_grid import InMemoryGrid

        if isinstance(grid, InMemoryGrid):
            grid.pull_interval = PULL_INTERVAL
        for meta_dir, node_dir in runs:
            try:
                results.append(serve_any(grid, meta_dir, node_dir))
            except Exception as exc:  # handed back to the caller of the simulation
                results.append(exc)
                return

    return app


server_app = ServerApp()


@server_app.main()
def _deployed(grid: Grid, context: Context) -> None:
    """The run of ``flwr run``.

    ``meta-dir`` (server side) comes from the run config, partitions from each node's
    ``data-dir``; the result goes to ``meta-dir/result.json``.
    """
    from learning.runtimes.flower.results import write_result

    meta_dir = str(context.run_config["meta-dir"])
    write_result(serve_any(grid, meta_dir, ""), meta_dir)
