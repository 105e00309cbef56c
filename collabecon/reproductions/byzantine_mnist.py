r"""Figure 2.6 of Werner 2024, reproduced: Federated-Clustering and Global under Byzantine attacks.

FC and Global (FedAvg) on the MNIST private-label task under Byzantine attacks (Werner 2024,
§2.4, "Defense against Byzantine attacks").

The thesis' setting: the private-label task (cluster ``k`` sees the labels ``(y + k) mod
10``), "4 clusters with 50 non-malicious clients each" and "50 Byzantine workers" added to each
cluster, who send "either very large gradients or gradients with opposite signs". The
attacks are :data:`learning.byzantine.ATTACKS`' ``large-gradient`` (iid
:math:`\mathcal N(10^6, 200^2)` coordinates) and ``bit-flip`` (the negated vector of the
first honest client), applied by :class:`learning.byzantine.AdversarialContext` with the
attackers fixed per cluster (half of every cluster's clients). The clients are Table 1's
(:func:`collabecon.reproductions.clustered_mnist.clients`, its validation share unused).

Both methods take one minibatch step of :data:`BATCH` per round, learning rate :data:`LR`,
heavy ball :data:`MOMENTUM`: Global is FedSGD with each client's heavy ball
(``keep_momentum="client"``), the attackers' updates forged; FC is Federated-Clustering
(``as-run``: heavy ball on the cluster estimate, radius :math:`0.99\, d_{(\lfloor qN
\rfloor)}`, :data:`TC_ITERS` Threshold-Clustering iterations) over the gradients every client
receives, the attackers' entries forged. The quantile is :math:`q = \delta`, the share of one
cluster's honest clients among all clients (1/8 here), so that the ball holds one honest
cluster's worth of points (the authors' published code takes :math:`q = \delta = 0.2` with 50
attackers in all). Each method also runs on the same federation without the attack (the
Byzantine workers then send their honest work), the reference of the claims
(:mod:`collabecon.reproductions.byzantine_mnist_claims`). The accuracy is that of the honest
clients' own models on their own test data, sample-weighted, in %.

``scale="small"`` runs 4 clusters of 2 honest clients and 2 Byzantine workers (the printed 1:1
ratio per cluster) of ``mnist5k`` with the linear softmax model (784-10), 40 rounds, on CPU in
well under a minute; ``scale="paper"`` the printed 4 clusters of 50 honest clients and 50
Byzantine workers of the full MNIST (``data_dir``) with Table 1's 784-200-10 MLP, 1000 rounds
(the thesis prints no budget for Fig. 2.6) and FC in 10 random subgroups per round.
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

from collabecon.reproductions.byzantine_mnist_claims import (
    ATTACK_NAMES,
    ATTACKS,
    CLAIMS,
    METHODS,
    NAMES,
    SOURCE,
    claims,
)
from collabecon.reproductions.clustered_mnist import BATCH, Table1Scale, clients
from econ.claims import Reproduction
from econ.validation import choice, positive_int

__all__ = [
    "CLAIMS",
    "CLUSTERS",
    "FIGURE",
    "LR",
    "MOMENTUM",
    "SCALES",
    "SETTINGS",
    "TC_ITERS",
    "ByzantineScale",
    "attackers",
    "figure",
    "measure",
    "report",
    "reproduce",
]

CLUSTERS = 4
LR = 0.1
MOMENTUM = 0.9
#: Threshold-Clustering iterations of FC (the authors' published code for Fig. 2.6)
TC_ITERS = 10
#: the runs of one seed: without the attack, then each attack
SETTINGS = ("none", *ATTACKS)
FIGURE = "byzantine.png"


@dataclass(frozen=True, slots=True)
class ByzantineScale:
    """Sizes of one Fig. 2.6 run.

    ``honest`` clients and ``byzantine`` workers per cluster (4 clusters), ``rounds`` rounds of
    one minibatch step, the accuracy recorded every ``eval_every`` rounds, FC in ``groups``
    random subgroups per round, the ``model`` of :data:`learning.models.MODELS`, ``seeds``
    seeds by default.
    """

    dataset: str
    honest: int
    byzantine: int
    rounds: int
    eval_every: int
    groups: int
    model: str
    seeds: int

    @property
    def clients(self) -> int:
        """Every client, honest or not."""
        return CLUSTERS * (self.honest + self.byzantine)

    @property
    def quantile(self) -> float:
        r"""FC's quantile :math:`q = \delta`: one cluster's honest clients among all."""
        return self.honest / self.clients


SCALES = {
    "small": ByzantineScale("mnist5k", 2, 2, 40, 5, 1, "linear", 1),
    "paper": ByzantineScale("mnist", 50, 50, 1000, 50, 10, "mlp", 1),
}


def attackers(clusters: np.ndarray, per_cluster: int, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of ``per_cluster`` Byzantine workers drawn by ``rng`` in every cluster.

    Raises
    ------
    ValueError
        A cluster with fewer than ``per_cluster + 1`` clients.
    """
    mask = np.zeros(clusters.size, dtype=bool)
    for k in np.unique(clusters):
        members = np.flatnonzero(clusters == k)
        if members.size <= per_cluster:
            raise ValueError(
                f"cluster {k} has {members.size} clients; {per_cluster} attackers leave none"
            )
        mask[rng.choice(members, size=per_cluster, replace=False)] = True
    return mask


def _algorithm(method: str, scale: ByzantineScale) -> tuple[str, dict[str, Any]]:
    if method == "global":
        return "fedavg", {"keep_momentum": "client"}
    return "federated-clustering", {
        "variant": "as-run",
        "iters": TC_ITERS,
        "quantile": scale.quantile,
        "groups": scale.groups,
        "batch_size": BATCH,
    }


def _curve(
    ctx: Any, method: str, scale: ByzantineScale, start: Any, honest: np.ndarray, seed: int
) -> list[float]:
    """The honest clients' accuracy every ``eval_every`` rounds of ``method`` in ``ctx``."""
    from learning.algorithms import build_algorithm
    from learning.rng import draw_entropy, init_rng, round_rng

    name, params = _algorithm(method, scale)
    algorithm = build_algorithm(name, ctx, **params)
    entropy = draw_entropy(np.random.default_rng(seed))
    state = algorithm.init(start, init_rng(entropy))
    everyone = np.arange(ctx.n_clients)
    curve = []
    for r in range(scale.rounds):
        state, _ = algorithm.round(state, everyone, round_rng(entropy, r))
        if (r + 1) % scale.eval_every == 0 or r + 1 == scale.rounds:
            models = {k: v[honest] for k, v in algorithm.client_models(state).items()}
            ev = ctx.engine.evaluate(models, ctx.test, honest)
            accuracy = np.nan_to_num(ev.accuracy, nan=0.0)
            curve.append(float(100 * np.average(accuracy, weights=ev.n)))
    return curve


def _seed_run(
    scale: ByzantineScale, seed: int, data_dir: str | None, progress: Callable[[str], None]
) -> dict[str, dict[str, list[float]]]:
    """Every method's curve in every setting of :data:`SETTINGS` on the federation of ``seed``."""
    from learning.algorithms import LocalTraining
    from learning.byzantine import Threat, adversarial_context
    from learning.engine import broadcast, parameters_of
    from learning.optim import SGDConfig

    sizes = Table1Scale(scale.dataset, scale.clients, 1, 1, scale.groups, 1)
    data = clients("private_label", sizes, seed, data_dir, model=scale.model)
    local = LocalTraining(1, BATCH, SGDConfig(LR, momentum=MOMENTUM))
    base = dataclasses.replace(data.ctx, local=local)
    counts = np.bincount(base.clusters)
    if counts.size != CLUSTERS or (counts != scale.honest + scale.byzantine).any():
        raise ValueError(f"expected {CLUSTERS} equal clusters, got sizes {counts.tolist()}")
    rng = np.random.default_rng([seed, 2])
    bad = attackers(base.clusters, scale.byzantine, rng)
    honest = np.flatnonzero(~bad)
    start = broadcast(
        {k: v.to(base.device) for k, v in parameters_of(data.model).items()}, base.n_clients
    )
    share = scale.byzantine / (scale.honest + scale.byzantine)
    out: dict[str, dict[str, list[float]]] = {}
    for setting in SETTINGS:
        ctx = base
        if setting != "none":
            threat = Threat(setting, share)
            ctx = dataclasses.replace(adversarial_context(base, threat, rng), attackers=bad)
        out[setting] = {}
        for method in METHODS:
            progress(f"seed {seed}, {setting}: {NAMES[method]}")
            out[setting][method] = _curve(ctx, method, scale, start, honest, seed)
    return out


def measure(
    scale: ByzantineScale,
    seeds: list[int],
    *,
    data_dir: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """FC's and Global's honest accuracy over the rounds, without and under each attack.

    Returns ``{"rounds", "curves": {setting: {method: [curve per seed]}}, "final": {setting:
    {method: [final accuracy per seed]}}, "seeds", "sizes", "wall_s"}``, accuracies in %.
    """
    if not seeds:
        raise ValueError("seeds must name at least one seed, got none")
    started = time.perf_counter()
    runs = [_seed_run(scale, seed, data_dir, progress) for seed in seeds]
    rounds = sorted(
        {r for r in range(scale.eval_every, scale.rounds + 1, scale.eval_every)} | {scale.rounds}
    )
    curves = {s: {m: [run[s][m] for run in runs] for m in METHODS} for s in SETTINGS}
    return {
        "rounds": rounds,
        "curves": curves,
        "final": {s: {m: [c[-1] for c in curves[s][m]] for m in METHODS} for s in SETTINGS},
        "seeds": list(seeds),
        "sizes": {**dataclasses.asdict(scale), "clients": scale.clients, "q": scale.quantile},
        "wall_s": time.perf_counter() - started,
    }


def figure(measured: dict[str, Any], path: Path) -> None:
    """Fig. 2.6: FC's and Global's accuracy over the rounds, one panel per attack.

    Solid lines under the attack, dotted without it; the mean over seeds.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ATTACKS), figsize=(5 * len(ATTACKS), 3.6), sharey=True)
    rounds = measured["rounds"]
    for ax, attack in zip(axes, ATTACKS, strict=True):
        for method, color in zip(METHODS, ("tab:blue", "tab:red"), strict=True):
            for setting, style, label in ((attack, "-", ""), ("none", ":", ", no attack")):
                curve = np.mean(measured["curves"][setting][method], axis=0)
                ax.plot(rounds, curve, style, color=color, label=f"{NAMES[method]}{label}")
        ax.set_title(f"{ATTACK_NAMES[attack].capitalize()} attack")
        ax.set_xlabel("Round (one minibatch step)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Accuracy of the honest clients (%)")
    axes[-1].legend(loc="center right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _table(measured: dict[str, Any]) -> str:
    lines = [
        "| setting | " + " | ".join(f"{NAMES[m]} % (final)" for m in METHODS) + " |",
        "|---|" + "---|" * len(METHODS),
    ]
    for setting in SETTINGS:
        label = "no attack" if setting == "none" else f"{ATTACK_NAMES[setting]} attack"
        cells = []
        for method in METHODS:
            values = np.asarray(measured["final"][setting][method])
            spread = f" ± {values.std(ddof=1):.1f}" if values.size > 1 else ""
            cells.append(f"{values.mean():.1f}{spread}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(scale: str, measured: dict[str, Any], out: Path | None = None) -> Reproduction:
    """The :class:`econ.claims.Reproduction` of ``measured``, :func:`measure`'s result at ``scale``.

    Its figure, JSON and markdown are written into ``out`` when given.
    """
    sizes = measured["sizes"]
    body = [
        f"Scale `{scale}`: 4 clusters of {sizes['honest']} honest clients and "
        f"{sizes['byzantine']} Byzantine workers each ({sizes['clients']} clients of "
        f"`{sizes['dataset']}`, private labels, model `{sizes['model']}`), "
        f"{sizes['rounds']} rounds of one minibatch step of {BATCH}, lr {LR}, heavy ball "
        f"{MOMENTUM}; FC with q = {sizes['q']:.3g} (one honest cluster's share), "
        f"{TC_ITERS} Threshold-Clustering iterations, {sizes['groups']} subgroup(s); seeds "
        f"{measured['seeds']}. Wall time {measured['wall_s']:.0f} s.",
    ]
    if scale == "small":
        body.append(
            "The small scale keeps the printed 1:1 ratio of honest clients to Byzantine "
            "workers in every cluster, with 2 of each instead of 50, and the linear model."
        )
    body += ["", _table(measured)]
    rep = Reproduction(
        name="byzantine",
        title=f"{SOURCE}, Fig. 2.6: Byzantine attacks on the MNIST private-label task",
        claims=tuple(claims(measured)),
        body="\n".join(body),
        figures=(FIGURE,) if out is not None else (),
        data={"scale": scale, **measured},
    )
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        figure(measured, out / FIGURE)
        (out / "byzantine.json").write_text(json.dumps(rep.to_dict(), indent=1, allow_nan=False))
        (out / "byzantine.md").write_text(rep.markdown())
    return rep


def reproduce(
    scale: str,
    out: Path | None,
    seeds: int | None = None,
    *,
    data_dir: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Reproduction:
    """Fig. 2.6 at ``scale`` over ``seeds`` seeds (0, 1, ...; the scale's default when None).

    Writes ``byzantine.png``, ``byzantine.json`` and ``byzantine.md`` into ``out`` when given.

    Raises
    ------
    ValueError
        Unknown scale; ``seeds`` not a positive integer; ``scale="paper"`` without
        ``data_dir`` (the full MNIST).
    """
    choice("scale", scale, tuple(SCALES))
    sizes = SCALES[scale]
    n_seeds = sizes.seeds if seeds is None else positive_int("seeds", seeds)
    if scale == "paper" and data_dir is None:
        raise ValueError("scale 'paper' needs the full MNIST: pass data_dir (--data-dir)")
    measured = measure(sizes, list(range(n_seeds)), data_dir=data_dir, progress=progress)
    return report(scale, measured, out)
