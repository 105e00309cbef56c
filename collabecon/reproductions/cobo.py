r"""CoBo's collaboration weights against the baselines: the cross-silo and cross-device
experiments of Hashemi, He and Jaggi 2024 ("CoBo: Collaborative Learning via Bilevel
Optimization", NeurIPS 2024; Sections 4.1-4.2, Table 2, Figures 6 and 8), as small CPU
analogues on the embedded ``mnist5k`` digits with an MLP (784-200-10):

``cross-silo``
    8 clients in 4 clusters of 2; cluster ``g`` sees the labels ``(y + g) mod 10`` (the
    paper's label permutation, every class with a different label in every cluster) and,
    as in the paper, each cluster gets the whole data set, split in half between its two
    clients (Section 4.1).
``cross-device``
    20 clients in 5 clusters of sizes 6, 5, 4, 3, 2; cluster ``g`` owns the digits
    ``2g, 2g + 1``, relabelled ``y mod 2`` with the 10-way head kept (the paper's disjoint
    class groups relabelled ``y mod 10``, 80 clients on CIFAR-100; Section 4.2), its examples
    dealt out evenly among its clients.

Training budget and learning rates. Every method runs the same number of rounds, each one
minibatch SGD step (batch 128) per model; ``fedavg-ft`` spends the last 10% of them on local
fine-tuning (the paper does not say how long), so its budget is the others'. The paper tunes
each method's learning rate (appendix "Experimental Details": Ditto 0.1,
Federated-Clustering 0.05, every other method 0.01); here every method picks its own from
:data:`LR_GRID` by mean accuracy on a validation set: :data:`VALIDATION_SHARE` of every
client's training examples, held out from training for every method and every seed (the test
set is never looked at to choose). The grid is searched once, on the first seed, and the
chosen rates are reused for the other seeds; the output lists the grid, the validation
accuracy of every rate and the choice. ``learning_rates="paper"`` runs the paper's rates
instead.

Other settings, with the paper's (appendix "Experimental Details") where it gives them:
Ditto's proximal weight lambda = 1 (the vision value "as recommended"); IFCA and
Federated-Clustering get the true number of clusters, IFCA with separately initialised models
and all clients in ``cross-silo``, 10% of them per round in ``cross-device``. Departures:

- by default every method runs plain SGD (no momentum). ``momentum="code"`` gives them the
  official code's optimiser instead: every method but Federated-Clustering (raw gradients in the
  code) keeps a per-client exponential moving average of its gradients across rounds,
  :math:`m \leftarrow 0.9 m + 0.1 g` (PyTorch's momentum 0.9 with dampening 0.1, so the effective
  step stays the learning rate; :math:`m = g` at a client's first step); the Oracle keeps one per
  cluster, and Ditto runs the code's variant (``variant="as-run"``: gradients at the personal
  models drive the global one) on ``ditto_k = 2`` sampled clients per round.
- 300 rounds at the small scale instead of 40,000 / 20,000 iterations.
- CoBo: rho = 0.05 (the code's), the code's mixed pair sampling (2/n per pair for the first
  2% of the rounds, the code's 800 of 40,000 iterations, then 1/sqrt(t)), midpoint
  gradients on minibatches of 128, and gamma = 0.1 instead of the code's 0.01: with this
  smaller model the midpoint inner products are small and gamma = 0.01 leaves W at 1 for
  the whole run (a pair sampled about ln T times needs a larger step to leave 1).

Every claim the paper makes about these two experiments is a row of
:data:`collabecon.reproductions.cobo_claims.CLAIMS`, judged on the mean over seeds.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from collabecon.reproductions.cobo_claims import (
    CLAIMS,
    CURVE_POINTS,
    NAMES,
    PAPER,
    PAPER_IMPROVED,
    PAPER_REF,
    PAPER_STD,
    _pct,
    _with_std,
    claims,
)
from econ.claims import Claim, Reproduction, claims_markdown
from econ.validation import choice, positive_int
from learning.algorithms import ALGORITHMS, Algorithm, Context, LocalTraining, build_algorithm
from learning.algorithms.cobo_steps import oracle_weights, weight_error
from learning.algorithms.exchanges import State
from learning.build import build
from learning.engine import Params, ShardedData
from learning.loop import run_rounds
from learning.optim import SGDConfig

__all__ = [
    "CHANCE",
    "CLAIMS",
    "CODE_MOMENTUM",
    "LEARNING_RATES",
    "LR_GRID",
    "METHODS",
    "MOMENTUM_MODES",
    "PAPER",
    "PAPER_REF",
    "PAPER_STD",
    "SETTINGS",
    "VALIDATION_SHARE",
    "claims",
    "match_round",
    "reproduce",
    "run_setting",
]

#: Method key -> (registered algorithm, parameters); ``fedavg-ft``'s fine-tuning steps and
#: CoBo's ``switch_at`` are filled per run from the number of rounds.
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "cobo": (
        "cobo",
        {
            "rho": 0.05,
            "gamma": 0.1,
            "schedule": "mixed",
            "decay": "1/sqrt(t)",
            "pair_batch_size": 128,
        },
    ),
    "oracle": ("oracle", {}),
    "ditto": ("ditto", {"lam": 1.0}),
    "local": ("local", {}),
    "fedavg": ("fedavg", {}),
    "fedavg-ft": ("fedavg", {}),
    "ifca": ("ifca", {}),
    "fc": ("federated-clustering", {}),
}

MOMENTUM_MODES = ("none", "code")

#: ``momentum="code"``: the official code's EMA momentum, and what each method
#: needs to keep it across rounds (``fc`` keeps raw gradients, as in the code).
CODE_MOMENTUM = SGDConfig(1.0, momentum=0.9, dampening=0.1)  # lr replaced per method
_OWN_BUFFER = {"momentum": CODE_MOMENTUM.momentum, "dampening": CODE_MOMENTUM.dampening}
_CODE_PARAMETERS: dict[str, dict[str, Any]] = {
    "cobo": {},
    "oracle": {"keep_momentum": "group"},
    "ditto": {"variant": "as-run", **_OWN_BUFFER},
    "local": {"keep_momentum": "client"},
    "fedavg": {"keep_momentum": "client"},
    "fedavg-ft": {"keep_momentum": "client"},
    "ifca": _OWN_BUFFER,
}
_DITTO_K = 2  # clients per round of the official code's Ditto

#: The paper's learning rates, tuned per method (appendix "Experimental Details").
LEARNING_RATES: dict[str, float] = {
    "cobo": 0.01,
    "oracle": 0.01,
    "ditto": 0.1,
    "local": 0.01,
    "fedavg": 0.01,
    "fedavg-ft": 0.01,
    "ifca": 0.01,
    "fc": 0.05,
}

#: The learning rates every method chooses from on validation data: the three rates the paper
#: settled on (appendix "Experimental Details").
LR_GRID: tuple[float, ...] = (0.01, 0.05, 0.1)

#: Share of every client's training examples held out as validation data.
VALIDATION_SHARE = 0.2

#: Accuracy of a constant guess: 10 classes cross-silo, the binary tasks ``y mod 2``
#: cross-device.
CHANCE = {"cross-silo": 0.1, "cross-device": 0.5}
_NEAR_CHANCE = 0.05  # a method this close to chance gets a note

#: Why a method can end near chance in a setting (the note next to it).
_CHANCE_REASONS = {
    ("cross-silo", "fedavg"): "one shared model must serve four label permutations that "
    "disagree on every class; the paper's Table 2 has FedAvg at 18.8% on 100 classes",
    ("cross-silo", "ifca"): "where IFCA's clusters merge its shared models face the "
    "conflicting label permutations as FedAvg's does; the paper's Table 2 has IFCA at 18.6%",
}

#: Fine-tuning steps of fedavg-ft, as a share of the rounds (the paper gives none).
_FINETUNE_SHARE = 0.1
_SWITCH_SHARE = 0.02  # constant pair sampling of CoBo's mixed schedule (code: 800 of 40k)
_MODEL = "mlp"
_BATCH = 128
_HEATMAP_SHARES = (0.01, 0.1, 0.5, 1.0)  # rounds shown in the heatmaps, as shares of the run

#: Rounds of each scale: the small CPU analogue and the paper's iterations.
ROUNDS = {
    "small": {"cross-silo": 300, "cross-device": 300},
    "paper": {"cross-silo": 40_000, "cross-device": 20_000},
}
DEFAULT_SEEDS = 3


@dataclass(frozen=True, slots=True)
class _Setting:
    """A federation of ``mnist5k``: the partition, its parameters, the methods run by
    default, the modulus of the labels (None: kept) and IFCA's share of clients per round."""

    partition: str
    clients: int
    partition_params: dict[str, Any]
    methods: tuple[str, ...]
    label_modulus: int | None = None
    ifca_share: float = 1.0


SETTINGS: dict[str, _Setting] = {
    "cross-silo": _Setting(
        "private-label", 8, {"n_clusters": 4, "replicate": True}, tuple(METHODS)
    ),
    # Federated-Clustering's O(n^2) gradients per round leave it out, as in the paper's Table 2
    "cross-device": _Setting(
        "pathological",
        20,
        {"classes_per_client": 2, "sizes": (6, 5, 4, 3, 2)},
        tuple(m for m in METHODS if m != "fc"),
        label_modulus=2,
        ifca_share=0.1,
    ),
}


def check_methods(names: Sequence[str]) -> list[str]:
    """``names`` when every one is a key of :data:`METHODS`, else ValueError naming them."""
    unknown = sorted(set(names) - set(METHODS))
    if unknown:
        raise ValueError(f"methods must be among {', '.join(METHODS)}, got {', '.join(unknown)}")
    for key in names:
        _ensure_registered(METHODS[key][0])
    return list(names)


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


@dataclass(frozen=True, slots=True)
class _Data:
    """One seed's federation: training data (validation removed), validation and test data,
    the initial models and the true clusters."""

    base: Context
    validation: ShardedData
    initial: Params


def _federation(setting: _Setting, seed: int, device: torch.device) -> _Data:
    """The federation of ``setting`` for ``seed``: every client's training examples split
    into training and validation (:data:`VALIDATION_SHARE`, at random), one initial model."""
    rng = np.random.default_rng(seed)
    data_rng, model_rng, split_rng = rng.spawn(3)
    modulus = setting.label_modulus or 0
    built = build(
        "mnist5k", setting.partition, setting.clients, model=_MODEL, data_rng=data_rng,
        model_rng=model_rng, device=device,
        labels=(lambda y: y % modulus) if modulus else None,
        federation_params=setting.partition_params,
    )  # fmt: skip
    train, validation = built.split_validation(VALIDATION_SHARE, split_rng)
    base = built.context(LocalTraining(1, _BATCH, SGDConfig(LEARNING_RATES["local"])), train=train)
    initial = built.start(setting.clients)
    return _Data(base, validation, initial)


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
    panels: list[int | str] = [*shown, "oracle"]
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


def _finetune_steps(rounds: int) -> int:
    """Local fine-tuning steps of ``fedavg-ft``: the last 10% of the rounds (none in a
    one-round run), so that its budget is every other method's."""
    return 0 if rounds < 2 else max(1, round(_FINETUNE_SHARE * rounds))


def _parameters(key: str, rounds: int, schedule: str, momentum: str) -> dict[str, Any]:
    """The parameters of method ``key`` for a run of ``rounds`` rounds."""
    params = dict(METHODS[key][1])
    if momentum == "code":
        params.update(_CODE_PARAMETERS.get(key, {}))
    if key == "fedavg-ft":
        params["finetune_steps"] = _finetune_steps(rounds)
    if key == "cobo":
        params.update(schedule=schedule, switch_at=max(1, round(_SWITCH_SHARE * rounds)))
    return params


@dataclass(frozen=True, slots=True)
class _Run:
    """One method, one seed, one learning rate: per-client test and validation accuracy,
    the test-accuracy curve, CoBo's weights over time, IFCA's final assignment."""

    test: np.ndarray
    validation: np.ndarray
    curve: list[tuple[int, float]]
    weights: list[np.ndarray]
    assignment: list[int] | None


def _train(
    key: str,
    setting: _Setting,
    data: _Data,
    *,
    lr: float,
    rounds: int,
    seed: int,
    schedule: str,
    momentum: str,
) -> _Run:
    """Train method ``key`` for ``rounds`` rounds at learning rate ``lr``."""
    code = momentum == "code" and key in _CODE_PARAMETERS
    sgd = CODE_MOMENTUM if code else SGDConfig(1.0)
    local = LocalTraining(1, _BATCH, dataclasses.replace(sgd, lr=lr))
    ctx = dataclasses.replace(data.base, local=local)
    algorithm = build_algorithm(
        METHODS[key][0], ctx, **_parameters(key, rounds, schedule, momentum)
    )
    if key == "cobo":
        algorithm = _WeightRecorder(algorithm)
    per_round = None
    if key == "ifca" and setting.ifca_share < 1.0:
        per_round = max(1, round(setting.ifca_share * ctx.n_clients))
    elif key == "ditto" and code:
        per_round = _DITTO_K
    steps = rounds - _finetune_steps(rounds) if key == "fedavg-ft" else rounds
    curve = key in ("cobo", "ditto")
    result = run_rounds(
        algorithm,
        data.initial,
        steps,
        seed,
        clients_per_round=per_round,
        eval_every=max(1, steps // CURVE_POINTS) if curve else steps,
    )
    assert result.evaluation.accuracy is not None
    validation = ctx.engine.evaluate(result.models, data.validation).accuracy
    assert validation is not None
    points = [
        (r.round, float(r.test_accuracy))
        for r in result.history
        if curve and r.test_accuracy is not None
    ]
    assignment = None
    if key == "ifca":
        assignment = [int(a) for a in result.state["assignment"].cpu().numpy()]
    return _Run(
        test=np.asarray(result.evaluation.accuracy, dtype=float),
        validation=np.asarray(validation, dtype=float),
        curve=points,
        weights=algorithm.weights if isinstance(algorithm, _WeightRecorder) else [],
        assignment=assignment,
    )


def _std(values: Sequence[float]) -> float:
    """Sample standard deviation over seeds (0 for one seed)."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def run_setting(
    setting_name: str,
    methods: Sequence[str] | None = None,
    *,
    rounds: int,
    seed: int = 0,
    seeds: int = 1,
    schedule: str = "mixed",
    momentum: str = "none",
    learning_rates: str = "tuned",
    grid: Sequence[float] = LR_GRID,
    out: Path | None = None,
    progress: Callable[[str], None] = lambda _: None,
    device: torch.device | str = "cpu",
    workers: int = 1,
) -> dict[str, Any]:
    """Train every method of ``methods`` on the setting ``setting_name`` for ``seeds`` seeds
    (``seed``, ``seed + 1``, ...) with the same budget, and report mean test accuracies, their
    spread over seeds, CoBo's weight recovery and every claim of the paper (:func:`claims`).

    Parameters
    ----------
    setting_name : {"cross-silo", "cross-device"}
    methods : sequence of str, optional
        Keys of :data:`METHODS` (the setting's methods by default).
    rounds, seed, seeds : int
        Rounds of every method (one SGD step per model each), first seed, number of seeds.
    schedule : str
        CoBo's pair sampling (:data:`learning.algorithms.cobo_steps.SCHEDULES`).
    momentum : {"none", "code"}
        Plain SGD, or the official code's EMA momentum (module docstring).
    learning_rates : {"tuned", "paper"}
        "tuned": each method's learning rate is the best of ``grid`` by mean validation
        accuracy on the first seed, reused for the others; "paper": :data:`LEARNING_RATES`.
    grid : sequence of float
        Learning rates tried, each > 0.
    out : Path, optional
        Folder for the heatmap (PNG) and the weights over time (CSV) of the first seed's CoBo.
    device : torch.device or str
        Where to train.
    workers : int
        Methods trained at once, each in its own process (1: one after another here).
    progress : callable
        Called with a short text before each training run (one method, learning rate and
        seed: :func:`run_method`), or, with several workers, as each method finishes.
    """
    setting_name = choice("setting", setting_name, tuple(SETTINGS))
    workers = positive_int("workers", workers)
    methods = check_methods(list(SETTINGS[setting_name].methods) if methods is None else methods)
    options: dict[str, Any] = dict(
        rounds=rounds,
        seed=seed,
        seeds=seeds,
        schedule=schedule,
        momentum=momentum,
        learning_rates=learning_rates,
        grid=grid,
        device=device,
    )
    started = time.perf_counter()
    if workers == 1 or len(methods) == 1:
        runs = {key: run_method(setting_name, key, progress=progress, **options) for key in methods}
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        options["device"] = str(device)
        context = multiprocessing.get_context("spawn")  # CUDA cannot be forked
        with ProcessPoolExecutor(min(workers, len(methods)), mp_context=context) as pool:
            futures = {pool.submit(run_method, setting_name, k, **options): k for k in methods}
            for future in as_completed(futures):
                if future.exception() is None:
                    progress(f"{futures[future]}: finished")
            done = {k: f.result() for f, k in futures.items()}
            runs = {k: done[k] for k in methods}
    result = summarise(runs, out=out)
    result["device"] = str(device)
    result["workers"] = workers
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


@dataclass(frozen=True, slots=True)
class MethodRuns:
    """One method on one setting: its learning-rate search and its run on every seed (what
    :func:`summarise` gathers; methods are independent, so they may run in parallel)."""

    setting: str
    key: str
    rounds: int
    seeds: tuple[int, ...]
    schedule: str
    momentum: str
    learning_rates: str
    grid: tuple[float, ...]
    tuning: dict[float, float]
    chosen: float
    runs: tuple[_Run, ...]
    clients: int
    clusters: np.ndarray


def run_method(
    setting_name: str,
    key: str,
    *,
    rounds: int,
    seed: int = 0,
    seeds: int = 1,
    schedule: str = "mixed",
    momentum: str = "none",
    learning_rates: str = "tuned",
    grid: Sequence[float] = LR_GRID,
    progress: Callable[[str], None] = lambda _: None,
    device: torch.device | str = "cpu",
) -> MethodRuns:
    """Method ``key`` on ``setting_name``: its learning rate (the best of ``grid`` by mean
    validation accuracy on seed ``seed``, or the paper's), then its runs on the other seeds
    (parameters as in :func:`run_setting`; ``progress`` is called with a short text before
    each training run)."""
    setting_name = choice("setting", setting_name, tuple(SETTINGS))
    momentum = choice("momentum", momentum, MOMENTUM_MODES)
    learning_rates = choice("learning_rates", learning_rates, ("tuned", "paper"))
    rounds = positive_int("rounds", rounds)
    seeds = positive_int("seeds", seeds)
    grid = tuple(float(lr) for lr in grid)
    if not grid or any(not (math.isfinite(lr) and lr > 0) for lr in grid):
        raise ValueError(f"lr_grid must be learning rates > 0, got {list(grid)}")
    (key,) = check_methods([key])
    setting = SETTINGS[setting_name]
    device = torch.device(device)
    common: dict[str, Any] = dict(rounds=rounds, schedule=schedule, momentum=momentum)

    def train(data: _Data, lr: float, s: int, why: str) -> _Run:
        progress(f"{key}: lr {lr:g}, seed {s} ({why})")
        return _train(key, setting, data, lr=lr, seed=s, **common)

    first = _federation(setting, seed, device)
    scores: dict[float, float] = {}
    if learning_rates == "paper":
        chosen = LEARNING_RATES[key]
        runs = [train(first, chosen, seed, "the paper's rate")]
    else:
        tried = {lr: train(first, lr, seed, "tuning") for lr in grid}
        scores = {lr: float(run.validation.mean()) for lr, run in tried.items()}
        chosen = max(grid, key=lambda lr: (scores[lr], -lr))  # ties: the smaller rate
        runs = [tried[chosen]]
    for s in range(seed + 1, seed + seeds):
        data = _federation(setting, s, device)
        runs.append(train(data, chosen, s, "chosen rate"))
    return MethodRuns(
        setting=setting_name,
        key=key,
        rounds=rounds,
        seeds=tuple(range(seed, seed + seeds)),
        schedule=schedule,
        momentum=momentum,
        learning_rates=learning_rates,
        grid=grid if learning_rates == "tuned" else (),
        tuning=scores,
        chosen=chosen,
        runs=tuple(runs),
        clients=first.base.n_clients,
        clusters=np.asarray(first.base.clusters),
    )


def summarise(methods: dict[str, MethodRuns], out: Path | None = None) -> dict[str, Any]:
    """The result of one setting from the runs of its methods (all of one setting, rounds,
    seeds and options): accuracies, spread, tuning, CoBo's weights, claims; heatmaps of the
    first seed's CoBo into ``out``."""
    if not methods:
        raise ValueError("methods must name at least one method")
    one = next(iter(methods.values()))
    shared = ("setting", "rounds", "seeds", "schedule", "momentum", "learning_rates", "grid")
    for m in methods.values():
        if any(getattr(m, f) != getattr(one, f) for f in shared):
            raise ValueError(f"methods must share {', '.join(shared)}; {m.key} differs")
    setting_name, rounds, seed, seeds = one.setting, one.rounds, one.seeds[0], len(one.seeds)
    schedule, momentum, learning_rates, grid = (
        one.schedule,
        one.momentum,
        one.learning_rates,
        one.grid,
    )
    runs = {k: list(m.runs) for k, m in methods.items()}
    tuning = {k: {"grid": m.tuning, "chosen": m.chosen} for k, m in methods.items()}
    per_seed = {k: [float(r.test.mean()) for r in rs] for k, rs in runs.items()}
    accuracy = {k: float(np.mean(v)) for k, v in per_seed.items()}
    spread = {k: _std(v) for k, v in per_seed.items()}
    improved: dict[str, list[float]] = {}
    if "local" in runs:
        for key in methods:
            if key != "local":
                improved[key] = [
                    100.0 * float(np.mean(r.test > loc.test))
                    for r, loc in zip(runs[key], runs["local"], strict=True)
                ]
    clusters = one.clusters
    weights = [r.weights for r in runs.get("cobo", []) if r.weights]
    match = [match_round(h, clusters) for h in weights]
    files = _write_heatmaps(out, weights[0], clusters, setting_name) if out and weights else []
    chance = CHANCE[setting_name]
    near_chance = {
        k: _CHANCE_REASONS.get(
            (setting_name, k),
            f"at its best learning rate of the grid on validation data it does not learn "
            f"in {rounds} rounds",
        )
        for k, a in accuracy.items()
        if a < chance + _NEAR_CHANCE
    }
    result: dict[str, Any] = {
        "setting": setting_name,
        "clients": one.clients,
        "rounds": rounds,
        "budget": f"{rounds} rounds for every method, one minibatch ({_BATCH}) SGD step per "
        f"model per round; fedavg-ft: {rounds - _finetune_steps(rounds)} FedAvg rounds then "
        f"{_finetune_steps(rounds)} local fine-tuning steps",
        "seeds": list(range(seed, seed + seeds)),
        "schedule": schedule,
        "momentum": momentum,
        "learning_rates": learning_rates,
        "tuning": {
            "grid": list(grid) if learning_rates == "tuned" else [],
            "validation_share": VALIDATION_SHARE,
            "tuned_on_seed": seed,
            "methods": tuning,
        },
        "accuracy": accuracy,
        "accuracy_std": spread,
        "accuracy_per_seed": per_seed,
        "improved_over_local": {k: float(np.mean(v)) for k, v in improved.items()},
        "chance": chance,
        "near_chance": near_chance,
        "paper": {k: v for k, v in PAPER[setting_name].items() if k in accuracy},
        "paper_std": {k: v for k, v in PAPER_STD[setting_name].items() if k in accuracy},
        "curves": {k: [r.curve for r in rs] for k, rs in runs.items() if rs[0].curve},
        "ifca_models_used": [len(set(r.assignment)) for r in runs.get("ifca", []) if r.assignment],
        "weights_match_oracle": None if not weights else [m is not None for m in match],
        "weights_match_round": match if weights else None,
        "weight_error": [weight_error(h[-1], clusters) for h in weights] if weights else None,
        "final_weights": weights[0][-1] if weights else None,
        "files": files,
    }
    result["claims"] = [c.to_dict() for c in claims(result)]
    return result


# --------------------------------------------------------------------------- rendering


def tables_markdown(result: dict[str, Any]) -> str:
    """The measured accuracies (mean ± std over seeds) next to Table 2, the learning-rate
    grid with every method's validation accuracy and choice, and the notes."""
    grid = result["tuning"]["grid"]
    lines = [
        f"**{result['setting']}**: {result['clients']} clients, seeds {result['seeds']}, "
        f"wall time {result.get('wall_s', '-')} s; "
        f"{result['budget']}; {result['schedule']} pair sampling, momentum "
        f"{result['momentum']}.",
        "",
    ]
    if grid:
        lines += [
            f"Learning rates: each method's best of {grid} by mean validation accuracy "
            f"({100 * result['tuning']['validation_share']:.0f}% of every client's training "
            f"data, held out), chosen on seed {result['tuning']['tuned_on_seed']} and reused "
            "for the other seeds.",
            "",
        ]
    else:
        lines += ['Learning rates: the paper\'s (appendix "Experimental Details").', ""]
    head = "| method | accuracy (%) | paper (%) | Imp. (%) | paper Imp. (%) | lr |"
    if grid:
        head += " validation acc. per lr |"
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for key in sorted(result["accuracy"], key=lambda k: -result["accuracy"][k]):
        paper = result["paper"].get(key)
        paper_cell = "-" if paper is None else f"{_pct(paper)} ± {_pct(result['paper_std'][key])}"
        imp = result["improved_over_local"].get(key)
        paper_imp = PAPER_IMPROVED[result["setting"]].get(key)
        row = [
            NAMES[key],
            _with_std(result, key),
            paper_cell,
            "-" if imp is None else f"{imp:.0f}",
            "-" if paper_imp is None else f"{paper_imp:.0f}",
            f"{result['tuning']['methods'][key]['chosen']:g}",
        ]
        if grid:
            scores = result["tuning"]["methods"][key]["grid"]
            row.append(", ".join(f"{float(lr):g}: {_pct(a)}" for lr, a in scores.items()))
        lines.append("| " + " | ".join(row) + " |")
    for key, why in result["near_chance"].items():
        lines += [
            "",
            f"{NAMES[key]} ends within 5 points of chance ({_pct(result['chance'])}%): {why}.",
        ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- reproduce


def reproduce(scale: str, out: Path, seeds: int | None = None) -> Reproduction:
    """The paper's cross-silo and cross-device experiments (Sections 4.1-4.2) at ``scale``.

    Parameters
    ----------
    scale : {"small", "paper"}
        "small": 300 rounds per setting; "paper": the paper's 40,000 (cross-silo) and 20,000
        (cross-device) iterations on the same ``mnist5k`` federations.
    out : Path
        Folder for the heatmaps of CoBo's weights.
    seeds : int, optional
        Seeds per setting (3 by default).

    Every method's learning rate is chosen on validation data of the first seed and reused
    (:func:`run_setting`); the methods train in parallel processes, one per core but one.
    """
    scale = choice("scale", scale, tuple(ROUNDS))
    seeds = positive_int("seeds", DEFAULT_SEEDS if seeds is None else seeds)
    from learning.device import resolve_device

    device = resolve_device(None)
    workers = max(1, min(len(METHODS), (os.cpu_count() or 1) - 1))
    results = {
        name: run_setting(
            name,
            rounds=ROUNDS[scale][name],
            seeds=seeds,
            out=Path(out),
            device=device,
            workers=workers,
        )
        for name in SETTINGS
    }
    all_claims = tuple(c for r in results.values() for c in claims(r))
    body = "\n".join(tables_markdown(r) for r in results.values())
    body += (
        "\nNot reproduced here: the sampling strategies of Table 1 (``collabecon cobo "
        "--schedule``), the ablations of Figure 3 and the language-model experiment "
        "(Section 4.3).\n"
    )
    figures = tuple(
        Path(f).name for r in results.values() for f in r["files"] if f.endswith(".png")
    )
    return Reproduction(
        name="cobo",
        title=f"{PAPER_REF}: cross-silo and cross-device (Table 2), {scale} scale",
        claims=all_claims,
        body=body,
        figures=figures,
        data={name: {k: v for k, v in r.items() if k != "claims"} for name, r in results.items()},
    )


def markdown(result: dict[str, Any]) -> str:
    """One setting's tables and claims as markdown."""
    rebuilt = [Claim(**c) for c in result["claims"]]
    return tables_markdown(result) + "\n" + claims_markdown(rebuilt)
