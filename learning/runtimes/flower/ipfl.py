r"""IP-FL's token economy (Khan et al., Alg. 1) on Flower: the ledger on the server.

The server (:func:`play_ipfl_on_flower`) holds the :class:`games.ipfl.TokenState` (balances, pools,
contributions), the :math:`K` cluster models and the source test distributions the cluster
models are scored on; node :math:`k` holds client :math:`k`'s training, validation and test
data (``partition-<k>.npz``, written by :func:`write_ipfl_partitions` from
:func:`learning.drivers.ipfl.setup.build_setup`, so the data are those of the in-process driver
:func:`learning.drivers.ipfl.run_ipfl`). The rounds are those of the in-process driver:
:func:`learning.drivers.ipfl.driver.play_ipfl` with :class:`FlowerIPFLClients`, whose work
goes to the nodes:

1. ``query.ipfl_scores`` (paid rounds): every node scores the :math:`K` cluster models on
   its validation data, :math:`\upsilon_{ik}` of Eq. 7 (Alg. 2's input);
2. ``train.ipfl``: each payer trains its cluster's model on its own data, minibatches from
   its row of the round's stream (:class:`learning.runtimes.flower.streams.RowStream`); the
   server moves its generator past the payers' minibatch keys;
3. ``query.ipfl_profile``: each payer evaluates its cluster's aggregated model on its
   validation data and returns the gradient of its mean loss on hold-out rows the server
   drew (the profiler's input, §4.2); the server weights the gradients by their rows into the
   cluster's hold-out gradient;
4. ``query.ipfl_personal`` (evaluation rounds and the end): each client's personalised model
   (Eq. 8, weights from its validation scores) on its test data.

The server draws from the round's stream in the in-process order (bids, selection, the
training minibatch keys it skips, the hold-out rows), so for one seed the ledger and the
models are those of :func:`learning.drivers.ipfl.run_ipfl`; the hold-out gradient is a
weighted sum of the payers' gradients instead of one gradient over their pooled rows, equal
up to float32 rounding. The training losses checked for divergence are each payer's mean
loss, as in process. The clients' majority sources stay on the nodes, so the records
have no ``bidder_purity``. The reference accuracy :math:`\rho_i` of PMA (Eq. 1) is a separate
FedAvg run and is not part of this federation.
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

from games.ipfl import IPFLConfig, Opening, importance_weights
from learning.algorithms import Context as AlgorithmContext
from learning.algorithms import LocalTraining
from learning.build import build_engine
from learning.drivers.ipfl.clients import IPFLClients
from learning.drivers.ipfl.config import IPFLRun
from learning.drivers.ipfl.driver import play_ipfl, start_state
from learning.drivers.ipfl.evaluation import accuracy_matrix, flat, personalise
from learning.drivers.ipfl.setup import build_setup
from learning.engine import LocalResult, Params, ShardedData, broadcast
from learning.engine import select as select_rows
from learning.models import build_model
from learning.optim import AdadeltaConfig, SGDConfig
from learning.runtimes.flower.records import pack, record_of, scalar, scalars, stack, unpack
from learning.runtimes.flower.requests import Requests, answer, discover, metric, partition_of
from learning.runtimes.flower.streams import RowStream, stream_state

__all__ = [
    "FlowerIPFLClients",
    "FlowerIPFLResult",
    "check_ipfl_run",
    "ipfl_run_from_dict",
    "play_ipfl_on_flower",
    "register_ipfl",
    "write_ipfl_partitions",
]

KIND = "ipfl"
_SERVER_FILE = "server.pt"


def check_ipfl_run(run: IPFLRun) -> None:
    """Refuse what the Flower federation of IP-FL does not run.

    Raises
    ------
    ValueError
        The F1/KMeans cold start (it pre-trains with every client before round 0), FedSoft
        importance (per-example losses of every cluster model) or the output mixture.
    """
    if run.cold_start != "random":
        raise ValueError(f"cold_start={run.cold_start!r}: the Flower federation runs 'random'")
    if run.importance != "accuracy":
        raise ValueError(f"importance={run.importance!r}: the Flower federation runs 'accuracy'")
    if run.personalize != "param_avg":
        raise ValueError(
            f"personalize={run.personalize!r}: the Flower federation runs 'param_avg' (Eq. 8)"
        )


def ipfl_run_from_dict(raw: dict[str, Any]) -> IPFLRun:
    """The :class:`IPFLRun` whose :meth:`IPFLRun.to_dict` is ``raw``."""
    fields = dict(raw)
    fields["mechanism"] = IPFLConfig(**fields["mechanism"])
    return IPFLRun(**fields)


def _client_rows(data: ShardedData, k: int) -> tuple[np.ndarray, np.ndarray]:
    start, size = int(data.offsets[k]), int(data.sizes[k])
    return data.x[start : start + size].cpu().numpy(), data.y[start : start + size].cpu().numpy()


def write_ipfl_partitions(
    run: IPFLRun, directory: str | os.PathLike[str], data_dir: str | None = None
) -> dict[str, Any]:
    """Build the federation of ``run`` as :func:`learning.drivers.ipfl.run_ipfl` does and write it.

    ``partition-<k>.npz`` holds client ``k``'s training (noisy labels included), validation
    and test arrays (what node ``k`` reads); ``server.pt`` the shared initial model and the
    source test distributions (what the server reads); ``meta.json`` the run, the shapes and
    the never-scheduled clients. Returns the meta dict.
    """
    check_ipfl_run(run)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    setup = build_setup(run, device="cpu", data_dir=data_dir)
    ctx = setup.ctx
    for k in range(ctx.n_clients):
        x_train, y_train = _client_rows(ctx.train, k)
        x_val, y_val = _client_rows(setup.val, k)
        x_test, y_test = _client_rows(ctx.test, k)
        np.savez(
            directory / f"partition-{k}.npz",
            x_train=x_train,
            y_train=y_train,
            x_val=x_val,
            y_val=y_val,
            x_test=x_test,
            y_test=y_test,
        )
    sources = [
        (torch.from_numpy(np.asarray(x)), torch.from_numpy(np.asarray(y))) for x, y in setup.sources
    ]
    torch.save(
        {
            "initial": {k: v.cpu() for k, v in setup.initial.items()},
            **{f"source-{i}-x": x for i, (x, _) in enumerate(sources)},
            **{f"source-{i}-y": y for i, (_, y) in enumerate(sources)},
        },
        directory / _SERVER_FILE,
    )
    fed = setup.federation
    meta = {
        "kind": KIND,
        "run": run.to_dict(),
        "n_clients": ctx.n_clients,
        "input_shape": [int(s) for s in fed.input_shape],
        "n_classes": int(fed.n_classes),
        "sources": len(sources),
        "unseen": [int(i) for i in setup.unseen],
    }
    (directory / "meta.json").write_text(json.dumps(meta))
    return meta


# --------------------------------------------------------------------------- node side


@dataclass(frozen=True, slots=True)
class _Node:
    ctx: AlgorithmContext
    val: ShardedData


_NODES: dict[tuple[str, int], _Node] = {}


def _local(run: IPFLRun) -> LocalTraining:
    optimizer = (
        AdadeltaConfig(run.lr)
        if run.local_optimizer == "adadelta"
        else SGDConfig(run.lr, run.momentum)
    )
    return LocalTraining(run.local_steps, run.batch_size, optimizer)


def _architecture(run: IPFLRun, meta: dict[str, Any]) -> torch.nn.Module:
    return build_model(
        run.model,
        tuple(meta["input_shape"]),
        int(meta["n_classes"]),
        generator=torch.Generator().manual_seed(0),
    )


def _node(data_dir: str, partition: int) -> _Node:
    """Client ``partition``'s one-client context (its data only), cached per process."""
    key = (str(data_dir), int(partition))
    if key not in _NODES:
        meta = json.loads((Path(data_dir) / "meta.json").read_text())
        run = ipfl_run_from_dict(meta["run"])
        path = Path(data_dir) / f"partition-{int(partition)}.npz"
        if not path.exists():
            raise ValueError(f"partition {partition}: {path} does not exist")
        cpu = torch.device("cpu")
        with np.load(path, allow_pickle=False) as d:
            train = ShardedData.from_arrays([d["x_train"]], [d["y_train"]], cpu)
            val = ShardedData.from_arrays([d["x_val"]], [d["y_val"]], cpu)
            test = ShardedData.from_arrays([d["x_test"]], [d["y_test"]], cpu)
        engine = build_engine(run.engine, _architecture(run, meta), int(meta["n_classes"]), cpu)
        ctx = AlgorithmContext(
            engine=engine, train=train, test=test, local=_local(run),
            clusters=np.zeros(1, dtype=np.int64),
        )  # fmt: skip
        _NODES[key] = _Node(ctx, val)
    return _NODES[key]


def _params(message: Message, name: str) -> Params:
    return unpack(record_of(message.content, "arrays", ArrayRecord).to_torch_state_dict(), name)


def register_ipfl(app: ClientApp) -> None:
    """Register IP-FL's node half on ``app`` (the message types of the module docstring)."""

    def node_of(message: Message, context: Context) -> _Node:
        return _node(*partition_of(message, context))

    reply = answer

    @app.query("ipfl")
    def _query(message: Message, context: Context) -> Message:
        partition = int(context.node_config["partition-id"])
        metrics: dict[str, Any] = {"partition-id": partition, "num-examples": -1, "num-val": -1}
        try:
            node = node_of(message, context)
            metrics["num-examples"] = int(node.ctx.train.sizes[0])
            metrics["num-val"] = int(node.val.sizes[0])
        except ValueError:  # a node beyond the run's clients has no partition
            pass
        return reply(message, {"metrics": MetricRecord(metrics)})

    @app.query("ipfl_scores")
    def _score(message: Message, context: Context) -> Message:
        node = node_of(message, context)
        scores = accuracy_matrix(node.ctx.engine, _params(message, "model"), node.val)[0]
        return reply(message, {"metrics": MetricRecord({"scores": scores.tolist()})})

    @app.train("ipfl")
    def _train(message: Message, context: Context) -> Message:
        config = record_of(message.content, "config", ConfigRecord)
        node = node_of(message, context)
        stream = RowStream(
            str(config["stream"]),
            int(scalar(config["row"])),
            int(scalar(config["rows"])),
            int(scalar(config["width"])),
        )
        trained = node.ctx.fit(_params(message, "model"), np.array([0]), stream)  # type: ignore[arg-type]
        return reply(
            message,
            {
                "arrays": ArrayRecord(pack(trained.params, "model")),
                "metrics": MetricRecord(
                    {
                        "loss": float(np.mean(trained.loss)),
                        "num-examples": int(node.ctx.train.sizes[0]),
                    }
                ),
            },
        )

    @app.query("ipfl_profile")
    def _profile(message: Message, context: Context) -> Message:
        node = node_of(message, context)
        model = _params(message, "model")
        holdout = np.asarray(message.content["config"]["holdout"], dtype=np.int64)
        acc = node.ctx.engine.evaluate(model, node.val).accuracy
        assert acc is not None
        idx = torch.as_tensor(holdout, dtype=torch.long)
        grads, _ = node.ctx.engine.gradients(model, node.val.x[idx][None], node.val.y[idx][None])
        return reply(
            message,
            {
                "arrays": ArrayRecord(pack(grads, "gradient")),
                "metrics": MetricRecord({"accuracy": float(acc[0]), "rows": int(idx.numel())}),
            },
        )

    @app.query("ipfl_personal")
    def _personal(message: Message, context: Context) -> Message:
        node = node_of(message, context)
        models = _params(message, "model")
        weights = importance_weights(accuracy_matrix(node.ctx.engine, models, node.val))
        acc = node.ctx.engine.evaluate(personalise(models, weights), node.ctx.test).accuracy
        assert acc is not None
        return reply(
            message,
            {"metrics": MetricRecord({"accuracy": float(acc[0]), "weights": weights[0].tolist()})},
        )


# --------------------------------------------------------------------------- server side


@dataclass(frozen=True, slots=True)
class FlowerIPFLResult:
    """Outcome of :func:`play_ipfl_on_flower`.

    ``history`` has one record per round (``paid``, ``tokens``, ``pools``, ``selected``,
    ``bids``, ``psi``, ``refund``, and at evaluations ``cluster_accuracy`` and
    ``personalised_accuracy``), as :func:`learning.drivers.ipfl.run_ipfl` records them;
    ``tokens_start``/``tokens_end`` the balances; ``models`` the :math:`K` cluster models;
    ``personalised_accuracy`` and ``weights`` each client's Eq. 8 model on its test data.
    """

    run: IPFLRun
    tokens_start: np.ndarray
    tokens_end: np.ndarray
    pools_end: np.ndarray
    cluster_accuracy: np.ndarray
    personalised_accuracy: np.ndarray
    weights: np.ndarray
    history: tuple[dict[str, Any], ...]
    models: Params
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no models)."""
        from econ.outputs import plain

        return plain(
            {
                "kind": KIND,
                "run": self.run.to_dict(),
                "tokens_start": self.tokens_start,
                "tokens_end": self.tokens_end,
                "pools_end": self.pools_end,
                "cluster_accuracy": self.cluster_accuracy,
                "personalised_accuracy": self.personalised_accuracy,
                "weights": self.weights,
                "history": list(self.history),
                "seconds": self.seconds,
            }
        )


def _discover(
    grid: Grid, n: int, base: dict[str, Any], timeout: float
) -> tuple[list[int], np.ndarray, np.ndarray]:
    nodes, metrics = discover(grid, n, "query.ipfl", base, timeout)
    train = np.array([int(scalar(m["num-examples"])) for m in metrics], dtype=np.int64)
    val = np.array([int(scalar(m["num-val"])) for m in metrics], dtype=np.int64)
    return nodes, train, val


@dataclass
class FlowerIPFLClients(IPFLClients):
    """:class:`~learning.drivers.ipfl.clients.IPFLClients` on the server.

    Each client's data is on its node (``requests``); ``val_sizes`` holds the validation-set
    sizes the nodes reported.
    The clients' majorities stay on the nodes (``majority`` None: the records carry no
    purity of the bids).
    """

    requests: Requests
    val_sizes: np.ndarray
    holdout_per_client: int

    def _everyone(self, kind: str, models: Params) -> list[Message]:
        n = self.sizes.size
        return self.requests.ask(kind, np.arange(n), [pack(models, "model")] * n)

    def scores(self, models: Params) -> np.ndarray:
        """``query.ipfl_scores``: every node scores the cluster models on its validation data."""
        got = self._everyone("query.ipfl_scores", models)
        return np.array(
            [list(scalars(record_of(m.content, "metrics", MetricRecord)["scores"])) for m in got],
            dtype=np.float64,
        )

    def train(self, start: Params, cs: np.ndarray, rng: np.random.Generator) -> LocalResult:
        """``train.ipfl``: each payer trains on its row of the round's stream.

        The stream is a :class:`~learning.runtimes.flower.streams.RowStream`; ``rng`` moves
        past the minibatch keys the payers draw.
        """
        width = int(self.sizes[cs].max())
        stream = stream_state(rng)
        rng.random((cs.size, width))  # the minibatch keys the payers draw their rows of
        got = self.requests.ask(
            "train.ipfl",
            cs,
            [pack(select_rows(start, np.array([j])), "model") for j in range(cs.size)],
            [
                {"stream": stream, "row": j, "rows": int(cs.size), "width": width}
                for j in range(cs.size)
            ],
        )
        return LocalResult(
            params=stack([_params(m, "model") for m in got]),
            momentum=None,
            loss=np.array([float(metric(m, "loss")) for m in got]),
        )

    def profile(
        self, new: Params, opening: Opening, rng: np.random.Generator
    ) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """``query.ipfl_profile``: each payer's accuracy and the gradient on its hold-out rows.

        The hold-out rows are drawn here; a cluster's hold-out gradient weights its payers'
        gradients by their rows (one gradient over the pooled rows up to float32 rounding).
        """
        ks, cs = opening.participations()
        holdout: dict[int, list[int]] = {}
        for _, rows, members in opening.by_cluster():
            for j, i in zip(rows, members, strict=True):
                m_i = int(self.val_sizes[i])
                holdout[int(j)] = rng.permutation(m_i)[: min(m_i, self.holdout_per_client)].tolist()
        got = self.requests.ask(
            "query.ipfl_profile",
            cs,
            [pack(select_rows(new, ks[[j]]), "model") for j in range(cs.size)],
            [{"holdout": holdout[j]} for j in range(cs.size)],
        )
        gradients = {}
        for c, rows, _ in opening.by_cluster():
            counts = np.array([int(metric(got[j], "rows")) for j in rows], dtype=np.float64)
            grads = np.stack([flat(_params(got[j], "gradient"), [0])[0] for j in rows])
            gradients[c] = counts @ grads / counts.sum()
        return np.array([float(metric(m, "accuracy")) for m in got]), gradients

    def personalised(self, models: Params) -> tuple[np.ndarray, np.ndarray]:
        """``query.ipfl_personal``: each node's Eq. 8 model on its test data."""
        got = self._everyone("query.ipfl_personal", models)
        metrics = [record_of(m.content, "metrics", MetricRecord) for m in got]
        return (
            np.array([float(scalar(m["accuracy"])) for m in metrics]),
            np.array([list(scalars(m["weights"])) for m in metrics], dtype=np.float64),
        )


def play_ipfl_on_flower(
    grid: Grid, meta_dir: str, node_data_dir: str = "", timeout: float = 600.0
) -> FlowerIPFLResult:
    """Run the IP-FL federation whose ``meta.json`` is in ``meta_dir`` on the nodes of ``grid``.

    :func:`learning.drivers.ipfl.driver.play_ipfl` with :class:`FlowerIPFLClients`, as the
    module docstring describes; ``node_data_dir`` as in
    :func:`learning.runtimes.flower.apps.serve`.
    """
    directory = Path(meta_dir)
    meta = json.loads((directory / "meta.json").read_text())
    run = ipfl_run_from_dict(meta["run"])
    check_ipfl_run(run)
    n = int(meta["n_clients"])
    held = torch.load(directory / _SERVER_FILE, weights_only=True)
    base = {"data-dir": node_data_dir}
    nodes, sizes, val_sizes = _discover(grid, n, base, timeout)
    clients = FlowerIPFLClients(
        engine=build_engine(
            run.engine, _architecture(run, meta), int(meta["n_classes"]), torch.device("cpu")
        ),
        sizes=sizes.astype(np.float64),
        sources=tuple(
            (held[f"source-{i}-x"].numpy(), held[f"source-{i}-y"].numpy())
            for i in range(int(meta["sources"]))
        ),
        unseen=np.asarray(meta["unseen"], dtype=np.int64),
        majority=None,
        requests=Requests(grid, nodes, base, timeout),
        val_sizes=val_sizes,
        holdout_per_client=run.holdout_per_client,
    )
    started = time.perf_counter()
    state = play_ipfl(clients, run, start_state(run, n, broadcast(held["initial"], run.clusters)))
    models, tokens = state["models"], state["tokens"]
    accuracy, weights = clients.personalised(models)
    return FlowerIPFLResult(
        run=run,
        tokens_start=np.full(n, float(run.mechanism.tok_init)),
        tokens_end=tokens.ledger.tokens.copy(),
        pools_end=tokens.ledger.pools.copy(),
        cluster_accuracy=clients.cluster_accuracy(models),
        personalised_accuracy=accuracy,
        weights=weights,
        history=tuple(state["history"]),
        models=models,
        seconds=time.perf_counter() - started,
    )
