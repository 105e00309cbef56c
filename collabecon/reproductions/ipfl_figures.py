"""The figures and tables of IP-FL's comparisons (:mod:`collabecon.reproductions.ipfl_settings`).

IP-FL is Khan et al., "IP-FL: Incentivized and Personalized Federated Learning". Drawn from
the results of :func:`collabecon.reproductions.ipfl_comparison.compare`, keyed by the names of
:data:`~collabecon.reproductions.ipfl_settings.COMPARISONS`:

- :func:`convergence_figure`: each method's mean personalised test accuracy over the rounds
  at 10:90, 30:70, linear and random (Fig. 2 and Fig. 9);
- :func:`pma_cdf_figure`: the CDF of the clients' PMA of each method (Fig. 3 and Fig. 8);
- :func:`synthetic_cdf_figure`: the CDF of the clients' test accuracy of IP-FL and FedSoft
  on the synthetic data (Fig. 4);
- :func:`settings_table` and :func:`clusters_table`: the numbers behind them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from collabecon.reproductions.ipfl_settings import CONVERGENCE, MIXTURES

__all__ = [
    "CONVERGENCE_FIGURE",
    "EMNIST_FIGURE",
    "PMA_FIGURE",
    "SYNTHETIC_FIGURE",
    "clusters_table",
    "convergence_figure",
    "emnist_cdf_figure",
    "pma_cdf_figure",
    "settings_table",
    "synthetic_cdf_figure",
]

CONVERGENCE_FIGURE = "ipfl_convergence.png"
PMA_FIGURE = "ipfl_pma_cdf.png"
SYNTHETIC_FIGURE = "ipfl_synthetic_cdf.png"
EMNIST_FIGURE = "ipfl_emnist_cdf.png"
#: The comparisons of the PMA CDFs, with their panel titles.
_PMA_PANELS = {
    "rotation": "10:90 (Fig. 3)",
    "30:70": "30:70 (Fig. 3)",
    "pathological": "2 classes per client (Fig. 3(g), Fig. 8)",
    "40:60": "40:60 (Table 11)",
}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _ecdf(values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    x = np.sort(np.asarray(values, dtype=float))
    return x, np.arange(1, x.size + 1) / x.size


def _panels(plt: Any, n: int) -> tuple[Any, Any]:
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.6), squeeze=False)
    return fig, axes[0]


def _save(plt: Any, fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def convergence_figure(results: dict[str, Any], path: Path) -> None:
    """Fig. 2 and Fig. 9: each method's mean personalised test accuracy over the rounds."""
    plt = _pyplot()
    present = {m: v for m, v in CONVERGENCE.items() if v[0] in results}
    fig, axes = _panels(plt, len(present))
    for ax, (mixture, (name, where)) in zip(axes, present.items(), strict=True):
        for row in results[name]["rows"]:
            curve = np.asarray(row["curve"])
            style = "-" if row is results[name]["rows"][0] else "--"
            ax.plot(curve[:, 0], 100 * curve[:, 1], style, marker=".", label=row["method"])
        ax.set_title(f"{mixture} ({where.split(' and ')[0]})")
        ax.set_xlabel("Communication round")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Mean personalised test accuracy (%)")
    axes[-1].legend(fontsize=7, loc="lower right")
    _save(plt, fig, path)


def pma_cdf_figure(results: dict[str, Any], path: Path) -> None:
    """Fig. 3 and Fig. 8: the CDF of the clients' PMA against FedAvg, every method."""
    plt = _pyplot()
    present = {n: t for n, t in _PMA_PANELS.items() if n in results}
    fig, axes = _panels(plt, len(present))
    for ax, (name, title) in zip(axes, present.items(), strict=True):
        for row in results[name]["rows"]:
            if row["method"] == "fedavg":  # the reference: its PMA is 0 everywhere
                continue
            x, y = _ecdf(row["pma"])
            ax.step(x, y, where="post", label=row["method"])
        ax.axvline(0.0, color="grey", lw=0.8)
        ax.set_title(title)
        ax.set_xlabel("PMA against FedAvg (pp)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Share of clients (CDF)")
    axes[-1].legend(fontsize=7, loc="upper left")
    _save(plt, fig, path)


def _accuracy_cdfs(
    results: dict[str, Any], path: Path, prefix: str, rival: str, title: str
) -> None:
    """The CDF of the clients' personalised test accuracy of IP-FL and ``rival``, per mixture.

    One panel per mixture whose comparison ``<prefix>-<mixture>`` is in ``results``, titled
    ``title.format(mixture=...)``; IP-FL is the first row of each comparison.
    """
    plt = _pyplot()
    present = [m for m in MIXTURES if f"{prefix}-{m}" in results]
    fig, axes = _panels(plt, len(present))
    for ax, mixture in zip(axes, present, strict=True):
        rows = results[f"{prefix}-{mixture}"]["rows"]
        for row in [rows[0], *(r for r in rows if r["method"] == rival)]:
            x, y = _ecdf(row["personalised_accuracy"])
            ax.step(100 * x, y, where="post", label=row["method"])
        ax.set_title(title.format(mixture=mixture))
        ax.set_xlabel("Personalised test accuracy (%)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Share of clients (CDF)")
    axes[-1].legend(fontsize=8, loc="upper left")
    _save(plt, fig, path)


def synthetic_cdf_figure(results: dict[str, Any], path: Path) -> None:
    """Fig. 4: the CDF of the clients' test accuracy of IP-FL and FedSoft, synthetic data."""
    _accuracy_cdfs(results, path, "synthetic", "fedsoft", "Synthetic {mixture}")


def emnist_cdf_figure(results: dict[str, Any], path: Path) -> None:
    """Fig. 6: the CDF of the clients' personalised test accuracy of IP-FL and Ditto, EMNIST."""
    _accuracy_cdfs(results, path, "emnist", "ditto", "EMNIST {mixture} (Fig. 6)")


def settings_table(results: dict[str, Any], names: list[str]) -> str:
    """Per method and comparison: accuracy (%), mean PMA (pp), PMA > 0 and opt-outs (%)."""
    lines = [
        "| method | " + " | ".join(f"{n}: acc., PMA, PMA > 0, opt-outs, lr" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    methods = [r["method"] for r in results[names[0]]["rows"]]
    for i, method in enumerate(methods):
        cells = []
        for name in names:
            r = results[name]["rows"][i]
            cells.append(
                f"{100 * r['personalised_accuracy_mean']:.1f}, {r['pma_mean']:+.1f}, "
                f"{100 * r['pma_positive_share']:.0f}, {100 * r['opt_out_rate']:.0f}, {r['lr']:g}"
            )
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def clusters_table(results: dict[str, Any]) -> str:
    """Synthetic data: each method's cluster models' accuracy (%) on θ0 / θ1 (Tables 2, 7-9)."""
    names = [f"synthetic-{m}" for m in MIXTURES if f"synthetic-{m}" in results]
    lines = [
        "| method | " + " | ".join(f"{n}: c0 on θ0/θ1; c1 on θ0/θ1" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for i, row in enumerate(results[names[0]]["rows"]):
        if row["cluster_accuracy"] is None:
            continue
        cells = []
        for name in names:
            acc = np.asarray(results[name]["rows"][i]["cluster_accuracy"])
            cells.append(
                "; ".join("/".join(f"{100 * a:.1f}" for a in acc[k]) for k in range(len(acc)))
            )
        lines.append(f"| {row['method']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
