"""Table 1 of the clustering paper, reproduced: the MNIST rotation and private-label tasks.

Werner et al. 2023, Table 1 and §4.2; Werner 2024, Table 2.1.

Seven methods (Local, Global = FedAvg, Ditto, IFCA, kNN-Per, Federated-Clustering, the
ground-truth Oracle) on clients in 4 clusters: the rotation task (cluster ``k`` sees the
images turned by ``k * 90`` degrees) and the private-label task (labels ``(y + k) mod 10``),
the 784-200-10 MLP. Accuracy is the sample-weighted mean of every client's own model on its
own test data.

Budget. Every method takes the same number of minibatch SGD steps per client,
``epochs x batches`` steps on minibatches of 32:

- Global (FedSGD with each client's heavy ball, ``keep_momentum="client"``), the Oracle (the
  same within each true cluster), IFCA (option I with the clients' buffers) and Ditto (its
  ``as-run`` variant: the global model driven by gradients at the personal models)
  communicate after every step, ``epochs x batches`` rounds of one step, heavy ball 0.9;
- Local trains alone, ``batches`` steps per round for ``epochs`` rounds, without momentum
  (the authors' published code for Table 1); kNN-Per trains FedAvg the same way with a
  fresh local optimiser each round and mixes in its kNN memory at test time;
- Federated-Clustering (``as-run``: heavy ball 0.9 on the cluster estimate, radius
  ``0.99 d_(qN)`` with q = 0.2, 3 Threshold-Clustering iterations, random subgroups) takes
  ``epochs x batches`` rounds of one step on a minibatch of 32. The authors' code gave FC a
  different budget (50 full-batch rounds against the baselines' 30 x 7 minibatch steps);
  here every method gets the same one.

Learning rates. Each method gets its own learning rate from :data:`LR_GRID`, the one with
the best validation accuracy; the validation set is :data:`VALIDATION_FRACTION` of every
client's training data, held out before training (the test data never choose anything).
All methods then train on the remaining training data; the test accuracy reported is that of
the run at the chosen rate. With ``tune="first"`` the rates are chosen on the first seed and
reused on the others (the output says which).

Claims: the text of §4.2 and every pairwise ordering of Table 1's published accuracies,
judged on the mean over seeds (:mod:`collabecon.reproductions.clustered_mnist_claims`).

``scale="small"`` runs 20 clients of ``mnist5k`` (5 per cluster) on CPU: 3 seeds with the rates
tuned on the first take about 27 CPU minutes (70 training runs, FC's all-pairs gradients the
bulk of them);
``scale="paper"`` the paper's 300 clients of the full MNIST (``data_dir``), 30 epochs of 7
minibatches, FC in 15 random groups of 20 (the published code's ``fc-grad-3-quantile0.2-15``;
the paper's §4.2 says 16 subgroups).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from collabecon.reproductions.clustered_mnist_claims import (
    CLAIMS,
    METHODS,
    NAMES,
    PAPER,
    SOURCE,
    TASK_NAMES,
    chance_note,
    claims,
)
from econ.claims import Reproduction
from econ.validation import choice, positive_int

__all__ = [
    "CLAIMS",
    "LR_GRID",
    "METHODS",
    "NAMES",
    "PAPER",
    "SCALES",
    "TASKS",
    "TASK_NAMES",
    "Table1Scale",
    "TaskClients",
    "claims",
    "clients",
    "measure",
    "methods_markdown",
    "report",
    "reproduce",
    "train_method",
]

#: task key -> partition view of :func:`learning.federation.make_federation`
TASKS = {"rotation": "rotation", "private_label": "private-label"}
#: learning rates each method chooses from, on validation data
LR_GRID = (0.03, 0.1, 0.3)
#: share of every client's training data held out to choose the learning rate
VALIDATION_FRACTION = 0.2
BATCH = 32


@dataclass(frozen=True, slots=True)
class Table1Scale:
    """Sizes of one Table 1 run.

    ``epochs`` epochs of ``batches`` minibatch steps (the budget of every method),
    ``fc_groups`` random subgroups for FC, ``seeds`` seeds by default and ``tune`` where the
    learning rates are chosen: ``"each"`` seed, or the ``"first"`` seed for all.
    """

    dataset: str
    clients: int
    epochs: int
    batches: int
    fc_groups: int
    seeds: int
    tune: str = "each"

    @property
    def steps(self) -> int:
        """Minibatch steps per client, the same for every method."""
        return self.epochs * self.batches


SCALES = {
    "small": Table1Scale("mnist5k", 20, 10, 5, 1, 3, "first"),
    "paper": Table1Scale("mnist", 300, 30, 7, 15, 3, "first"),
}

# registry name and parameters of each method (module docstring)
_ALGORITHMS: dict[str, tuple[str, dict[str, Any]]] = {
    "local": ("local", {}),
    "global": ("fedavg", {"keep_momentum": "client"}),
    "ditto": ("ditto", {"lam": 1.0, "variant": "as-run"}),
    "ifca": ("ifca", {"option": "gradient", "momentum": 0.9}),
    "knn": ("knn-per", {}),
    "fc": ("federated-clustering", {"variant": "as-run", "iters": 3, "quantile": 0.2}),
    "oracle": ("oracle", {"keep_momentum": "group"}),
}

#: Methods that communicate after every minibatch step (one-step rounds).
STEP_PER_ROUND = ("global", "ditto", "ifca", "oracle", "fc")


@dataclass(frozen=True, slots=True)
class TaskClients:
    """One task's clients for one seed: training context, validation data and initial model.

    The training context has ``ctx.train`` without the validation data and ``ctx.test`` the
    test data.
    """

    ctx: Any
    validation: Any
    model: Any


def clients(
    task: str, scale: Table1Scale, seed: int, data_dir: str | None = None, *, model: str = "mlp"
) -> TaskClients:
    """The clients of ``task`` at ``seed``, on the GPU when one is present.

    Data, partition, validation split and model all derive from ``seed``. ``model`` is the
    network of :data:`learning.models.MODELS` (Table 1's 784-200-10 MLP by default).
    """
    from learning.algorithms import LocalTraining
    from learning.build import build
    from learning.optim import SGDConfig

    choice("task", task, tuple(TASKS))
    rng = np.random.default_rng(seed)
    data_rng, model_rng, split_rng = rng.spawn(3)
    built = build(
        scale.dataset, TASKS[task], scale.clients, model=model, data_rng=data_rng,
        model_rng=model_rng, device=None, data_dir=data_dir, federation_params={"n_clusters": 4},
    )  # fmt: skip
    train, validation = built.split_validation(VALIDATION_FRACTION, split_rng)
    ctx = built.context(
        LocalTraining(scale.batches, BATCH, SGDConfig(0.1, momentum=0.9)), train=train
    )
    return TaskClients(ctx, validation, built.model)


def _weighted(evaluation: Any) -> float:
    return float(100 * np.average(evaluation.accuracy, weights=evaluation.n))


def train_method(
    method: str, data: TaskClients, scale: Table1Scale, lr: float, seed: int
) -> tuple[float, float]:
    """Train ``method`` at learning rate ``lr`` on ``data`` with the budget of ``scale``.

    Returns its (validation, test) accuracy in %, sample-weighted over the clients.
    """
    from learning.algorithms import LocalTraining, build_algorithm
    from learning.algorithms.knn_per import KNNPer
    from learning.engine import broadcast, parameters_of
    from learning.loop import run_rounds
    from learning.optim import SGDConfig

    choice("method", method, METHODS)
    name, params = _ALGORITHMS[method]
    ctx = data.ctx
    momentum = 0.0 if method == "local" else 0.9  # the authors' Local uses no momentum
    local = LocalTraining(scale.batches, BATCH, SGDConfig(lr, momentum=momentum))
    rounds = scale.epochs
    if method in STEP_PER_ROUND:
        local = dataclasses.replace(local, steps=1)
        rounds = scale.steps
    ctx = dataclasses.replace(ctx, local=local)
    if method == "fc":
        params = {**params, "groups": scale.fc_groups, "batch_size": BATCH}
    algorithm = build_algorithm(name, ctx, **params)
    start = broadcast(
        {k: v.to(ctx.device) for k, v in parameters_of(data.model).items()}, ctx.n_clients
    )
    result = run_rounds(algorithm, start, rounds, seed, eval_every=rounds)
    if isinstance(algorithm, KNNPer):  # the kNN memory and the mixture weight enter at test time
        test, _ = algorithm.evaluate(result.state, np.random.default_rng(seed))
        on_validation = KNNPer(dataclasses.replace(ctx, test=data.validation), **params)
        val, _ = on_validation.evaluate(result.state, np.random.default_rng(seed))
    else:
        test = result.evaluation
        val = ctx.engine.evaluate(result.models, data.validation)
    return _weighted(val), _weighted(test)


def measure(
    scale: Table1Scale,
    seeds: list[int],
    *,
    methods: tuple[str, ...] = METHODS,
    tasks: tuple[str, ...] = tuple(TASKS),
    grid: tuple[float, ...] | None = None,
    data_dir: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Every method's validation and test accuracy on every task and seed.

    Each method's learning rate is chosen from ``grid`` on validation accuracy (on each seed,
    or on the first seed and reused, as ``scale.tune`` says); ``grid`` is :data:`LR_GRID`
    when None. ``progress`` is called with a short text as each method starts on a task and
    seed (``len(tasks) * len(seeds) * len(methods)`` calls).

    Returns ``{"tasks": {task: {method: {paper, test, mean, std, lr, validation, note}}},
    "seeds", "grid", "tune", "wall_s"}``; ``test`` has one accuracy per seed, ``lr`` the
    chosen rate per seed, ``validation`` the validation accuracy per grid rate and seed
    (``None`` where the rate was not tried on that seed).
    """
    if not seeds:
        raise ValueError("seeds must name at least one seed, got none")
    choice("tune", scale.tune, ("each", "first"))
    grid = LR_GRID if grid is None else tuple(grid)
    started = time.perf_counter()
    out: dict[str, Any] = {}
    for task in tasks:
        per: dict[str, Any] = {
            m: {"test": [], "lr": [], "validation": {str(lr): [] for lr in grid}} for m in methods
        }
        chosen: dict[str, float] = {}
        for k, seed in enumerate(seeds):
            data = clients(task, scale, seed, data_dir)
            for method in methods:
                rates = grid if (scale.tune == "each" or k == 0) else (chosen[method],)
                tried = f"{len(rates)} learning rates" if len(rates) > 1 else f"lr {rates[0]:g}"
                progress(f"{TASK_NAMES[task]}, seed {seed}: {NAMES[method]} ({tried})")
                runs = {lr: train_method(method, data, scale, lr, seed) for lr in rates}
                best = max(rates, key=lambda lr: (runs[lr][0], -lr))
                if k == 0:
                    chosen[method] = best
                for lr in grid:
                    per[method]["validation"][str(lr)].append(runs[lr][0] if lr in runs else None)
                per[method]["lr"].append(best)
                per[method]["test"].append(runs[best][1])
        for method in methods:
            row = per[method]
            test = np.asarray(row["test"])
            row["paper"] = PAPER[task][method]
            row["mean"] = float(test.mean())
            row["std"] = float(test.std(ddof=1)) if test.size > 1 else float("nan")
            row["note"] = chance_note(task, method, row["mean"])
        out[task] = per
    return {
        "tasks": out,
        "seeds": list(seeds),
        "grid": list(grid),
        "tune": scale.tune,
        "steps": scale.steps,
        "sizes": dataclasses.asdict(scale),
        "wall_s": time.perf_counter() - started,
    }


def methods_markdown(measured: dict[str, Any]) -> str:
    """Every method's accuracy next to the paper's, per task, as a markdown table.

    The accuracy is the mean and std over seeds, shown with the learning rate it chose.
    """
    tasks = list(measured["tasks"])
    header = ["method"]
    for task in tasks:
        header += [f"{TASK_NAMES[task]} % (mean ± std)", "paper", "lr chosen"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for method in METHODS:
        cells = [NAMES[method]]
        for task in tasks:
            row = measured["tasks"][task][method]
            cells += [
                f"{row['mean']:.1f} ± {row['std']:.1f}",
                f"{row['paper']:.1f}",
                ", ".join(f"{lr:g}" for lr in row["lr"]),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _settings(scale_name: str, measured: dict[str, Any]) -> str:
    scale = Table1Scale(**measured["sizes"])
    tune = (
        "on each seed"
        if measured["tune"] == "each"
        else "on the first seed and reused on the others"
    )
    return (
        f"Scale `{scale_name}`: {scale.clients} clients of `{scale.dataset}` in 4 clusters, "
        f"every method {measured['steps']} minibatch steps of {BATCH} per client "
        f"({scale.epochs} epochs x {scale.batches} batches), seeds {measured['seeds']}. "
        f"Learning rate of each method chosen from {measured['grid']} {tune}, on the "
        f"validation accuracy ({VALIDATION_FRACTION:.0%} of each client's training data, held "
        f"out; never the test data). Wall time {measured['wall_s']:.0f} s."
    )


def _notes(measured: dict[str, Any]) -> list[str]:
    return [
        f"{NAMES[m]}, {TASK_NAMES[t]}: {row['note']}"
        for t, rows in measured["tasks"].items()
        for m, row in rows.items()
        if row["note"]
    ]


def reproduce(
    scale: str,
    out: Path | None,
    seeds: int | None = None,
    *,
    first_seed: int = 0,
    data_dir: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Reproduction:
    """Table 1 at ``scale`` over ``seeds`` seeds.

    The seeds are ``first_seed``, ``first_seed + 1``, ... (the scale's default number when
    None); writes ``table1.json`` and ``table1.md`` into ``out`` when given. ``progress`` is
    :func:`measure`'s.

    Raises
    ------
    ValueError
        Unknown scale; ``seeds`` not a positive integer; ``first_seed`` negative;
        ``scale="paper"`` without ``data_dir`` (the full MNIST).
    """
    choice("scale", scale, tuple(SCALES))
    sizes = SCALES[scale]
    n_seeds = sizes.seeds if seeds is None else positive_int("seeds", seeds)
    if isinstance(first_seed, bool) or not isinstance(first_seed, (int, np.integer)):
        raise ValueError(f"first_seed must be an integer >= 0, got {first_seed!r}")
    if first_seed < 0:
        raise ValueError(f"first_seed must be an integer >= 0, got {first_seed}")
    if scale == "paper" and data_dir is None:
        raise ValueError("scale 'paper' needs the full MNIST: pass data_dir (--data-dir)")
    seeds_run = [first_seed + k for k in range(n_seeds)]
    measured = measure(sizes, seeds_run, data_dir=data_dir, progress=progress)
    return report(scale, measured, out)


def report(scale: str, measured: dict[str, Any], out: Path | None = None) -> Reproduction:
    """The :class:`econ.claims.Reproduction` of ``measured``, written into ``out`` when given.

    ``measured`` is :func:`measure`'s result at ``scale``.
    """
    body = [_settings(scale, measured), "", methods_markdown(measured)]
    notes = _notes(measured)
    if notes:
        body += ["", "Near chance:", *(f"- {n}" for n in notes)]
    body += [
        "",
        "Only accuracies are compared: our loss is cross-entropy, the authors' code reports "
        "1 - E p_y.",
    ]
    data = {"scale": scale, **measured, "paper": PAPER}
    rep = Reproduction(
        name="table1",
        title=f"{SOURCE}, Table 1: MNIST rotation and private-label tasks",
        claims=tuple(claims(measured)),
        body="\n".join(body),
        data=data,
    )
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "table1.json").write_text(json.dumps(rep.to_dict(), indent=1, allow_nan=False))
        (out / "table1.md").write_text(rep.markdown())
    return rep
