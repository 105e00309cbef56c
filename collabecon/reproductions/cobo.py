r"""CoBo's collaboration weights against the baselines, on small CPU analogues.

The cross-silo and cross-device experiments of Hashemi, He and Jaggi 2024 ("CoBo:
Collaborative Learning via Bilevel Optimization", NeurIPS 2024; Sections 4.1-4.2, Tables 1
and 2, Figures 3, 5, 6, 8 and 9), as small CPU analogues on the embedded ``mnist5k`` digits
with an MLP (784-200-10):

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
  2% of the rounds, the code's 800 of 40,000 iterations, then 1/sqrt(t)), where Section 4.1
  of the paper says the first 0.2% of the iterations and then O(1/t), midpoint
  gradients on minibatches of 128, and gamma = 0.1 instead of the code's 0.01: with this
  smaller model the midpoint inner products are small and gamma = 0.01 leaves W at 1 for
  the whole run (a pair sampled about ln T times needs a larger step to leave 1).

Table 1 (:func:`run_sampling`) runs CoBo on the cross-silo federation under each pair-sampling
strategy: constant :math:`2/n` per pair, time-decaying (the law of the mixed schedule below,
:math:`1/\sqrt{t}`, for the paper's :math:`O(1/t)`), mixed, and every pair every round (the
paper's non-sampling oracle). Figure 3 (:func:`run_ablation`) runs CoBo on the cross-silo
federation with each cluster given a fraction of the data set, with more or fewer clusters of
2, and with more clients per cluster (:data:`~collabecon.reproductions.cobo_methods.ABLATIONS`;
the figure prints no values); :func:`reproduce` includes it at the paper scale. Every strategy
and every federation gets its own learning rate from the grid and the same budget.

The methods and settings are :mod:`collabecon.reproductions.cobo_methods`; the result of a
setting and its tables :mod:`collabecon.reproductions.cobo_results`. Every claim the paper makes
about these two experiments is a row of :data:`collabecon.reproductions.cobo_claims.CLAIMS`,
judged on the mean over seeds.
"""

from __future__ import annotations

import dataclasses
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
    PAPER_REF,
    PAPER_SAMPLING,
    claims,
)
from collabecon.reproductions.cobo_methods import (
    ABLATION_SETTINGS,
    ABLATIONS,
    BATCH,
    CODE_MOMENTUM,
    CODE_PARAMETERS,
    DITTO_K,
    LEARNING_RATES,
    LR_GRID,
    METHODS,
    MODEL,
    MOMENTUM_MODES,
    SETTINGS,
    VALIDATION_SHARE,
    Setting,
    check_methods,
    finetune_steps,
    method_parameters,
)
from collabecon.reproductions.cobo_results import (
    MethodRuns,
    TrainingRun,
    ablation_markdown,
    sampling_markdown,
    summarise,
    summarise_ablation,
    summarise_sampling,
    tables_markdown,
)
from collabecon.reproductions.cobo_sampling_claims import ABLATION_CLAIMS, SAMPLING_CLAIMS
from econ.claims import Reproduction, evaluate
from econ.validation import choice, positive_int
from learning.algorithms import Algorithm, Context, LocalTraining, build_algorithm
from learning.algorithms.exchanges import State
from learning.build import build
from learning.engine import Params, ShardedData
from learning.loop import run_rounds
from learning.optim import SGDConfig

__all__ = [
    "ABLATIONS",
    "ABLATION_CLAIMS",
    "CLAIMS",
    "LR_GRID",
    "METHODS",
    "MOMENTUM_MODES",
    "SAMPLING",
    "SAMPLING_CLAIMS",
    "SETTINGS",
    "check_methods",
    "claims",
    "reproduce",
    "run_ablation",
    "run_method",
    "run_sampling",
    "run_setting",
    "tables_markdown",
]

#: Rounds of each scale: the small CPU analogue and the paper's iterations.
ROUNDS = {
    "small": {"cross-silo": 300, "cross-device": 300},
    "paper": {"cross-silo": 40_000, "cross-device": 20_000},
}
DEFAULT_SEEDS = 3
#: The pair-sampling strategies of Table 1, in its order.
SAMPLING = tuple(PAPER_SAMPLING)


#: Method key -> the entry of its state recorded after every round: CoBo's collaboration
#: weights, Federated-Clustering's clusters (Figure 6).
_RECORDED = {"cobo": "weights", "fc": "members"}


class _Recorder(Algorithm):
    """A method as it is, keeping a copy of one entry of its state after every round."""

    name = "recorded"

    def __init__(self, inner: Algorithm, entry: str) -> None:
        super().__init__(inner.ctx)
        self.inner = inner
        self.entry = entry
        self.history: list[np.ndarray] = []

    def init(self, models: Params, rng: np.random.Generator) -> State:
        return self.inner.init(models, rng)

    def round(
        self, state: State, clients: np.ndarray, rng: np.random.Generator
    ) -> tuple[State, dict[str, float]]:
        state, metrics = self.inner.round(state, clients, rng)
        self.history.append(state[self.entry].detach().cpu().numpy().astype(float))
        return state, metrics

    def client_models(self, state: State) -> Params:
        return self.inner.client_models(state)


@dataclass(frozen=True, slots=True)
class _Data:
    """One seed's federation.

    Training data (validation removed), validation and test data, the initial models and the
    true clusters.
    """

    base: Context
    validation: ShardedData
    initial: Params


def _federation(setting: Setting, seed: int, device: torch.device) -> _Data:
    """The federation of ``setting`` for ``seed``.

    Every client's training examples are split into training and validation
    (:data:`VALIDATION_SHARE`, at random); one initial model.
    """
    rng = np.random.default_rng(seed)
    data_rng, model_rng, split_rng = rng.spawn(3)
    modulus = setting.label_modulus or 0
    built = build(
        "mnist5k", setting.partition, setting.clients, model=MODEL, data_rng=data_rng,
        model_rng=model_rng, device=device,
        labels=(lambda y: y % modulus) if modulus else None,
        federation_params=setting.partition_params,
    )  # fmt: skip
    train, validation = built.split_validation(VALIDATION_SHARE, split_rng)
    base = built.context(LocalTraining(1, BATCH, SGDConfig(LEARNING_RATES["local"])), train=train)
    initial = built.start(setting.clients)
    return _Data(base, validation, initial)


def _train(
    key: str,
    setting: Setting,
    data: _Data,
    *,
    lr: float,
    rounds: int,
    seed: int,
    schedule: str,
    momentum: str,
) -> TrainingRun:
    """Train method ``key`` for ``rounds`` rounds at learning rate ``lr``."""
    code = momentum == "code" and key in CODE_PARAMETERS
    sgd = CODE_MOMENTUM if code else SGDConfig(1.0)
    local = LocalTraining(1, BATCH, dataclasses.replace(sgd, lr=lr))
    ctx = dataclasses.replace(data.base, local=local)
    algorithm = build_algorithm(
        METHODS[key][0], ctx, **method_parameters(key, rounds, schedule, momentum)
    )
    if key in _RECORDED:
        algorithm = _Recorder(algorithm, _RECORDED[key])
    per_round = None
    if key == "ifca" and setting.ifca_share < 1.0:
        per_round = max(1, round(setting.ifca_share * ctx.n_clients))
    elif key == "ditto" and code:
        per_round = DITTO_K
    steps = rounds - finetune_steps(rounds) if key == "fedavg-ft" else rounds
    result = run_rounds(
        algorithm,
        data.initial,
        steps,
        seed,
        clients_per_round=per_round,
        eval_every=max(1, steps // CURVE_POINTS),
    )
    assert result.evaluation.accuracy is not None
    validation = ctx.engine.evaluate(result.models, data.validation).accuracy
    assert validation is not None
    points = [
        (r.round, float(r.test_accuracy)) for r in result.history if r.test_accuracy is not None
    ]
    history = algorithm.history if isinstance(algorithm, _Recorder) else []
    assignment = None
    if key == "ifca":
        assignment = [int(a) for a in result.state["assignment"].cpu().numpy()]
    return TrainingRun(
        test=np.asarray(result.evaluation.accuracy, dtype=float),
        loss=np.asarray(result.evaluation.loss, dtype=float),
        validation=np.asarray(validation, dtype=float),
        curve=points,
        weights=history if key == "cobo" else [],
        assignment=assignment,
        members=history if key == "fc" else [],
    )


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
    """Train every method of ``methods`` on the setting ``setting_name`` and report.

    Every method runs for ``seeds`` seeds (``seed``, ``seed + 1``, ...) with the same budget;
    the report holds mean test accuracies, their spread over seeds, CoBo's weight recovery
    and every claim of the paper (:func:`claims`).

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
    jobs: dict[str, tuple[str, str, dict[str, Any]]] = {k: (setting_name, k, {}) for k in methods}
    runs = _run_methods(jobs, options, workers, progress)
    result = summarise(runs, out=out)
    result["device"] = str(device)
    result["workers"] = workers
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def _run_methods(
    jobs: dict[str, tuple[str, str, dict[str, Any]]],
    options: dict[str, Any],
    workers: int,
    progress: Callable[[str], None],
) -> dict[str, MethodRuns]:
    """:func:`run_method` for every job (name -> setting, method, its own options).

    With ``workers > 1`` the jobs run at once, each in its own process with its share of this
    process's torch threads (:func:`learning.threads.worker_share`).
    """
    if workers == 1 or len(jobs) == 1:
        return {
            name: run_method(setting, key, progress=progress, **options, **own)
            for name, (setting, key, own) in jobs.items()
        }
    from concurrent.futures import as_completed

    from learning.threads import worker_pool

    options = dict(options, device=str(options["device"]))
    with worker_pool(min(workers, len(jobs))) as pool:
        futures = {
            pool.submit(run_method, setting, key, **options, **own): name
            for name, (setting, key, own) in jobs.items()
        }
        for future in as_completed(futures):
            if future.exception() is None:
                progress(f"{futures[future]}: finished")
        done = {name: f.result() for f, name in futures.items()}
    return {name: done[name] for name in jobs}


def run_sampling(
    *,
    rounds: int,
    seed: int = 0,
    seeds: int = 1,
    schedules: Sequence[str] = SAMPLING,
    momentum: str = "none",
    learning_rates: str = "tuned",
    grid: Sequence[float] = LR_GRID,
    progress: Callable[[str], None] = lambda _: None,
    device: torch.device | str = "cpu",
    workers: int = 1,
) -> dict[str, Any]:
    """CoBo on the cross-silo federation under each pair-sampling strategy (Table 1).

    Every strategy is CoBo with its own learning rate from ``grid`` (chosen on validation data,
    :func:`run_method`) and the same budget; only the schedule differs: ``constant``
    (:math:`2/n` per pair), ``time`` (the decaying law of :data:`METHODS`' CoBo from the first
    round), ``mixed`` (constant for the first 2% of the rounds, then decaying) and ``all``
    (every pair every round, the paper's non-sampling oracle). The result holds mean accuracy
    and loss per strategy, their spread over seeds and Table 1's claims
    (:func:`collabecon.reproductions.cobo_sampling_claims.sampling_claims`). Parameters as in
    :func:`run_setting`.
    """
    workers = positive_int("workers", workers)
    for name in schedules:
        choice("schedule", name, tuple(PAPER_SAMPLING))
    options: dict[str, Any] = dict(
        rounds=rounds,
        seed=seed,
        seeds=seeds,
        momentum=momentum,
        learning_rates=learning_rates,
        grid=grid,
        device=device,
    )
    started = time.perf_counter()
    jobs = {name: ("cross-silo", "cobo", {"schedule": name}) for name in schedules}
    result = summarise_sampling(_run_methods(jobs, options, workers, progress))
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def run_ablation(
    *,
    rounds: int,
    seed: int = 0,
    seeds: int = 1,
    factors: Sequence[str] = tuple(ABLATIONS),
    momentum: str = "none",
    learning_rates: str = "tuned",
    grid: Sequence[float] = LR_GRID,
    progress: Callable[[str], None] = lambda _: None,
    device: torch.device | str = "cpu",
    workers: int = 1,
) -> dict[str, Any]:
    """CoBo along the factors of Figure 3 on the cross-silo federation.

    For every value of every factor of ``factors``
    (:data:`~collabecon.reproductions.cobo_methods.ABLATIONS`: the fraction of the data set
    each cluster gets, the number of clusters, the clients per cluster), CoBo with its own
    learning rate from ``grid`` (chosen on that federation's validation data) and the same
    budget. The result holds CoBo's accuracy and loss along each factor and the claims of
    Figure 3 (:data:`~collabecon.reproductions.cobo_sampling_claims.ABLATION_CLAIMS`). Parameters as
    in :func:`run_setting`.
    """
    workers = positive_int("workers", workers)
    for factor in factors:
        choice("factor", factor, tuple(ABLATIONS))
    options: dict[str, Any] = dict(
        rounds=rounds,
        seed=seed,
        seeds=seeds,
        momentum=momentum,
        learning_rates=learning_rates,
        grid=grid,
        device=device,
    )
    started = time.perf_counter()
    jobs: dict[str, tuple[str, str, dict[str, Any]]] = {
        name: (name, "cobo", {})
        for name in ABLATION_SETTINGS
        if name.split("/")[1].split("=")[0] in factors
    }
    result = summarise_ablation(_run_methods(jobs, options, workers, progress))
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


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
    """Method ``key`` on ``setting_name``: its learning rate, then its runs on the other seeds.

    ``setting_name`` is one of :data:`SETTINGS` or of
    :data:`~collabecon.reproductions.cobo_methods.ABLATION_SETTINGS` (Figure 3).

    The learning rate is the best of ``grid`` by mean validation accuracy on seed ``seed``,
    or the paper's. Parameters as in :func:`run_setting`; ``progress`` is called with a short
    text before each training run.
    """
    federations = {**SETTINGS, **ABLATION_SETTINGS}
    setting_name = choice("setting", setting_name, tuple(federations))
    momentum = choice("momentum", momentum, MOMENTUM_MODES)
    learning_rates = choice("learning_rates", learning_rates, ("tuned", "paper"))
    rounds = positive_int("rounds", rounds)
    seeds = positive_int("seeds", seeds)
    grid = tuple(float(lr) for lr in grid)
    if not grid or any(not (math.isfinite(lr) and lr > 0) for lr in grid):
        raise ValueError(f"lr_grid must be learning rates > 0, got {list(grid)}")
    (key,) = check_methods([key])
    setting = federations[setting_name]
    device = torch.device(device)
    common: dict[str, Any] = dict(rounds=rounds, schedule=schedule, momentum=momentum)

    def train(data: _Data, lr: float, s: int, why: str) -> TrainingRun:
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


def reproduce(scale: str, out: Path, seeds: int | None = None) -> Reproduction:
    """The paper's cross-silo and cross-device experiments and Table 1 at ``scale``.

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
    Table 1's sampling strategies run on the cross-silo federation with its rounds
    (:func:`run_sampling`); at the paper scale also Figure 3's ablation (:func:`run_ablation`).
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
    sampling = run_sampling(
        rounds=ROUNDS[scale]["cross-silo"], seeds=seeds, device=device, workers=workers
    )
    all_claims = tuple(c for r in results.values() for c in claims(r))
    all_claims += tuple(evaluate(SAMPLING_CLAIMS, sampling))
    body = "\n".join(tables_markdown(r) for r in results.values())
    body += "\n" + sampling_markdown(sampling)
    extra = {"sampling": sampling}
    if scale == "paper":
        ablation = run_ablation(
            rounds=ROUNDS[scale]["cross-silo"], seeds=seeds, device=device, workers=workers
        )
        all_claims += tuple(evaluate(ABLATION_CLAIMS, ablation))
        body += "\n" + ablation_markdown(ablation)
        extra["ablation"] = ablation
    else:
        body += "\nFigure 3's ablation runs at the paper scale only (`run_ablation`).\n"
    body += "\nNot reproduced here: the language-model experiment (Section 4.3).\n"
    figures = tuple(
        Path(f).name for r in results.values() for f in r["files"] if f.endswith(".png")
    )
    return Reproduction(
        name="cobo",
        title=f"{PAPER_REF}: cross-silo and cross-device (Tables 1 and 2), {scale} scale",
        claims=all_claims,
        body=body,
        figures=figures,
        data={
            name: {k: v for k, v in r.items() if k != "claims"}
            for name, r in {**results, **extra}.items()
        },
    )
