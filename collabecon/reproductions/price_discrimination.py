r"""Werner (2024), ch. 4, Figures 4.1-4.5 (``collabecon pricing figures``), reproduced.

Every claim the thesis makes about what its figures show, measured next to published.

Section 4.4 simulates Algorithm 6 with :math:`\mu = 0.5`, :math:`\underline\theta = 5`,
:math:`\bar\theta = 15`, :math:`c_B = c_S = 5`, n = 10 buyers, T = 20,000 rounds, against
three sellers (Exp3, CExp3, :math:`\alpha^*`-PD). :func:`figures` simulates and plots the
figures, :func:`measure` takes the numbers the claims rest on from them (the one-shot
equilibria of Figure 4.1, per-seller utilities, beliefs and action frequencies, the bias sweep
of Figure 4.5), and the claims are the table of
:mod:`collabecon.reproductions.price_discrimination_claims`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from collabecon.reproductions.price_discrimination_claims import CLAIMS, claims, plus_minus
from econ.claims import Reproduction
from games.price_discrimination.equilibrium import equilibrium
from games.price_discrimination.figures import (
    BIAS_LEVELS,
    FIGURE_SELLERS,
    FigureData,
    figure_data,
    plot_figures,
)
from games.price_discrimination.game import PARAMETER_SETS
from games.price_discrimination.repeated import ACTIONS

__all__ = [
    "CLAIMS",
    "SETTINGS",
    "claims",
    "figures",
    "measure",
    "reproduce",
]

#: scale -> (rounds, seeds). The thesis: T = 20,000, one run per seller.
SETTINGS = {"small": (5_000, 3), "paper": (20_000, 3)}


def _seed_stats(x: np.ndarray) -> tuple[float, float]:
    """Mean over seeds and its standard error (0 for one seed)."""
    x = np.asarray(x, dtype=float)
    se = float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else 0.0
    return float(x.mean()), se


def _last_half(x: np.ndarray) -> np.ndarray:
    """Per run, the mean of the last half of the rounds."""
    return x[:, x.shape[1] // 2 :].mean(axis=1)


def measure(data: FigureData) -> dict[str, Any]:
    """The numbers the claims rest on, from the simulated figures."""
    one_shot: dict[str, Any] = {}
    for regime, key in (("A", "P1"), ("B", "P0")):
        game = PARAMETER_SETS[key]
        star = float(game.alpha_star)
        c = data.curves[regime]
        alphas, seller = c["alpha"], c["seller"]
        below = alphas <= star
        eq = {a: equilibrium(game, a) for a in (0.0, star, 1.0)}
        thesis = {a: equilibrium(game, a, "thesis") for a in (0.0, star, 1.0)}
        grid = np.linspace(0.0, 1.0, 101)
        one_shot[regime] = {
            "alpha_star": star,
            "seller_nondecreasing_below": bool(np.all(np.diff(seller[below]) >= -1e-12)),
            "seller_0": float(eq[0.0].seller),
            "seller_star": float(eq[star].seller),
            "seller_1": float(eq[1.0].seller),
            "seller_just_above": float(seller[alphas > star][0]),
            "argmax": float(alphas[int(np.argmax(seller))]),
            "grid_step": float(alphas[1] - alphas[0]),
            "high_buyer": {a: float(e.high_buyer) for a, e in eq.items()},
            "high_buyer_thesis": {a: float(e.high_buyer) for a, e in thesis.items()},
            "buyer_avg": {a: float(e.buyer_avg) for a, e in eq.items()},
            "low_buyer_max": max(abs(float(equilibrium(game, a).low_buyer)) for a in grid),
        }
    sellers: dict[str, Any] = {}
    for name, run in data.runs.items():
        seller_u, buyer_u = run.seller_utility(), run.buyer_utility()
        actions = run.actions()
        freq = {a: (actions == k).mean(axis=1) for k, a in enumerate(ACTIONS)}
        sellers[name] = {
            "seller_last_half": _seed_stats(_last_half(seller_u)),
            "buyer_last_half": _seed_stats(_last_half(buyer_u)),
            "seller_average": _seed_stats(seller_u.mean(axis=1)),
            "buyer_average": _seed_stats(buyer_u.mean(axis=1)),
            "alpha_hat_final": _seed_stats(run.alpha_hat[:, -1]),
            "alpha_bar_final": _seed_stats(run.alpha_bar()[:, -1]),
            "belief_gap_final": _seed_stats(np.abs(run.alpha_hat[:, -1] - run.alpha_bar()[:, -1])),
            "action_freq": {a: _seed_stats(f) for a, f in freq.items()},
        }
    sweep = {name: final.mean(axis=1) for name, final in data.sweep.items()}
    return {
        "rounds": data.rounds,
        "seeds": data.seeds,
        "seed": data.seed,
        "one_shot": one_shot,
        "sellers": sellers,
        "bias_levels": BIAS_LEVELS,
        "sweep": sweep,
        "sweep_seed_se": {
            name: (
                final.std(axis=1, ddof=1) / np.sqrt(final.shape[1])
                if final.shape[1] > 1
                else np.zeros(final.shape[0])
            )
            for name, final in data.sweep.items()
        },
    }


def _body(m: dict[str, Any]) -> str:
    s = m["sellers"]
    lines = [
        f"Algorithm 6 with mu = 0.5, theta_L = 5, theta_H = 15, c_B = c_S = 5, n = 10; "
        f"T = {m['rounds']} rounds (the thesis: 20,000), {m['seeds']} seeds (the thesis: one "
        f"run), seed {m['seed']}. Utilities per buyer; mean ± standard error over seeds.",
        "",
        "| seller | seller, average | seller, last half | buyer, last half | alpha_hat_T "
        "| alpha_bar_T | PD | high |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in FIGURE_SELLERS:
        r = s[name]
        lines.append(
            f"| {name} | {plus_minus(r['seller_average'])} | {plus_minus(r['seller_last_half'])} "
            f"| {plus_minus(r['buyer_last_half'])} | {plus_minus(r['alpha_hat_final'])} "
            f"| {plus_minus(r['alpha_bar_final'])} | {r['action_freq']['PD'][0]:.3f} "
            f"| {r['action_freq']['high'][0]:.3f} |"
        )
    lines += [
        "",
        "Figure 4.5, final seller utility per bias level b (bias ~ U[b, b + 0.1]):",
        "",
        "| b | " + " | ".join(FIGURE_SELLERS) + " |",
        "|---" * (len(FIGURE_SELLERS) + 1) + "|",
    ]
    for k, level in enumerate(m["bias_levels"]):
        cells = [f"{m['sweep'][n][k]:.3f}" for n in FIGURE_SELLERS]
        lines.append(f"| {level + 0.0:.1f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figures(
    out: str | Path,
    rounds: int = 20_000,
    seeds: int = 1,
    seed: int = 1,
    progress: Callable[[int], None] | None = None,
    *,
    name: str = "pricing",
) -> Reproduction:
    """Simulate and plot Figures 4.1-4.5 into ``out``; the thesis's claims on them."""
    data = figure_data(rounds, seeds, seed, progress)
    written = plot_figures(out, data)
    m = measure(data)
    pngs = tuple(p.name for p in written if p.suffix == ".png")
    return Reproduction(
        name=name,
        title="Werner (2024), ch. 4: the price-discrimination game, Figures 4.1-4.5",
        claims=tuple(claims(m)),
        body=_body(m),
        figures=pngs,
        data={**m, "files": [str(p) for p in written]},
    )


def reproduce(scale: str, out: Path, seeds: int | None = None) -> Reproduction:
    """Figures 4.1-4.5 at ``scale`` (small: T = 5,000; paper: T = 20,000).

    3 seeds unless ``seeds`` says otherwise, from seed 1 (the thesis's).
    """
    if scale not in SETTINGS:
        raise ValueError(f"scale must be one of {', '.join(SETTINGS)}, got {scale!r}")
    rounds, default_seeds = SETTINGS[scale]
    return figures(out, rounds, seeds or default_seeds, seed=1)
