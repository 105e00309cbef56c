"""``collabecon cobo``: CoBo's collaboration weights against the baselines (spec cobo §7.2 B).

Small CPU analogues of the paper's vision experiments (Hashemi, He and Jaggi 2024, §4.1-4.2,
Table 2), on the embedded ``mnist5k`` digits with an MLP (784-200-10):

``cross-silo``
    8 clients in 4 clusters of 2; cluster ``g`` sees the labels ``(y + g) mod 10`` (the
    paper's label permutation); every client holds a disjoint eighth of the data.
``cross-device``
    20 clients in 5 clusters of sizes 6, 5, 4, 3, 2; cluster ``g`` owns the digits
    ``2g, 2g + 1`` (the paper's disjoint class groups, 80 clients on CIFAR-100).

Every method starts from the same model and trains ``--rounds`` rounds of one SGD step on
minibatches of 32 (learning rate 0.05, momentum 0.9); the methods are ``cobo``, ``oracle``
(FedAvg within the true clusters), ``ditto``, ``local``, ``fedavg``, ``fedavg-ft`` (FedAvg,
then 10% of the rounds of local fine-tuning), ``ifca`` and ``fc`` (Federated-Clustering),
the last two with the true number of clusters (``fc`` is left out of ``cross-device`` unless
named in ``--methods``: its all-pairs gradients cost O(n^2), and the paper leaves it out
too); Ditto's proximal weight is 0.1 (the paper's
lambda, spec cobo §8.21). CoBo samples each pair with probability
2/n every round (constant schedule), with rho = 0.05, gamma = 0.1 and minibatches of 128 for
the midpoint gradients (the theory's large b; spec §8.4). The result is the
mean test accuracy of every method, whether CoBo's final weights (thresholded at 1/2)
are the block-diagonal oracle, and the first round from which they stay so. With
``--out DIR`` the weight matrices over time are written as a heatmap PNG and a CSV.
"""

from __future__ import annotations

import argparse
import csv
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from learning.algorithms import ALGORITHMS, Algorithm, Context, LocalTraining, build_algorithm
from learning.algorithms.base import State
from learning.algorithms.cobo import oracle_weights
from learning.cli._output import fmt, table
from learning.engine import Params, SGDConfig, ShardedData, broadcast, parameters_of
from learning.experiment import build_engine
from learning.federation import make_federation
from learning.loop import run_rounds
from learning.models import build_model
from learning.rng import torch_generator

__all__ = ["METHODS", "SETTINGS", "add_arguments", "match_round", "render", "run", "run_setting"]

#: Method key -> (registered algorithm, parameters); ``None`` values are filled per run.
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "cobo": (
        "cobo",
        {"rho": 0.05, "gamma": 0.1, "schedule": "constant", "pair_batch_size": 128},
    ),
    "oracle": ("oracle", {}),
    "ditto": ("ditto", {"lam": 0.1}),
    "local": ("local", {}),
    "fedavg": ("fedavg", {}),
    "fedavg-ft": ("fedavg", {"finetune_steps": None}),
    "ifca": ("ifca", {}),
    "fc": ("federated-clustering", {}),
}

_FINETUNE_SHARE = 0.1  # fine-tuning steps of fedavg-ft, as a share of the rounds (spec §4)
_MODEL = "mlp"
_SGD = SGDConfig(0.05, momentum=0.9)
_BATCH = 32
_HEATMAP_SHARES = (0.01, 0.1, 0.5, 1.0)  # rounds shown in the heatmaps, as shares of the run


@dataclass(frozen=True, slots=True)
class _Setting:
    partition: str
    clients: int
    partition_params: dict[str, Any]
    methods: tuple[str, ...]


SETTINGS: dict[str, _Setting] = {
    "cross-silo": _Setting("private-label", 8, {"n_clusters": 4}, tuple(METHODS)),
    # Federated-Clustering's O(n^2) gradients per round leave it out, as in the paper's Table 2
    "cross-device": _Setting(
        "pathological",
        20,
        {"classes_per_client": 2, "sizes": (6, 5, 4, 3, 2)},
        tuple(m for m in METHODS if m != "fc"),
    ),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--setting", choices=tuple(SETTINGS), default="cross-silo")
    parser.add_argument("--rounds", type=int, default=300, help="training rounds (default 300)")
    parser.add_argument(
        "--methods",
        default=None,
        help=f"comma-separated subset of {', '.join(METHODS)} (default all; all but fc "
        "for cross-device, as in the paper)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write heatmaps (PNG, CSV) here")
    parser.add_argument("--progress", action="store_true", help="progress bars on stderr")


def _methods(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = sorted(set(names) - set(METHODS))
    if unknown or not names:
        raise ValueError(f"methods must be among {', '.join(METHODS)}, got {text!r}")
    return names


def _ensure_registered(algorithm: str) -> None:
    """Import the module of a registered name (``federated-clustering`` ->
    ``learning.algorithms.federated_clustering``) when the package has not yet."""
    if algorithm not in ALGORITHMS:
        try:
            importlib.import_module(f"learning.algorithms.{algorithm.replace('-', '_')}")
        except ModuleNotFoundError as exc:
            raise ValueError(f"algorithm {algorithm!r} is not available: {exc}") from exc


class _WeightRecorder(Algorithm):
    """CoBo as it is, keeping a copy of :math:`W` after every round."""

    name = "cobo"

    def __init__(self, inner: Algorithm) -> None:
        super().__init__(inner.ctx)
        self.inner = inner
        self.weights: list[np.ndarray] = []

    def init(self, models: Params, rng: np.random.Generator) -> State:
        return self.inner.init(models, rng)

    def round(
        self, state: State, clients: np.ndarray, rng: np.random.Generator
    ) -> tuple[State, dict[str, float]]:
        state, metrics = self.inner.round(state, clients, rng)
        self.weights.append(state["weights"].detach().cpu().numpy().copy())
        return state, metrics

    def client_models(self, state: State) -> Params:
        return self.inner.client_models(state)


def _context(setting: _Setting, seed: int) -> tuple[Context, Params]:
    rng = np.random.default_rng(seed)
    data_rng, model_rng = rng.spawn(2)
    federation = make_federation(
        "mnist5k", setting.partition, setting.clients, seed=data_rng, **setting.partition_params
    )
    model = build_model(
        _MODEL, federation.input_shape, federation.n_classes, generator=torch_generator(model_rng)
    )
    device = torch.device("cpu")
    clients = federation.clients
    ctx = Context(
        engine=build_engine("batched", model, federation.n_classes, device),
        train=ShardedData.from_arrays(
            [c.x_train for c in clients], [c.y_train for c in clients], device
        ),
        test=ShardedData.from_arrays(
            [c.x_test for c in clients], [c.y_test for c in clients], device
        ),
        local=LocalTraining(1, _BATCH, _SGD),
        clusters=federation.clusters,
    )
    return ctx, broadcast(parameters_of(model), setting.clients)


def match_round(history: list[np.ndarray], clusters: np.ndarray) -> int | None:
    """First round (1-based) from which :math:`W > 1/2` off the diagonal equals the oracle
    in every later round; None when the last round does not match."""
    oracle = oracle_weights(clusters).astype(bool)
    off = ~np.eye(clusters.size, dtype=bool)
    matches = [bool(np.array_equal((w > 0.5)[off], oracle[off])) for w in history]
    if not matches or not matches[-1]:
        return None
    wrong = [r for r, ok in enumerate(matches, start=1) if not ok]
    return wrong[-1] + 1 if wrong else 1


def _write_heatmaps(
    out: Path, history: list[np.ndarray], clusters: np.ndarray, setting: str
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    rounds = len(history)
    shown = sorted({max(1, round(share * rounds)) for share in _HEATMAP_SHARES})
    csv_path = out / f"cobo_weights_{setting}.csv"
    with csv_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["round", "i", "j", "weight"])
        for r, w in enumerate(history, start=1):
            for i, j in zip(*np.triu_indices(w.shape[0], k=1), strict=True):
                writer.writerow([r, int(i), int(j), f"{w[i, j]:.6g}"])
    panels = [*shown, "oracle"]
    fig, axes = plt.subplots(1, len(panels), figsize=(3 * len(panels), 3.2), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        w = oracle_weights(clusters) if panel == "oracle" else history[int(panel) - 1]
        masked = np.ma.array(w, mask=np.eye(w.shape[0], dtype=bool))
        image = ax.imshow(masked, vmin=0.0, vmax=1.0, cmap="viridis")
        ax.set_title("oracle" if panel == "oracle" else f"round {panel}")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(image, ax=list(axes[0]), shrink=0.8, label="collaboration weight")
    png_path = out / f"cobo_weights_{setting}.png"
    fig.savefig(png_path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return [str(png_path), str(csv_path)]


def run_setting(
    setting_name: str,
    methods: list[str],
    *,
    rounds: int,
    seed: int,
    out: Path | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Train every method of ``methods`` on the setting ``setting_name`` from one initial
    model and report mean test accuracies and CoBo's weight recovery."""
    ctx, initial = _context(SETTINGS[setting_name], seed)
    accuracy: dict[str, float] = {}
    history: list[np.ndarray] = []
    for key in methods:
        name, params = METHODS[key]
        if key == "fedavg-ft":
            params = {"finetune_steps": max(1, round(_FINETUNE_SHARE * rounds))}
        algorithm = build_algorithm(name, ctx, **params)
        if key == "cobo":
            algorithm = _WeightRecorder(algorithm)
        result = run_rounds(algorithm, initial, rounds, seed, eval_every=rounds, progress=progress)
        assert result.evaluation.accuracy is not None
        accuracy[key] = float(result.evaluation.accuracy.mean())
        if isinstance(algorithm, _WeightRecorder):
            history = algorithm.weights
    clusters = np.asarray(ctx.clusters)
    first = match_round(history, clusters) if history else None
    files = _write_heatmaps(out, history, clusters, setting_name) if out and history else []
    return {
        "setting": setting_name,
        "clients": ctx.n_clients,
        "rounds": rounds,
        "accuracy": accuracy,
        "weights_match_oracle": None if not history else first is not None,
        "weights_match_round": first,
        "final_weights": history[-1] if history else None,
        "files": files,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {args.rounds}")
    methods = (
        list(SETTINGS[args.setting].methods) if args.methods is None else _methods(args.methods)
    )
    for key in methods:
        _ensure_registered(METHODS[key][0])
    return run_setting(
        args.setting,
        methods,
        rounds=args.rounds,
        seed=args.seed,
        out=args.out,
        progress=args.progress,
    )


def render(result: dict[str, Any]) -> str:
    rows = [[m, acc] for m, acc in sorted(result["accuracy"].items(), key=lambda kv: -kv[1])]
    lines = [
        f"CoBo, {result['setting']} ({result['clients']} clients, {result['rounds']} rounds)",
        table(rows, ["method", "mean test accuracy"]),
        f"CoBo weights match the oracle: {fmt(result['weights_match_oracle'])} "
        f"(from round {result['weights_match_round']})",
    ]
    if result.get("files"):
        lines.append("wrote " + ", ".join(result["files"]))
    return "\n".join(lines)
