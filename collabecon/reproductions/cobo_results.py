"""The result of one setting of CoBo's experiments from the runs of its methods.

Hashemi, He and Jaggi 2024, Sections 4.1-4.2, Table 2: the records of a training run
(:class:`TrainingRun`) and of one method's runs (:class:`MethodRuns`), their summary with mean
accuracies and losses, spread over seeds, CoBo's weight recovery, Federated-Clustering's
clusters over the rounds and every claim of :mod:`collabecon.reproductions.cobo_claims`
(:func:`summarise`), the heatmaps of CoBo's weights and of FC's clusters (Figure 6), the
accuracy curves of every method (Figures 5 and 9), and the tables next to the paper's
(:func:`tables_markdown`); CoBo's comparison of pair-sampling strategies next to Table 1
(:func:`summarise_sampling`, :func:`sampling_markdown`) and CoBo along the factors of
Figure 3 (:func:`summarise_ablation`, :func:`ablation_markdown`).
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from collabecon.reproductions.cobo_claims import (
    LATE_SHARE,
    NAMES,
    PAPER,
    PAPER_IMPROVED,
    PAPER_LOSS,
    PAPER_SAMPLING,
    PAPER_STD,
    SAMPLING_NAMES,
    claims,
    loss_with_std,
    pct,
    with_std,
)
from collabecon.reproductions.cobo_methods import BATCH, VALIDATION_SHARE, finetune_steps
from collabecon.reproductions.cobo_sampling_claims import ABLATION_CLAIMS, sampling_claims
from econ.claims import evaluate
from learning.algorithms.cobo_steps import oracle_weights, weight_error

__all__ = [
    "CHANCE",
    "MethodRuns",
    "TrainingRun",
    "ablation_markdown",
    "match_round",
    "mistake_rounds",
    "sampling_markdown",
    "summarise",
    "summarise_ablation",
    "summarise_sampling",
    "tables_markdown",
]

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

_HEATMAP_SHARES = (0.01, 0.1, 0.5, 1.0)  # rounds shown in the heatmaps, as shares of the run


@dataclass(frozen=True, slots=True)
class TrainingRun:
    """One method, one seed, one learning rate.

    Per-client test accuracy, test loss and validation accuracy, the test-accuracy curve,
    CoBo's weights over time, Federated-Clustering's clusters over time (``members``: row
    ``i`` marks the clients inside receiver ``i``'s ball), IFCA's final assignment.
    """

    test: np.ndarray
    loss: np.ndarray
    validation: np.ndarray
    curve: list[tuple[int, float]]
    weights: list[np.ndarray]
    assignment: list[int] | None
    members: list[np.ndarray] = dataclasses.field(default_factory=list)


@dataclass(frozen=True, slots=True)
class MethodRuns:
    """One method on one setting: its learning-rate search and its run on every seed.

    What :func:`summarise` gathers; methods are independent, so they may run in parallel.
    """

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
    runs: tuple[TrainingRun, ...]
    clients: int
    clusters: np.ndarray


def _std(values: Sequence[float]) -> float:
    """Sample standard deviation over seeds (0 for one seed)."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def match_round(history: list[np.ndarray], clusters: np.ndarray) -> int | None:
    """First round from which :math:`W > 1/2` off the diagonal equals the oracle ever after.

    Rounds are 1-based; the match holds in every later round; None when the last round does
    not match.
    """
    oracle = oracle_weights(clusters).astype(bool)
    off = ~np.eye(clusters.size, dtype=bool)
    matches = [bool(np.array_equal((w > 0.5)[off], oracle[off])) for w in history]
    if not matches or not matches[-1]:
        return None
    wrong = [r for r, ok in enumerate(matches, start=1) if not ok]
    return wrong[-1] + 1 if wrong else 1


def mistake_rounds(history: list[np.ndarray], clusters: np.ndarray) -> list[int]:
    """The rounds (1-based) whose collaboration matrix differs from the oracle off the diagonal.

    A matrix is taken as its entries above 1/2 (Federated-Clustering's 0/1 memberships as
    they are).
    """
    oracle = oracle_weights(clusters).astype(bool)
    off = ~np.eye(clusters.size, dtype=bool)
    return [
        r
        for r, w in enumerate(history, start=1)
        if not np.array_equal((np.asarray(w) > 0.5)[off], oracle[off])
    ]


def _write_heatmaps(
    out: Path,
    history: list[np.ndarray],
    clusters: np.ndarray,
    setting: str,
    name: str = "cobo_weights",
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    rounds = len(history)
    shown = sorted({max(1, round(share * rounds)) for share in _HEATMAP_SHARES})
    csv_path = out / f"{name}_{setting}.csv"
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
    png_path = out / f"{name}_{setting}.png"
    fig.savefig(png_path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return [str(png_path), str(csv_path)]


def _mean_curve(curves: list[list[tuple[int, float]]]) -> list[tuple[int, float]]:
    """The seeds' accuracy curves averaged round by round (the rounds every seed evaluated)."""
    rounds = sorted(set.intersection(*(set(r for r, _ in c) for c in curves)))
    by_seed = [dict(c) for c in curves]
    return [(r, float(np.mean([c[r] for c in by_seed]))) for r in rounds]


def _write_curves(out: Path, curves: dict[str, list[list[tuple[int, float]]]], setting: str) -> str:
    """Every method's test accuracy over the rounds, mean over seeds (Figures 5 and 9)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, per_seed in curves.items():
        mean = _mean_curve(per_seed)
        ax.plot([r for r, _ in mean], [100 * a for _, a in mean], marker=".", label=NAMES[key])
    ax.set_xlabel("round")
    ax.set_ylabel("mean test accuracy (%)")
    ax.set_title(setting)
    ax.legend(fontsize="small")
    path = out / f"accuracy_curves_{setting}.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return str(path)


def summarise(methods: dict[str, MethodRuns], out: Path | None = None) -> dict[str, Any]:
    """The result of one setting from the runs of its methods.

    The runs are all of one setting, rounds, seeds and options. The result holds
    accuracies, spread, tuning, CoBo's weights, claims; heatmaps of the first seed's CoBo are
    written into ``out``.
    """
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
    loss_per_seed = {k: [float(r.loss.mean()) for r in rs] for k, rs in runs.items()}
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
    members = [r.members for r in runs.get("fc", []) if r.members]
    curves = {k: [r.curve for r in rs] for k, rs in runs.items() if rs[0].curve}
    files = _write_heatmaps(out, weights[0], clusters, setting_name) if out and weights else []
    if out and members:
        files += _write_heatmaps(out, members[0], clusters, setting_name, "fc_clusters")
    if out and curves:
        files.append(_write_curves(out, curves, setting_name))
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
        "budget": f"{rounds} rounds for every method, one minibatch ({BATCH}) SGD step per "
        f"model per round; fedavg-ft: {rounds - finetune_steps(rounds)} FedAvg rounds then "
        f"{finetune_steps(rounds)} local fine-tuning steps",
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
        "loss": {k: float(np.mean(v)) for k, v in loss_per_seed.items()},
        "loss_std": {k: _std(v) for k, v in loss_per_seed.items()},
        "loss_per_seed": loss_per_seed,
        "improved_over_local": {k: float(np.mean(v)) for k, v in improved.items()},
        "chance": chance,
        "near_chance": near_chance,
        "paper": {k: v for k, v in PAPER[setting_name].items() if k in accuracy},
        "paper_std": {k: v for k, v in PAPER_STD[setting_name].items() if k in accuracy},
        "paper_loss": {k: v for k, v in PAPER_LOSS[setting_name].items() if k in accuracy},
        "curves": curves,
        "mean_curves": {k: _mean_curve(c) for k, c in curves.items()},
        "ifca_models_used": [len(set(r.assignment)) for r in runs.get("ifca", []) if r.assignment],
        "weights_match_oracle": None if not weights else [m is not None for m in match],
        "weights_match_round": match if weights else None,
        "weight_error": [weight_error(h[-1], clusters) for h in weights] if weights else None,
        "final_weights": weights[0][-1] if weights else None,
        "fc_mistake_rounds": [mistake_rounds(h, clusters) for h in members] if members else None,
        "fc_late_from": rounds - max(1, round(LATE_SHARE * rounds)) + 1,
        "files": files,
    }
    result["claims"] = [c.to_dict() for c in claims(result)]
    return result


def tables_markdown(result: dict[str, Any]) -> str:
    """The measured accuracies and losses next to Table 2, the learning-rate grid, the notes.

    Accuracies and losses are mean ± std over seeds; the grid shows every method's validation
    accuracy and choice.
    """
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
    head = (
        "| method | accuracy (%) | paper (%) | loss | paper loss | Imp. (%) | paper Imp. (%) | lr |"
    )
    if grid:
        head += " validation acc. per lr |"
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for key in sorted(result["accuracy"], key=lambda k: -result["accuracy"][k]):
        paper = result["paper"].get(key)
        paper_cell = "-" if paper is None else f"{pct(paper)} ± {pct(result['paper_std'][key])}"
        imp = result["improved_over_local"].get(key)
        paper_imp = PAPER_IMPROVED[result["setting"]].get(key)
        row = [
            NAMES[key],
            with_std(result, key),
            paper_cell,
            f"{result['loss'][key]:.3f} ± {result['loss_std'][key]:.3f}",
            "-" if key not in result["paper_loss"] else f"{result['paper_loss'][key]:.2f}",
            "-" if imp is None else f"{imp:.0f}",
            "-" if paper_imp is None else f"{paper_imp:.0f}",
            f"{result['tuning']['methods'][key]['chosen']:g}",
        ]
        if grid:
            scores = result["tuning"]["methods"][key]["grid"]
            row.append(", ".join(f"{float(lr):g}: {pct(a)}" for lr, a in scores.items()))
        lines.append("| " + " | ".join(row) + " |")
    for key, why in result["near_chance"].items():
        lines += [
            "",
            f"{NAMES[key]} ends within 5 points of chance ({pct(result['chance'])}%): {why}.",
        ]
    return "\n".join(lines) + "\n"


def summarise_sampling(runs: dict[str, MethodRuns]) -> dict[str, Any]:
    """Table 1's comparison from CoBo's runs under each pair-sampling strategy.

    ``runs`` maps a strategy (:data:`collabecon.reproductions.cobo_claims.PAPER_SAMPLING`) to
    CoBo's runs with it, all on one setting, rounds and seeds. The result holds mean accuracy
    and loss per strategy, their spread over seeds, every strategy's learning rate and
    Table 1's claims.
    """
    if not runs:
        raise ValueError("runs must name at least one sampling strategy")
    one = next(iter(runs.values()))
    for name, m in runs.items():
        if (m.key, m.schedule) != ("cobo", name) or (m.setting, m.rounds, m.seeds) != (
            one.setting,
            one.rounds,
            one.seeds,
        ):
            raise ValueError(f"runs must be CoBo's with their own schedule on one setting: {name}")
    acc = {k: [float(r.test.mean()) for r in m.runs] for k, m in runs.items()}
    loss = {k: [float(r.loss.mean()) for r in m.runs] for k, m in runs.items()}
    result: dict[str, Any] = {
        "setting": "sampling",
        "federation": one.setting,
        "clients": one.clients,
        "rounds": one.rounds,
        "seeds": list(one.seeds),
        "momentum": one.momentum,
        "learning_rates": one.learning_rates,
        "accuracy": {k: float(np.mean(v)) for k, v in acc.items()},
        "accuracy_std": {k: _std(v) for k, v in acc.items()},
        "accuracy_per_seed": acc,
        "loss": {k: float(np.mean(v)) for k, v in loss.items()},
        "loss_std": {k: _std(v) for k, v in loss.items()},
        "loss_per_seed": loss,
        "tuning": {k: {"grid": m.tuning, "chosen": m.chosen} for k, m in runs.items()},
        "paper": {k: PAPER_SAMPLING[k] for k in runs},
    }
    result["claims"] = [c.to_dict() for c in sampling_claims(result)]
    return result


def sampling_markdown(result: dict[str, Any]) -> str:
    """CoBo's accuracy and loss per pair-sampling strategy next to Table 1."""
    lines = [
        f"**Table 1, pair sampling** ({result['federation']}, {result['clients']} clients, "
        f"{result['rounds']} rounds, seeds {result['seeds']}, wall time "
        f"{result.get('wall_s', '-')} s): CoBo under each strategy, each with its own learning "
        "rate chosen on validation data.",
        "",
        "| strategy | accuracy (%) | paper (%) | loss | paper loss | lr |",
        "|---|---|---|---|---|---|",
    ]
    for key in result["accuracy"]:
        paper_acc, paper_loss = result["paper"][key]
        lines.append(
            f"| {SAMPLING_NAMES[key]} | {with_std(result, key)} | {paper_acc:.2f} | "
            f"{loss_with_std(result, key)} | {paper_loss:.3f} | "
            f"{result['tuning'][key]['chosen']:g} |"
        )
    return "\n".join(lines) + "\n"


def summarise_ablation(runs: dict[str, MethodRuns]) -> dict[str, Any]:
    """Figure 3's sweeps from CoBo's runs on the federations of ``ABLATION_SETTINGS``.

    ``runs`` maps a federation's name (``cross-silo/<factor>=<value>``) to CoBo's runs on it.
    The result holds, per factor, the values run with CoBo's mean accuracy and loss and their
    spread over seeds, and the claims of Figure 3.
    """
    factors: dict[str, dict[str, list[float]]] = {}
    for name, m in runs.items():
        factor, value = name.split("/", 1)[1].split("=")
        acc = [float(r.test.mean()) for r in m.runs]
        loss = [float(r.loss.mean()) for r in m.runs]
        entry = factors.setdefault(
            factor, {k: [] for k in ("values", "accuracy", "accuracy_std", "loss", "chosen")}
        )
        entry["values"].append(float(value))
        entry["accuracy"].append(float(np.mean(acc)))
        entry["accuracy_std"].append(_std(acc))
        entry["loss"].append(float(np.mean(loss)))
        entry["chosen"].append(m.chosen)
    for entry in factors.values():
        order = np.argsort(entry["values"])
        for key in entry:
            entry[key] = [entry[key][i] for i in order]
    one = next(iter(runs.values()))
    result: dict[str, Any] = {
        "setting": "ablation",
        "rounds": one.rounds,
        "seeds": list(one.seeds),
        "factors": factors,
    }
    result["claims"] = [c.to_dict() for c in evaluate(ABLATION_CLAIMS, result)]
    return result


def ablation_markdown(result: dict[str, Any]) -> str:
    """CoBo's accuracy along each factor of Figure 3."""
    lines = [
        f"**Figure 3, ablation** (cross-silo, {result['rounds']} rounds, seeds "
        f"{result['seeds']}): CoBo's mean accuracy (%) ± std over seeds, its learning rate "
        "chosen on validation data for every federation.",
        "",
        "| factor | value | accuracy (%) | loss | lr |",
        "|---|---|---|---|---|",
    ]
    for factor, entry in result["factors"].items():
        for i, value in enumerate(entry["values"]):
            lines.append(
                f"| {factor} | {value:g} | {pct(entry['accuracy'][i])} ± "
                f"{pct(entry['accuracy_std'][i])} | {entry['loss'][i]:.3f} | "
                f"{entry['chosen'][i]:g} |"
            )
    return "\n".join(lines) + "\n"
