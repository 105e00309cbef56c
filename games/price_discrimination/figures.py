"""Figures 4.1-4.5 of Werner (2024), Chapter 4: the numbers behind them and the plots.

The ``*_data`` functions return plain arrays; :func:`write_figures` saves each figure as PNG
and its numbers as CSV. matplotlib is imported only when plotting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from econ.validation import positive_int
from games.price_discrimination.equilibrium import equilibrium, utility_curves
from games.price_discrimination.game import PARAMETER_SETS, THESIS_GAME, PDGame
from games.price_discrimination.repeated import ACTIONS, RepeatedRun, simulate
from games.price_discrimination.sellers import SELLERS

#: The three sellers of section 4.4, in the thesis's order.
FIGURE_SELLERS: tuple[str, ...] = ("exp3", "cexp3", "alpha-pd")
#: Bias levels of Figure 4.5: intervals [b, b + 0.1] for b in np.arange(-1, 1, 0.1).
BIAS_LEVELS = np.round(np.arange(-1.0, 1.0, 0.1), 10)


def fig4_1_data(points: int = 10_000) -> dict[str, dict[str, np.ndarray]]:
    """Utilities against alpha: regime A (P1, theta_L = mu theta_H) and B (P0).

    ``seller``, ``high_buyer`` and ``buyer_avg`` are the equilibrium's; ``high_buyer_thesis`` and
    ``buyer_avg_thesis`` those of the profile Theorem 6 states, which Figure 4.1 plots and which
    for alpha > alpha* in regime B is not an equilibrium (the seller's utility is the same).

    References
    ----------
    Werner (2024), ch. 4, §4.2, Figure 4.1 (the plotted utilities) and Corollary 2.
    """
    alphas = np.linspace(0.0, 1.0, points)
    out = {}
    for regime, game in (("A", PARAMETER_SETS["P1"]), ("B", PARAMETER_SETS["P0"])):
        curves = utility_curves(game, alphas)
        thesis = utility_curves(game, alphas, "thesis")
        curves["high_buyer_thesis"] = thesis["high_buyer"]
        curves["buyer_avg_thesis"] = thesis["buyer_avg"]
        out[regime] = curves
    return out


def run_sellers(
    game: PDGame,
    rounds: int,
    runs: int = 1,
    seed: int | np.random.Generator | None = 1,
    progress: Callable[[int], None] | None = None,
) -> dict[str, RepeatedRun]:
    """Exp3, contextual Exp3 and alpha*-PD against CBER buyers (Figures 4.2-4.4).

    References
    ----------
    Werner (2024), ch. 4, §4.4, Algorithms (sellers 1-3, CBER buyers) and Figures 4.2-4.4.
    """
    rng = np.random.default_rng(seed)
    streams = rng.spawn(len(FIGURE_SELLERS))
    return {
        name: simulate(game, SELLERS[name](), rounds, runs, stream, progress=progress)
        for name, stream in zip(FIGURE_SELLERS, streams, strict=True)
    }


def _running_mean(x: np.ndarray) -> np.ndarray:
    return np.cumsum(x.mean(axis=0)) / np.arange(1, x.shape[1] + 1)


def fig4_2_data(runs: dict[str, RepeatedRun]) -> dict[str, np.ndarray]:
    """Cumulative averages of the realised per-buyer seller and buyer utilities.

    References
    ----------
    Werner (2024), ch. 4, §4.4, Figure 4.2 (the plotted quantity).
    """
    out = {}
    for name, run in runs.items():
        out[f"seller_{name}"] = _running_mean(run.seller_utility())
        out[f"buyer_{name}"] = _running_mean(run.buyer_utility())
    return out


def fig4_3_data(runs: dict[str, RepeatedRun]) -> dict[str, np.ndarray]:
    """The buyers' belief alpha_hat_t and the running mean alpha_bar_t of the true rate.

    References
    ----------
    Werner (2024), ch. 4, §4.4, Figure 4.3 (the plotted quantity).
    """
    out = {}
    for name, run in runs.items():
        out[f"alpha_hat_{name}"] = run.alpha_hat.mean(axis=0)
        out[f"alpha_bar_{name}"] = run.alpha_bar().mean(axis=0)
    return out


def fig4_4_data(runs: dict[str, RepeatedRun]) -> dict[str, np.ndarray]:
    """Cumulative relative frequency of each action class (high, low, PD, reversePD).

    References
    ----------
    Werner (2024), ch. 4, §4.4, Figure 4.4 (the plotted quantity).
    """
    out = {}
    for name, run in runs.items():
        actions = run.actions()
        for k, action in enumerate(ACTIONS):
            out[f"{action}_{name}"] = _running_mean((actions == k).astype(float))
    return out


def fig4_5_runs(
    game: PDGame,
    rounds: int,
    seeds: int = 1,
    seed: int | np.random.Generator | None = 1,
    progress: Callable[[int], None] | None = None,
) -> dict[str, np.ndarray]:
    """Final cumulative-average seller utility per bias level and seed, shaped (levels, seeds).

    All 20 bias intervals and all seeds of one seller run together as one batch of runs.

    References
    ----------
    Werner (2024), ch. 4, §4.4, Biased alpha-hat and Figure 4.5.
    """
    rng = np.random.default_rng(seed)
    lo = np.repeat(BIAS_LEVELS, seeds)
    out = {}
    for name, stream in zip(FIGURE_SELLERS, rng.spawn(len(FIGURE_SELLERS)), strict=True):
        run = simulate(
            game, SELLERS[name](), rounds, lo.size, stream, bias=(lo, lo + 0.1), progress=progress
        )
        out[name] = run.seller_utility().mean(axis=1).reshape(BIAS_LEVELS.size, seeds)
    return out


def fig4_5_data(
    game: PDGame,
    rounds: int,
    seeds: int = 1,
    seed: int | np.random.Generator | None = 1,
    progress: Callable[[int], None] | None = None,
) -> dict[str, np.ndarray]:
    """Final cumulative-average seller utility against the buyers' bias level (seed mean).

    References
    ----------
    Werner (2024), ch. 4, §4.4, Figure 4.5 (the plotted quantity).
    """
    per_seed = fig4_5_runs(game, rounds, seeds, seed, progress)
    return _sweep_means(per_seed)


def _sweep_means(per_seed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {"bias": BIAS_LEVELS}
    out.update({f"seller_{name}": final.mean(axis=1) for name, final in per_seed.items()})
    return out


def _reference_lines(game: PDGame, who: str = "seller") -> dict[str, float]:
    """Dashed lines of Figures 4.2 and 4.5: the one-shot utilities at alpha in {0, 1, alpha*}.

    For the buyer (average over all buyers) the equilibrium's values come first; where the
    thesis's profile gives another value (regime B, alpha > alpha*) it is added, labelled.
    """
    star = float(game.alpha_star)
    lines = {}
    for a in (0.0, 1.0, star):
        eq = equilibrium(game, min(a, 1.0))
        lines[f"alpha={a:g}"] = float(eq.seller if who == "seller" else eq.buyer_avg)
    if who == "buyer":
        for a in (0.0, 1.0, star):
            thesis = float(equilibrium(game, min(a, 1.0), "thesis").buyer_avg)
            if thesis != lines[f"alpha={a:g}"]:
                lines[f"alpha={a:g}, thesis profile (not an equilibrium)"] = thesis
    return lines


def _save_csv(
    path: Path, columns: dict[str, np.ndarray], index: str, index_values: np.ndarray
) -> None:
    data = np.column_stack([index_values, *columns.values()])
    np.savetxt(
        path, data, delimiter=",", header=",".join([index, *columns]), comments="", fmt="%.10g"
    )


@dataclass(frozen=True, eq=False)
class FigureData:
    """The numbers behind Figures 4.1-4.5 with the thesis parameters.

    ``runs`` holds the repeated play of Figures 4.2-4.4 (one :class:`RepeatedRun` per seller,
    ``seeds`` runs each); ``sweep`` the final seller utility of Figure 4.5 per bias level and
    seed, shaped ``(levels, seeds)``.

    References
    ----------
    Werner (2024), ch. 4, §4.2 Figure 4.1 and §4.4 Figures 4.2-4.5.
    """

    rounds: int
    seeds: int
    seed: int
    curves: dict[str, dict[str, np.ndarray]]
    runs: dict[str, RepeatedRun]
    sweep: dict[str, np.ndarray]


def figure_data(
    rounds: int = 20_000,
    seeds: int = 1,
    seed: int = 1,
    progress: Callable[[int], None] | None = None,
) -> FigureData:
    """Simulate everything Figures 4.1-4.5 plot (thesis parameters, section 4.4).

    References
    ----------
    Werner (2024), ch. 4, §4.4 (experiment parameters), Figures 4.1-4.5.
    """
    rounds = positive_int("rounds", rounds)
    seeds = positive_int("seeds", seeds)
    runs = run_sellers(THESIS_GAME, rounds, seeds, seed, progress)
    sweep = fig4_5_runs(THESIS_GAME, rounds, seeds, seed, progress)
    return FigureData(rounds, seeds, seed, fig4_1_data(), runs, sweep)


def write_figures(
    out: str | Path,
    rounds: int = 20_000,
    seeds: int = 1,
    seed: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[Path]:
    """Reproduce Figures 4.1-4.5 with the thesis parameters; PNG and CSV per figure.

    References
    ----------
    Werner (2024), ch. 4, Figures 4.1-4.5 (the plotted quantities).
    """
    return plot_figures(out, figure_data(rounds, seeds, seed, progress))


def plot_figures(out: str | Path, data: FigureData) -> list[Path]:
    """Save Figures 4.1-4.5 of ``data`` as PNG and their numbers as CSV in ``out``.

    References
    ----------
    Werner (2024), ch. 4, Figures 4.1-4.5 (the plotted quantities).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    game = THESIS_GAME
    written: list[Path] = []
    t = np.arange(1, data.rounds + 1)

    def save(fig: Any, name: str) -> None:
        path = out / f"{name}.png"
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        written.extend([path, out / f"{name}.csv"])

    curves = data.curves
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, (regime, c) in zip(axes, curves.items(), strict=True):
        star = float((PARAMETER_SETS["P1"] if regime == "A" else game).alpha_star)
        jump = np.where(c["alpha"] > star, np.nan, c["seller"])
        ax.plot(c["alpha"], jump, color="C0", label="seller $u_S$")
        ax.plot(c["alpha"], np.where(c["alpha"] > star, c["seller"], np.nan), color="C0")
        ax.plot(
            c["alpha"], c["high_buyer"], color="C1", label=r"$\bar\theta$-buyer $u_H$ (equilibrium)"
        )
        if np.any(c["high_buyer_thesis"] != c["high_buyer"]):
            differ = np.where(
                c["high_buyer_thesis"] != c["high_buyer"], c["high_buyer_thesis"], np.nan
            )
            ax.plot(
                c["alpha"],
                differ,
                color="C1",
                ls="--",
                label=r"$\bar\theta$-buyer, thesis profile (not an equilibrium)",
            )
        ax.set_xticks([0, star, 1], ["0", r"$\alpha^*$", "1"])
        ax.set_title(
            r"regime A: $\theta_L \geq \mu\theta_H$"
            if regime == "A"
            else r"regime B: $\theta_L < \mu\theta_H$"
        )
        ax.set_xlabel(r"$\alpha$")
        ax.legend()
    _save_csv(
        out / "fig4_1.csv",
        {f"{k}_{r}": v for r, c in curves.items() for k, v in c.items() if k != "alpha"},
        "alpha",
        curves["B"]["alpha"],
    )
    save(fig, "fig4_1")

    runs = data.runs
    utilities = fig4_2_data(runs)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    lines = _reference_lines(game)
    buyer_lines = _reference_lines(game, "buyer")
    for ax, who, refs in zip(axes, ("seller", "buyer"), (lines, buyer_lines), strict=True):
        for name in FIGURE_SELLERS:
            ax.plot(t, utilities[f"{who}_{name}"], label=name)
        for k, (label, v) in enumerate(refs.items()):
            ax.axhline(v, ls="--", lw=0.8, color=f"C{k + 3}", label=label)
        ax.set_xlabel("round t")
        ax.set_title(f"{who} (cumulative average per buyer)")
        ax.legend(fontsize=7)
    _save_csv(out / "fig4_2.csv", utilities, "t", t)
    save(fig, "fig4_2")

    beliefs = fig4_3_data(runs)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for k, name in enumerate(FIGURE_SELLERS):
        ax.plot(t, beliefs[f"alpha_hat_{name}"], color=f"C{k}", label=rf"$\hat\alpha_t$ {name}")
        ax.plot(
            t, beliefs[f"alpha_bar_{name}"], color=f"C{k}", ls="--", label=rf"$\bar\alpha_t$ {name}"
        )
    ax.axhline(float(game.alpha_star), color="gray", lw=0.8, label=r"$\alpha^*$")
    ax.set_xlabel("round t")
    ax.legend(fontsize=7)
    _save_csv(out / "fig4_3.csv", beliefs, "t", t)
    save(fig, "fig4_3")

    actions = fig4_4_data(runs)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), sharey=True)
    for ax, name in zip(axes, FIGURE_SELLERS, strict=True):
        for action in ACTIONS:
            ax.plot(t, actions[f"{action}_{name}"], label=action)
        ax.set_title(name)
        ax.set_xlabel("round t")
    axes[0].set_ylabel("relative frequency")
    axes[0].legend(fontsize=7)
    _save_csv(out / "fig4_4.csv", actions, "t", t)
    save(fig, "fig4_4")

    sweep = _sweep_means(data.sweep)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for name in FIGURE_SELLERS:
        ax.plot(sweep["bias"], sweep[f"seller_{name}"], marker="o", label=name)
    for k, (label, v) in enumerate(lines.items()):
        ax.axhline(v, ls="--", lw=0.8, color=f"C{k + 3}", label=label)
    ax.set_xlabel("estimator bias level b (bias ~ U[b, b + 0.1])")
    ax.set_ylabel("final cumulative average seller utility")
    ax.legend(fontsize=7)
    _save_csv(
        out / "fig4_5.csv", {k: v for k, v in sweep.items() if k != "bias"}, "bias", sweep["bias"]
    )
    save(fig, "fig4_5")
    return written
