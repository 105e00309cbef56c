r"""Defection-free collaboration between two firms on Flower (Werner 2024, ch. 3, Algorithm 5).

Two nodes are the firms: node 0 holds the low firm's data (``partition-0.npz``), node 1 the
high firm's (``partition-1.npz``), split exactly as :meth:`learning.drivers.defection_free.TorchFirms.prepare`
splits them (:func:`write_duopoly_partitions`). The server is the mediator: it holds both
models and its balanced target set (``server.npz``), measures both firms' qualities on it,
and applies the rule (:func:`learning.drivers.defection_free.run_schemes`, which plays
:func:`games.defection_free.play` and reports the market, :func:`games.defection_free.report`).

:class:`FlowerFirms` is :class:`~learning.drivers.defection_free.TorchFirms` whose gradients come
from the nodes: every SGD step the mediator draws the minibatch positions from its stream,
as the in-process driver does, and sends each firm whose data the step uses
(``train.duopoly``) the model and its positions; the firm returns the gradient of its mean
loss on them. A joint step (the averaged loss of eq. 3.1 on the pooled minibatch) weights
the two gradients by their rows: the in-process gradient up to float32 rounding. The
examples never leave the nodes. A firm's node half is
:func:`learning.runtimes.flower.duopoly_node.register_duopoly`.
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

from games.defection_free import DefectionFreeConfig
from learning.data import load_dataset
from learning.drivers.defection_free import DuopolySetup, TorchFirms, split_data
from learning.drivers.defection_free_schemes import DuopolyRun, run_schemes
from learning.engine import BatchedEngine, Params, Task, parameters_of
from learning.models import build_model
from learning.rng import torch_generator
from learning.runtimes.flower.records import pack, record_of, scalar, unpack
from learning.runtimes.flower.requests import Requests, discover, losses, metric

__all__ = [
    "FlowerDuopolyResult",
    "FlowerFirms",
    "serve_duopoly",
    "write_duopoly_partitions",
]

KIND = "defection-free"
_NAMES = ("low", "high")


def write_duopoly_partitions(
    setup: DuopolySetup,
    seed: int,
    rounds: int,
    directory: str | os.PathLike[str],
    *,
    q_max: float | None = None,
    config: DefectionFreeConfig | None = None,
    stream: int = 1,
) -> dict[str, Any]:
    """Split the data as :meth:`TorchFirms.prepare` with ``seed`` does and write the run.

    ``partition-0.npz`` / ``partition-1.npz``: the low / high firm's examples (what each
    firm's node reads); ``server.npz``: the mediator's target set; ``meta.json``: the setup,
    the seed, ``rounds`` of the defection-free rule with ``config`` (``q_max`` None: estimated
    from a pooled run, as :func:`run_schemes` does) and the minibatch ``stream`` seed.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    split_rng, _, _ = np.random.default_rng(seed).spawn(3)
    data = load_dataset(setup.dataset, data_dir=setup.data_dir)
    firms, target = split_data(data, setup, split_rng)
    for k, idx in enumerate(firms):
        np.savez(directory / f"partition-{k}.npz", x=data.x[idx], y=data.y[idx])
    np.savez(directory / "server.npz", x=data.x[target], y=data.y[target])
    meta = {
        "kind": KIND,
        "n_clients": 2,
        "setup": {**dataclasses.asdict(setup), "init_epochs": list(setup.init_epochs)},
        "seed": int(seed),
        "rounds": int(rounds),
        "q_max": q_max,
        "config": dataclasses.asdict(config or DefectionFreeConfig()),
        "stream": int(stream),
        "input_shape": [int(s) for s in data.x.shape[1:]],
        "n_classes": int(data.n_classes),
    }
    (directory / "meta.json").write_text(json.dumps(meta))
    return meta


def _setup(meta: dict[str, Any]) -> DuopolySetup:
    raw = dict(meta["setup"])
    raw["init_epochs"] = tuple(raw["init_epochs"])
    return DuopolySetup(**raw)


# --------------------------------------------------------------------------- mediator


@dataclass
class FlowerFirms(TorchFirms):
    """:class:`TorchFirms` on the mediator, each firm's examples on its node.

    The models and the target set are here, each firm's examples on its node (``requests``:
    client 0 the low firm, 1 the high); ``sizes`` the examples each firm reported. ``data``
    stays empty.
    """

    requests: Requests | None = field(default=None, repr=False)
    sizes: dict[str, int] = field(default_factory=dict)

    def _size(self, name: str) -> int:
        return self.sizes[name]

    def _gradient(
        self, params: Params, name: str, joint: bool, rows: dict[str, np.ndarray]
    ) -> Params:
        """The gradient of the mean loss over the firms' minibatch rows.

        Both firms' rows when ``joint``; each part is computed on its node and weighted by
        its rows.
        """
        assert self.requests is not None
        parts = _NAMES if joint else (name,)
        clients = [_NAMES.index(p) for p in parts]
        sent = pack({k: v.cpu() for k, v in params.items()}, "model")
        got = self.requests.ask(
            "train.duopoly",
            clients,
            [sent] * len(parts),
            [{"rows": rows[p].astype(int).tolist()} for p in parts],
        )
        counts = np.array(
            [int(metric(m, "rows")) for m in got],
            dtype=np.float64,
        )
        weights = counts / counts.sum()
        value = float(sum(w * losses(m)[0] for w, m in zip(weights, got, strict=True)))
        self._check_loss(name, value)
        grads = [
            unpack(record_of(m.content, "arrays", ArrayRecord).to_torch_state_dict(), "gradient")
            for m in got
        ]
        device = next(iter(params.values())).device
        return {
            k: sum(float(w) * g[k] for w, g in zip(weights, grads, strict=True)).to(device)
            for k in grads[0]
        }


@dataclass(frozen=True, slots=True)
class FlowerDuopolyResult:
    """Outcome of :func:`serve_duopoly`.

    The run of every scheme played (``"defection-free"``, and ``"complete"`` when :math:`Q`
    was estimated from it), the final models by firm, and the seconds the rounds took.
    """

    runs: dict[str, DuopolyRun]
    models: Params
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """The schemes' reports (:meth:`games.defection_free.PlayReport.to_dict`)."""
        return {
            "kind": KIND,
            "runs": {name: run.to_dict() for name, run in self.runs.items()},
            "seconds": self.seconds,
        }


def serve_duopoly(
    grid: Grid, meta_dir: str, node_data_dir: str = "", timeout: float = 600.0
) -> FlowerDuopolyResult:
    """Mediate the run whose ``meta.json`` is in ``meta_dir`` between the two firms' nodes.

    As the module docstring describes: models drawn and pre-trained (``init_epochs``) as
    :meth:`TorchFirms.prepare` does, then :func:`run_schemes` with the defection-free rule.
    """
    directory = Path(meta_dir)
    meta = json.loads((directory / "meta.json").read_text())
    setup = _setup(meta)
    base = {"data-dir": node_data_dir}
    nodes, metrics = discover(grid, 2, "query.duopoly", base, timeout)
    _, init_rng, train_rng = np.random.default_rng(int(meta["seed"])).spawn(3)
    shape, n_classes = tuple(meta["input_shape"]), int(meta["n_classes"])
    generator = torch_generator(init_rng)
    models = [build_model(setup.model, shape, n_classes, generator=generator) for _ in _NAMES]
    cpu = torch.device("cpu")
    with np.load(directory / "server.npz", allow_pickle=False) as d:
        target = (d["x"], d["y"])
    firms = FlowerFirms(
        setup=setup,
        engine=BatchedEngine(models[0], Task.for_classes(n_classes), cpu),
        data={},
        target=target,
        n_classes=n_classes,
        params={
            name: {k: v.unsqueeze(0).to(cpu) for k, v in parameters_of(m).items()}
            for name, m in zip(_NAMES, models, strict=True)
        },
        rng=train_rng,
        requests=Requests(grid, nodes, base, timeout),
        sizes={
            name: int(scalar(m["num-examples"])) for name, m in zip(_NAMES, metrics, strict=True)
        },
    )
    started = time.perf_counter()
    for name, epochs in zip(_NAMES, setup.init_epochs, strict=True):
        for _ in range(int(epochs)):
            firms._epoch(name, joint=False, pace=None)
    runs = run_schemes(
        firms,
        int(meta["rounds"]),
        schemes=("defection-free",),
        q_max=meta["q_max"],
        config=DefectionFreeConfig(**meta["config"]),
        seed=int(meta["stream"]),
    )
    final = runs["defection-free"].firms.params
    return FlowerDuopolyResult(
        runs=runs,
        models={f"{name}/{k}": v for name, p in final.items() for k, v in p.items()},
        seconds=time.perf_counter() - started,
    )
