r"""Collaboration among n firms on Flower, the mediator on the server (Werner 2024, ch. 3, for n firms).

Node ``k`` is firm ``k``: it holds its Dirichlet share of the data (``partition-<k>.npz``),
split exactly as :meth:`learning.drivers.defection_free_n.TorchNFirms.prepare` splits it
(:func:`write_n_firm_partitions`). The server is the mediator: it holds every firm's model
and the balanced target set (``server.npz``), measures the qualities on it and plays the
scheme (:func:`learning.drivers.defection_free_n.run_n_firms`: the n-firm defection-free
rule, complete collaboration or a one-sided scheme).

:class:`FlowerNFirms` is :class:`~learning.drivers.defection_free_n.TorchNFirms` whose
gradients come from the nodes: every SGD step the mediator draws each firm's minibatch
positions from its stream, as the in-process driver does, and sends firm ``j``'s node the
models of every firm that learns from ``j``'s data (the scheme's sharing matrix,
:func:`learning.drivers.defection_free_n.sharing`) with ``j``'s positions
(``train.duopoly``, :mod:`learning.runtimes.flower.duopoly_node`); the node returns each
model's gradient of its mean loss on them. Firm ``i``'s gradient is the row-weighted mean of
its gradients from the nodes of the firms it learns from: the in-process gradient up to
float32 rounding. The examples never leave the nodes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from flwr.app import ArrayRecord
from flwr.serverapp import Grid

from econ.validation import choice
from learning.drivers.defection_free_n import (
    N_SCHEMES,
    NFirmRun,
    NFirmSetup,
    TorchNFirms,
    initial_models,
    load_and_split,
    run_n_firms,
)
from learning.engine import BatchedEngine, Params, Task
from learning.runtimes.flower.records import pack, record_of, scalar, unpack
from learning.runtimes.flower.requests import Requests, discover, losses, metric

__all__ = [
    "FlowerNFirmResult",
    "FlowerNFirms",
    "serve_n_firms",
    "write_n_firm_partitions",
]

KIND = "defection-free-n"


def write_n_firm_partitions(
    setup: NFirmSetup,
    seed: int,
    rounds: int,
    directory: str | os.PathLike[str],
    *,
    scheme: str = "defection-free",
    q_max: float | None = None,
    stream: int | None = None,
) -> dict[str, Any]:
    """Split the data as :meth:`TorchNFirms.prepare` with ``seed`` does and write the run.

    ``partition-<k>.npz``: firm ``k``'s examples (what its node reads); ``server.npz``: the
    mediator's target set; ``meta.json``: the setup, the seed, ``rounds`` of ``scheme``,
    ``q_max`` (None: estimated from a complete run, as :func:`run_n_firms` does) and the
    minibatch ``stream`` seed (None: ``seed``, as ``collabecon defection-free --firms``).

    Raises
    ------
    ValueError
        An unknown scheme, or what :func:`load_and_split` refuses.
    """
    choice("scheme", scheme, N_SCHEMES)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    data, shares, target = load_and_split(setup, seed)
    for k, idx in enumerate(shares):
        np.savez(directory / f"partition-{k}.npz", x=data.x[idx], y=data.y[idx])
    np.savez(directory / "server.npz", x=data.x[target], y=data.y[target])
    meta = {
        "kind": KIND,
        "n_clients": setup.firms,
        "setup": dataclasses.asdict(setup),
        "seed": int(seed),
        "rounds": int(rounds),
        "scheme": scheme,
        "q_max": q_max,
        "stream": int(seed if stream is None else stream),
        "input_shape": [int(s) for s in data.x.shape[1:]],
        "n_classes": int(data.n_classes),
    }
    (directory / "meta.json").write_text(json.dumps(meta))
    return meta


@dataclass
class FlowerNFirms(TorchNFirms):
    """:class:`TorchNFirms` on the mediator, each firm's examples on its node.

    ``requests`` reaches firm ``k``'s node as client ``k``; ``sizes`` are the examples each
    firm reported and ``offsets`` zeros (a node indexes its own examples); ``x`` and ``y``
    stay empty.
    """

    requests: Requests | None = field(default=None, repr=False)

    def gradients(
        self, params: Params, share: np.ndarray, rows: np.ndarray
    ) -> tuple[Params, torch.Tensor]:
        """Per firm ``i``: the row-weighted mean of its gradients and losses from the nodes it shares."""
        assert self.requests is not None
        sources = [j for j in range(share.shape[1]) if share[:, j].any()]
        learners = [np.flatnonzero(share[:, j]) for j in sources]
        sent = [
            pack({k: v[torch.from_numpy(who)].cpu() for k, v in params.items()}, "model")
            for who in learners
        ]
        got = self.requests.ask(
            "train.duopoly",
            sources,
            sent,
            [{"rows": rows[j].astype(int).tolist()} for j in sources],
        )
        device = next(iter(params.values())).device
        weight = torch.zeros(share.shape, dtype=torch.float64)
        for j, reply in zip(sources, got, strict=True):
            weight[:, j] = float(metric(reply, "rows")) * torch.from_numpy(share[:, j])
        weight /= weight.sum(dim=1, keepdim=True)
        grads = {k: torch.zeros_like(v) for k, v in params.items()}
        loss = torch.zeros(share.shape[0], dtype=torch.float64)
        for j, who, reply in zip(sources, learners, got, strict=True):
            w = weight[torch.from_numpy(who), j]
            loss[torch.from_numpy(who)] += w * torch.tensor(losses(reply), dtype=torch.float64)
            part = unpack(
                record_of(reply.content, "arrays", ArrayRecord).to_torch_state_dict(), "gradient"
            )
            for k, g in part.items():
                scale = w.to(g.dtype).reshape(-1, *([1] * (g.dim() - 1)))
                grads[k][torch.from_numpy(who)] += (scale * g).to(device)
        return grads, loss


@dataclass(frozen=True, slots=True)
class FlowerNFirmResult:
    """Outcome of :func:`serve_n_firms`: the scheme's run, the final models, the seconds."""

    run: NFirmRun
    models: Params
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """The run's record (:meth:`NFirmRun.to_dict`) with the kind and the seconds."""
        return {"kind": KIND, **self.run.to_dict(), "seconds": self.seconds}


def serve_n_firms(
    grid: Grid, meta_dir: str, node_data_dir: str = "", timeout: float = 600.0
) -> FlowerNFirmResult:
    """Mediate the run whose ``meta.json`` is in ``meta_dir`` among the firms' nodes.

    As the module docstring describes: the models drawn and pre-trained (``init_epochs``)
    as :meth:`TorchNFirms.prepare` does, then :func:`run_n_firms` with the run's scheme.
    """
    directory = Path(meta_dir)
    meta = json.loads((directory / "meta.json").read_text())
    setup = NFirmSetup(**meta["setup"])
    base = {"data-dir": node_data_dir}
    nodes, metrics = discover(grid, setup.firms, "query.duopoly", base, timeout)
    shape, n_classes = tuple(meta["input_shape"]), int(meta["n_classes"])
    model, params, stream = initial_models(setup, shape, n_classes, int(meta["seed"]))
    with np.load(directory / "server.npz", allow_pickle=False) as d:
        target = (d["x"], d["y"])
    cpu = torch.device("cpu")
    firms = FlowerNFirms(
        setup=setup,
        engine=BatchedEngine(model, Task.for_classes(n_classes), cpu),
        x=torch.empty(0),
        y=torch.empty(0),
        offsets=np.zeros(setup.firms, dtype=np.int64),
        sizes=np.array([int(scalar(m["num-examples"])) for m in metrics], dtype=np.int64),
        target=target,
        n_classes=n_classes,
        params=params,
        rng=stream,
        requests=Requests(grid, nodes, base, timeout),
    )
    started = time.perf_counter()
    firms.pretrain()
    scheme = str(meta["scheme"])
    runs = run_n_firms(
        firms,
        int(meta["rounds"]),
        schemes=(scheme,),
        q_max=meta["q_max"],
        seed=int(meta["stream"]),
    )
    final = runs[scheme].firms.params
    return FlowerNFirmResult(
        run=runs[scheme],
        models={f"firm-{i}/{k}": v[i] for k, v in final.items() for i in range(setup.firms)},
        seconds=time.perf_counter() - started,
    )
