"""Figs. 2.4 and 2.5 of the thesis, reproduced: Federated-Clustering on CIFAR-10 and CIFAR-100.

Werner 2024, ch. 2 §2.4 ("CIFAR experiment"), Figs. 2.4 and 2.5.

The data is the user's copy of CIFAR in its python version, read from ``data_dir``
(:data:`NEEDS_DATA_DIR`); nothing is downloaded. Without ``data_dir`` the reproduction
refuses to run, and ``collabecon reproduce`` reports it as not run.

**Fig. 2.4, CIFAR-10** (``cifar10``, train and test batches pooled, a sixth of each client's
examples held out for its test set: 2,500 / 500 a client at 20 clients). Four clusters of
five clients on the private-label task (cluster ``k`` sees labels ``(y + k) mod 10``),
VGG-16 (:func:`learning.models.vgg16`), minibatches of 32, lr 0.1, heavy ball 0.9.

- *left*: Ditto (``as-run``, λ = 0.1, the authors' plotted run), FC, Global (FedSGD with each
  client's heavy ball), Local (plain SGD, no momentum, as in the authors' code), IFCA and
  GroundTruth (the oracle) take the same number of minibatch steps per client; FC is the
  authors' CIFAR run: ``as-run``, 10 Threshold-Clustering iterations, radius the 20th
  percentile, 2 random subgroups, 10 steps per clustering call;
- *middle*: FC at every radius percentile of the figure's legend (25, 20, 10, 5, 2.5);
- *right*: FC with 5, 10, 20 and 40 steps per clustering call.

Steps per clustering call ``s``: each round every client takes ``s - 1`` plain SGD steps on
its own model (no momentum; the authors' code also adds those gradients to the heavy-ball
buffer, this one does not) and then one Federated-Clustering step
(:class:`InterleavedClustering`).

**Fig. 2.5, CIFAR-100** (``cifar100``). Ten clusters of ten clients, cluster ``k`` holding the
ten classes ``10k .. 10k + 9`` (the ``pathological`` partition), iid within the cluster; the
thin VGG-8 (:func:`learning.models.vgg8`); Global against FC (radius the 10th percentile,
5 subgroups, 20 steps per clustering call); the same optimiser.

Not reproduced: the data augmentation of the authors' code (random crops and flips) and the
per-epoch re-split of the data; every method's accuracy is the mean over clients of their own
model on their own test data, evaluated :attr:`CifarScale.evals` times at the same steps for
every method.

``scale="paper"`` has the printed sizes (VGG-16, 60 epochs; VGG-8, 100 epochs); its
Federated-Clustering holds every pair of a subgroup's gradients (about 6 GB for VGG-16 in
groups of 10): a GPU. ``scale="small"`` is for a CPU: the thin VGG-8 on both data sets, a
tenth of CIFAR-100's clients per cluster (2 of 10) and a few epochs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from collabecon.reproductions.cifar_clustering_claims import (
    CLAIMS,
    DEFAULT_PERCENTILE,
    METHODS,
    NAMES,
    SOURCE,
    claims,
)
from econ.claims import Reproduction
from econ.validation import choice, positive_int

__all__ = [
    "CLAIMS",
    "NEEDS_DATA_DIR",
    "SCALES",
    "CifarScale",
    "InterleavedClustering",
    "figures",
    "measure",
    "report",
    "reproduce",
]

#: What ``data_dir`` must hold: the python versions of CIFAR-10 and CIFAR-100, unpacked.
NEEDS_DATA_DIR = (
    "cifar-10-batches-py/ (data_batch_1..5, test_batch) and cifar-100-python/ (train, test), "
    "the python versions of CIFAR-10 and CIFAR-100"
)

BATCH = 32
LR = 0.1
MOMENTUM = 0.9
#: Threshold-Clustering iterations per FC round (the authors' CIFAR runs)
TC_ITERS = 10
#: share of every client's examples held out as its test set (500 of 3,000 on CIFAR-10)
TEST_FRACTION = 1.0 / 6.0
#: λ of Ditto in the plotted CIFAR-10 run
DITTO_LAMBDA = 0.1
FIGURES = ("fig2_4.png", "fig2_5.png")


@dataclass(frozen=True, slots=True)
class CifarScale:
    """Sizes of one run of Figs. 2.4 and 2.5.

    CIFAR-10: ``model10``, 4 clusters of ``clients_per_cluster10`` clients, ``epochs10``
    epochs, FC in ``groups10`` subgroups with ``local_steps10`` steps per clustering call;
    the middle panel's radius ``percentiles`` and the right panel's ``step_counts``.
    CIFAR-100: ``model100``, 10 clusters of ``clients_per_cluster100`` clients,
    ``epochs100`` epochs, FC in ``groups100`` subgroups, ``local_steps100`` steps per call,
    radius percentile ``percentile100``. ``evals`` evaluations per run, ``seeds`` seeds by
    default.
    """

    model10: str
    clients_per_cluster10: int
    epochs10: float
    groups10: int
    local_steps10: int
    percentiles: tuple[float, ...]
    step_counts: tuple[int, ...]
    model100: str
    clients_per_cluster100: int
    epochs100: float
    groups100: int
    local_steps100: int
    percentile100: float
    evals: int
    seeds: int


SCALES = {
    "small": CifarScale(
        "vgg8", 5, 2.0, 2, 10, (25.0, 20.0, 10.0, 5.0, 2.5), (5, 10, 20, 40),
        "vgg8", 2, 2.0, 2, 20, 10.0, 6, 1,
    ),
    "paper": CifarScale(
        "vgg16", 5, 60.0, 2, 10, (25.0, 20.0, 10.0, 5.0, 2.5), (5, 10, 20, 40),
        "vgg8", 10, 100.0, 5, 20, 10.0, 12, 1,
    ),
}  # fmt: skip

# registry name and parameters of each method of the left panel (module docstring)
_ALGORITHMS: dict[str, tuple[str, dict[str, Any]]] = {
    "local": ("local", {}),
    "global": ("fedavg", {"keep_momentum": "client"}),
    "ditto": ("ditto", {"lam": DITTO_LAMBDA, "variant": "as-run"}),
    "ifca": ("ifca", {"option": "gradient", "momentum": MOMENTUM}),
    "oracle": ("oracle", {"keep_momentum": "group"}),
}


class InterleavedClustering:
    """Federated-Clustering called every ``steps`` minibatch steps, local SGD in between.

    One round: every participant takes ``steps - 1`` SGD steps on its own model with the
    context's local training (plain SGD here), then one round of ``fc``
    (:class:`learning.algorithms.federated_clustering.FederatedClustering`). With
    ``steps = 1`` it is ``fc``.

    References
    ----------
    Werner (2024), ch. 2 §2.4, Fig. 2.4 right: "the behavior of Federated-Clustering when the
    clustering oracle is invoked intermittently".
    """

    name = "federated-clustering-interleaved"

    def __init__(self, fc: Any, steps: int) -> None:
        self.fc = fc
        self.ctx = fc.ctx
        self.steps = positive_int("steps", steps)

    def init(self, models: Any, rng: np.random.Generator) -> Any:
        """FC's initial state."""
        return self.fc.init(models, rng)

    def round(
        self, state: Any, clients: np.ndarray, rng: np.random.Generator
    ) -> tuple[Any, dict[str, float]]:
        """``steps - 1`` local SGD steps of every participant, then one FC round."""
        import torch

        if self.steps > 1:
            idx = torch.as_tensor(np.asarray(clients), device=self.ctx.device)
            start = {k: v.index_select(0, idx) for k, v in state["models"].items()}
            trained = self.ctx.fit(start, clients, rng, steps=self.steps - 1)
            models = {
                k: v.clone().index_copy_(0, idx, trained.params[k])
                for k, v in state["models"].items()
            }
            state = {**state, "models": models}
        return self.fc.round(state, clients, rng)

    def client_models(self, state: Any) -> Any:
        """The clients' own models."""
        return self.fc.client_models(state)

    def finish(self, state: Any, rng: np.random.Generator) -> Any:
        """Nothing after the last round."""
        return state


@dataclass(frozen=True, slots=True)
class _Task:
    """One data set's clients: the built federation, the budget in steps, the evaluations."""

    built: Any
    steps: int
    every: int
    epoch_steps: float


def _task(
    dataset: str, sizes: CifarScale, seed: int, data_dir: str, step_counts: tuple[int, ...]
) -> _Task:
    from learning.build import build

    rng = np.random.default_rng(seed)
    data_rng, model_rng = rng.spawn(2)
    if dataset == "cifar10":
        partition, clients = "private-label", 4 * sizes.clients_per_cluster10
        params: dict[str, Any] = {"n_clusters": 4}
        model, epochs = sizes.model10, sizes.epochs10
    else:
        partition, clients = "pathological", 10 * sizes.clients_per_cluster100
        params = {"classes_per_client": 10}
        model, epochs = sizes.model100, sizes.epochs100
    built = build(
        dataset, partition, clients, model=model, data_rng=data_rng, model_rng=model_rng,
        device=None, data_dir=data_dir, require_data=True,
        federation_params={"test_fraction": TEST_FRACTION, **params},
    )  # fmt: skip
    epoch_steps = float(np.mean([c.n_train for c in built.federation.clients])) / BATCH
    unit = math.lcm(1, *step_counts)
    every = unit * max(1, math.ceil(epochs * epoch_steps / sizes.evals / unit))
    return _Task(built, every * sizes.evals, every, epoch_steps)


def _curve(
    task: _Task, method: str, seed: int, *, percentile: float = DEFAULT_PERCENTILE,
    groups: int = 1, steps: int = 1,
) -> list[float]:  # fmt: skip
    """Accuracy (%) of ``method`` at each of the task's evaluations."""
    from learning.algorithms import LocalTraining, build_algorithm
    from learning.loop import run_rounds
    from learning.optim import SGDConfig

    momentum = 0.0 if method in ("local", "fc") else MOMENTUM
    per_round = task.every if method == "local" else steps
    local = LocalTraining(per_round, BATCH, SGDConfig(LR, momentum=momentum))
    ctx = task.built.context(local)
    algorithm: Any
    if method == "fc":
        fc = build_algorithm(
            "federated-clustering", ctx, variant="as-run", iters=TC_ITERS,
            quantile=percentile / 100.0, groups=groups, momentum=MOMENTUM, batch_size=BATCH,
        )  # fmt: skip
        algorithm = InterleavedClustering(fc, steps)
    else:
        name, params = _ALGORITHMS[method]
        algorithm = build_algorithm(name, ctx, **params)
    rounds = task.steps // per_round
    result = run_rounds(
        algorithm, task.built.start(), rounds, seed, eval_every=task.every // per_round
    )
    return [100.0 * float(cast(float, r.test_accuracy)) for r in result.history]


def _summary(runs: list[list[float]]) -> dict[str, Any]:
    curves = np.asarray(runs)
    return {
        "curve": curves.mean(axis=0).tolist(),
        "runs": curves.tolist(),
        "final": curves[:, -1].tolist(),
    }


def _key(value: float) -> str:
    return f"{value:g}"


def measure(
    sizes: CifarScale,
    seeds: list[int],
    *,
    data_dir: str,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Every curve of Figs. 2.4 and 2.5 over ``seeds``.

    Returns ``{"cifar10": {"methods", "percentiles", "local_steps", "epochs", "steps"},
    "cifar100": {"methods", "epochs", "steps"}, "seeds", "sizes", "wall_s"}``: each run
    ``{curve, runs, final}``, the accuracy (%) at every evaluation (mean over seeds), per
    seed, and the final one per seed; ``epochs`` and ``steps`` where the evaluations are.
    ``progress`` is called with a short text as each run starts.
    """
    if not seeds:
        raise ValueError("seeds must name at least one seed, got none")
    started = time.perf_counter()
    fc10 = (DEFAULT_PERCENTILE, sizes.local_steps10)
    left: dict[str, list[list[float]]] = {m: [] for m in METHODS}
    by_percentile: dict[float, list[list[float]]] = {p: [] for p in sizes.percentiles}
    by_steps: dict[int, list[list[float]]] = {s: [] for s in sizes.step_counts}
    cifar100: dict[str, list[list[float]]] = {"global": [], "fc": []}
    for seed in seeds:
        task = _task("cifar10", sizes, seed, data_dir, (sizes.local_steps10, *sizes.step_counts))
        fc_runs: dict[tuple[float, int], list[float]] = {}

        def fc(
            percentile: float,
            steps: int,
            task: _Task = task,
            seed: int = seed,
            runs: dict[tuple[float, int], list[float]] = fc_runs,
        ) -> list[float]:
            if (percentile, steps) not in runs:
                progress(f"CIFAR-10, seed {seed}: FC, percentile {percentile:g}, {steps} steps")
                runs[percentile, steps] = _curve(
                    task, "fc", seed, percentile=percentile, groups=sizes.groups10, steps=steps
                )
            return runs[percentile, steps]

        for method in METHODS:
            if method == "fc":
                left[method].append(fc(*fc10))
                continue
            progress(f"CIFAR-10, seed {seed}: {NAMES[method]}")
            left[method].append(_curve(task, method, seed))
        for p in sizes.percentiles:
            by_percentile[p].append(fc(p, sizes.local_steps10))
        for s in sizes.step_counts:
            by_steps[s].append(fc(DEFAULT_PERCENTILE, s))
        task100 = _task("cifar100", sizes, seed, data_dir, (sizes.local_steps100,))
        progress(f"CIFAR-100, seed {seed}: Global")
        cifar100["global"].append(_curve(task100, "global", seed))
        progress(f"CIFAR-100, seed {seed}: FC")
        cifar100["fc"].append(
            _curve(
                task100, "fc", seed, percentile=sizes.percentile100, groups=sizes.groups100,
                steps=sizes.local_steps100,
            )
        )  # fmt: skip

    def where(t: _Task) -> dict[str, Any]:
        steps = [t.every * (k + 1) for k in range(sizes.evals)]
        return {"steps": steps, "epochs": [s / t.epoch_steps for s in steps]}

    return {
        "cifar10": {
            "methods": {m: _summary(r) for m, r in left.items()},
            "percentiles": {_key(p): _summary(r) for p, r in by_percentile.items()},
            "local_steps": {str(s): _summary(r) for s, r in by_steps.items()},
            **where(task),
        },
        "cifar100": {"methods": {m: _summary(r) for m, r in cifar100.items()}, **where(task100)},
        "seeds": list(seeds),
        "sizes": dataclasses.asdict(sizes),
        "wall_s": time.perf_counter() - started,
    }


def figures(measured: dict[str, Any], out: Path) -> None:
    """Fig. 2.4 (three panels) and Fig. 2.5 as ``fig2_4.png`` and ``fig2_5.png`` in ``out``.

    Accuracy (%) against epochs, the mean over seeds, as the thesis plots them.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    c10 = measured["cifar10"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8), sharey=True)
    panels = (
        ("Algo.", {NAMES[m]: c10["methods"][m] for m in METHODS}),
        ("τ (Percentile)", c10["percentiles"]),
        ("Local Steps", c10["local_steps"]),
    )
    for ax, (title, runs) in zip(axes, panels, strict=True):
        for label, run in runs.items():
            ax.plot(c10["epochs"], run["curve"], marker=".", label=label)
        ax.set_title(title)
        ax.set_xlabel("Epoch")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("Accuracy (%)")
    fig.tight_layout()
    fig.savefig(out / FIGURES[0], dpi=120)
    plt.close(fig)

    c100 = measured["cifar100"]
    fig, ax = plt.subplots(figsize=(5, 3.8))
    for method, run in c100["methods"].items():
        ax.plot(c100["epochs"], run["curve"], marker=".", label=NAMES[method])
    ax.set_xlabel("Epoch")
    ax.set_ylabel("Accuracy (%)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / FIGURES[1], dpi=120)
    plt.close(fig)


def _table(runs: dict[str, Any], label: str, names: Callable[[str], str]) -> list[str]:
    lines = [f"| {label} | final accuracy % | per seed |", "|---|---|---|"]
    for key, run in runs.items():
        per_seed = ", ".join(f"{v:.1f}" for v in run["final"])
        lines.append(f"| {names(key)} | {run['curve'][-1]:.1f} | {per_seed} |")
    return lines


def report(scale: str, measured: dict[str, Any], out: Path | None = None) -> Reproduction:
    """The :class:`econ.claims.Reproduction` of ``measured``, :func:`measure`'s result at ``scale``.

    Its figures, JSON and markdown are written into ``out`` when given.
    """
    s = measured["sizes"]
    c10, c100 = measured["cifar10"], measured["cifar100"]
    body = [
        f"Scale `{scale}`. CIFAR-10: 4 clusters of {s['clients_per_cluster10']} clients, "
        f"private labels, `{s['model10']}`, {c10['steps'][-1]} minibatch steps of {BATCH} "
        f"per client ({c10['epochs'][-1]:.3g} epochs), lr {LR}, heavy ball {MOMENTUM} (Local "
        f"and FC's local steps: none); FC with {TC_ITERS} Threshold-Clustering iterations, "
        f"{s['groups10']} subgroups, {s['local_steps10']} steps per clustering call, radius "
        f"the {DEFAULT_PERCENTILE:g}th percentile; Ditto λ = {DITTO_LAMBDA}. CIFAR-100: 10 "
        f"clusters of {s['clients_per_cluster100']} clients with 10 classes each, "
        f"`{s['model100']}`, {c100['steps'][-1]} steps ({c100['epochs'][-1]:.3g} epochs); "
        f"FC with {s['groups100']} subgroups, {s['local_steps100']} steps per call, the "
        f"{s['percentile100']:g}th percentile. {s['evals']} evaluations per run; seeds "
        f"{measured['seeds']}. Wall time {measured['wall_s']:.0f} s.",
        "",
        "Fig. 2.4 left (CIFAR-10):",
        "",
        *_table(c10["methods"], "method", lambda k: NAMES[k]),
        "",
        "Fig. 2.4 middle (FC, radius percentile):",
        "",
        *_table(c10["percentiles"], "percentile", str),
        "",
        "Fig. 2.4 right (FC, steps per clustering call):",
        "",
        *_table(c10["local_steps"], "steps", str),
        "",
        "Fig. 2.5 (CIFAR-100):",
        "",
        *_table(c100["methods"], "method", lambda k: NAMES[k]),
    ]
    rep = Reproduction(
        name="cifar_clustering",
        title=f"{SOURCE}, Figs. 2.4 and 2.5: Federated-Clustering on CIFAR-10 and CIFAR-100",
        claims=tuple(claims(measured)),
        body="\n".join(body),
        figures=FIGURES if out is not None else (),
        data={"scale": scale, **measured},
    )
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        figures(measured, out)
        (out / "cifar_clustering.json").write_text(
            json.dumps(rep.to_dict(), indent=1, allow_nan=False)
        )
        (out / "cifar_clustering.md").write_text(rep.markdown())
    return rep


def reproduce(
    scale: str,
    out: Path | None,
    seeds: int | None = None,
    *,
    data_dir: str | None = None,
    sizes: CifarScale | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Reproduction:
    """Figs. 2.4 and 2.5 at ``scale`` over ``seeds`` seeds (0, 1, ...; the scale's default).

    ``sizes`` replaces the sizes of ``scale`` (the scale's name is still reported). Writes
    ``fig2_4.png``, ``fig2_5.png``, ``cifar_clustering.json`` and ``cifar_clustering.md``
    into ``out`` when given.

    Raises
    ------
    ValueError
        Unknown scale; ``seeds`` not a positive integer; no ``data_dir``.
    learning.data_files.MissingDataError
        A CIFAR file is not in ``data_dir``.
    """
    choice("scale", scale, tuple(SCALES))
    if data_dir is None:
        raise ValueError(f"needs --data-dir (data_dir): a directory holding {NEEDS_DATA_DIR}")
    chosen = SCALES[scale] if sizes is None else sizes
    n_seeds = chosen.seeds if seeds is None else positive_int("seeds", seeds)
    measured = measure(chosen, list(range(n_seeds)), data_dir=data_dir, progress=progress)
    return report(scale, measured, out)
