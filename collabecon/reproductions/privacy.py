r"""Tsoy et al. (2024), section 6, Figure 1 (``collabecon privacy figure1``), reproduced.

Every claim the paper makes about the figure, measured next to published.

Section 6 compares, for N = 5 clients with :math:`\lambda_i = e^{\omega_i}`,
:math:`\omega_i \sim N(m, 1)`, the protocol effectiveness :math:`\Gamma/\Gamma^*` of the
symmetric family :math:`\beta_i = b` with the personalised families of Theorem 4.2 (DP mean,
:math:`\beta_i = \zeta_i b`) and Theorem 4.9 (Bayesian, :math:`\beta_i = \max(\xi_i, 0) b`).
Its claims:

* DP mean (upper panel): "the personalized version of the protocol is always more beneficial
  than the symmetric version, especially for small :math:`\lambda`";
* Bayesian (lower panel): "the personalized version ... is more efficient than the symmetric
  version ... for small :math:`\lambda`. However, for large :math:`\lambda` the trend is
  reversed".

The paper prints no number for Figure 1 (no table, no value in the text), so ``published`` is
the claim's comparison. "Small" and "large" :math:`\lambda` are read as the lower and upper
halves of each panel's m-grid (below and above its midpoint); "especially for small
:math:`\lambda`" as the relative advantage :math:`(\Gamma_p - \Gamma_s)/\Gamma_p` falling as m
grows. The curves are the authors' 100-point scale scans (:mod:`econ.privacy.effectiveness`).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from econ.claims import Claim, ClaimSpec, Reproduction, evaluate
from econ.privacy.effectiveness import Panel, effectiveness_panels

__all__ = ["CLAIMS", "SETTINGS", "claims", "measure", "reproduce", "run_figure1", "write_figure1"]

PAPER = "Tsoy et al. 2024, section 6, Fig. 1"
#: scale -> draws per grid point: the authors' notebook (300) and the paper's text (1000).
SETTINGS = {"small": 300, "paper": 1000}
#: The authors' notebook seed.
SEED = 179


def _pooled(panels: Sequence[Panel], column: str) -> tuple[np.ndarray, np.ndarray]:
    """Mean over streams of a column's per-m means, and the standard error of that mean."""
    means = np.array([p.columns[column][0] for p in panels])
    ses = np.array([p.columns[column][1] for p in panels])
    return means.mean(axis=0), np.sqrt((ses**2).sum(axis=0)) / len(panels)


def measure(streams: Sequence[tuple[Panel, Panel]]) -> dict[str, Any]:
    """Per panel: m, personalised and symmetric means, and the per-stream differences.

    The means (and their standard errors) are pooled over the independent streams.
    """
    out: dict[str, Any] = {"streams": len(streams)}
    for k, model in enumerate(("dp-mean", "bayes")):
        panels = [s[k] for s in streams]
        pers, pers_se = _pooled(panels, "personalised")
        sym, sym_se = _pooled(panels, "symmetric")
        optimum, _ = _pooled(panels, "optimum")
        out[model] = {
            "m": panels[0].log_lam_mean,
            "personalised": pers,
            "personalised_se": pers_se,
            "symmetric": sym,
            "symmetric_se": sym_se,
            "optimum": optimum,
            "difference_per_stream": [
                p.columns["personalised"][0] - p.columns["symmetric"][0] for p in panels
            ],
        }
    return out


def _crossing(m: np.ndarray, diff: np.ndarray) -> float | None:
    """First m where the difference changes sign, linearly interpolated (None without one)."""
    for k in range(diff.size - 1):
        if diff[k] > 0 >= diff[k + 1] or diff[k] < 0 <= diff[k + 1]:
            return float(m[k] + (m[k + 1] - m[k]) * diff[k] / (diff[k] - diff[k + 1]))
    return None


def _cells(m: np.ndarray, values: np.ndarray) -> dict[str, float]:
    return {f"m={x:g}": round(float(v), 4) for x, v in zip(m, values, strict=True)}


def _dp(data: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The DP panel's m-grid and personalised minus symmetric effectiveness."""
    dp = data["dp-mean"]
    return dp["m"], dp["personalised"] - dp["symmetric"]


def _dp_relative(data: dict[str, Any]) -> np.ndarray:
    """The DP panel's relative advantage (personalised - symmetric) / personalised."""
    _, diff = _dp(data)
    pers = data["dp-mean"]["personalised"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(pers > 0, diff / pers, 0.0))


def _bayes(data: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, float]:
    """The Bayesian panel's m-grid, personalised minus symmetric, and the grid's midpoint."""
    bayes = data["bayes"]
    m = bayes["m"]
    return m, bayes["personalised"] - bayes["symmetric"], 0.5 * (m[0] + m[-1])


def _halves(data: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The Bayesian grid and difference below and above the midpoint: m and diff, twice."""
    m, diff, mid = _bayes(data)
    return m[m < mid], diff[m < mid], m[m > mid], diff[m > mid]


def _sign_changes(data: dict[str, Any]) -> int:
    return int(np.count_nonzero(np.diff(np.sign(_bayes(data)[1])) != 0))


def _spread(data: dict[str, Any]) -> str:
    return f"{data['streams']} stream(s) of draws; standard errors over draws in the body"


_UPPER = f"{PAPER} upper half; section 6, DP Mean Estimation paragraph"
_LOWER = f"{PAPER} lower half; section 6, Bayesian Mean Estimation paragraph"

#: The claims of section 6 about Figure 1, on the numbers :func:`measure` returns.
CLAIMS: tuple[ClaimSpec, ...] = (
    ClaimSpec(
        id="fig1.dp.personalised_always_better",
        statement="the personalized version of the protocol is always more beneficial than "
        "the symmetric version",
        where=_UPPER,
        published="personalised > symmetric at every m",
        measured=lambda d: _cells(*_dp(d)),
        holds=lambda d: np.all(_dp(d)[1] > 0),
        note=lambda d: f"personalised - symmetric Gamma/Gamma* per m; {_spread(d)}",
    ),
    ClaimSpec(
        id="fig1.dp.especially_small_lambda",
        statement="the personalized version is more beneficial especially for small lambda",
        where=_UPPER,
        published="(personalised - symmetric) / personalised falls as m grows",
        measured=lambda d: _cells(_dp(d)[0], _dp_relative(d)),
        holds=lambda d: np.all(np.diff(_dp_relative(d)) <= 0),
        note=lambda d: (
            "relative advantage per m; the absolute advantage peaks at m = "
            f"{float(_dp(d)[0][int(np.argmax(_dp(d)[1]))]):g}"
        ),
    ),
    ClaimSpec(
        id="fig1.bayes.personalised_better_small_lambda",
        statement="the personalized version of the protocol is more efficient than the "
        "symmetric version for small lambda",
        where=_LOWER,
        published=lambda d: f"personalised > symmetric for m < {_bayes(d)[2]:g}",
        measured=lambda d: _cells(*_halves(d)[:2]),
        holds=lambda d: np.all(_halves(d)[1] > 0),
        note=lambda d: (
            "personalised - symmetric per m in the lower half of the grid; " + _spread(d)
        ),
    ),
    ClaimSpec(
        id="fig1.bayes.reversed_large_lambda",
        statement="for large lambda the trend is reversed",
        where=_LOWER,
        published=lambda d: f"symmetric > personalised for m > {_bayes(d)[2]:g}",
        measured=lambda d: _cells(_halves(d)[2], -_halves(d)[3]),
        holds=lambda d: np.all(_halves(d)[3] < 0),
        note=lambda d: (
            "symmetric - personalised per m in the upper half of the grid; " + _spread(d)
        ),
    ),
    ClaimSpec(
        id="fig1.bayes.one_reversal",
        statement="the personalized version is better for small lambda and the symmetric for "
        "large lambda: the curves cross once",
        where=_LOWER,
        published="one crossing",
        measured=lambda d: {
            "crossing m": _crossing(*_bayes(d)[:2]),
            "sign changes": _sign_changes(d),
        },
        holds=lambda d: _sign_changes(d) == 1,
        note="the paper gives no crossing point; m interpolated linearly",
    ),
)


def claims(data: dict[str, Any]) -> list[Claim]:
    """The claims of section 6 about Figure 1 (:data:`CLAIMS`) on ``data``."""
    return evaluate(CLAIMS, data)


def write_figure1(out: Path, streams: Sequence[tuple[Panel, Panel]]) -> tuple[Path, Path]:
    """Write ``figure1.csv`` and ``figure1.png`` in ``out``.

    The CSV has one row per stream, panel and m; the PNG shows the first stream, as the paper
    draws it.
    """
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for k, panels in enumerate(streams):
        for panel in panels:
            rows += [{"stream": k, **r} if len(streams) > 1 else r for r in panel.rows()]
    first = ("stream", "panel", "log_lam_mean")
    header = sorted({key for r in rows for key in r}, key=lambda c: (c not in first, c))
    header = [c for c in first if c in header] + [c for c in header if c not in first]
    csv_path, png_path = out / "figure1.csv", out / "figure1.png"
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    _plot(streams[0], png_path)
    return csv_path, png_path


def _plot(panels: tuple[Panel, Panel], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    titles = {"dp-mean": "DP mean estimation", "bayes": "Bayesian mean estimation"}
    styles = {  # name: (label, line style, colour)
        "personalised": ("personalized (grid scan)", "-o", "C0"),
        "symmetric": ("symmetric (grid scan)", "-s", "C1"),
        "personalised_exact": ("personalized family, exact scale", ":", "C0"),
        "symmetric_exact": ("symmetric family, exact scale", ":", "C1"),
        "optimum": ("optimum over all protocols", "--^", "C3"),
    }
    fig, axes = plt.subplots(2, 1, figsize=(6.5, 8), sharey=True)
    for ax, panel in zip(axes, panels, strict=True):
        for name, (mean, se) in panel.columns.items():
            label, style, colour = styles[name]
            ax.errorbar(
                panel.log_lam_mean,
                mean,
                yerr=se,
                fmt=style,
                color=colour,
                capsize=2,
                label=label,
                markersize=4,
            )
        ax.set_title(titles[panel.model])
        ax.set_xlabel(r"Mean accuracy importance ($\mathbf{E}\,\ln\lambda$)")
        ax.set_ylabel(r"Protocol effectiveness ($\Gamma/\Gamma^*$)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _body(data: dict[str, Any], repetitions: int, seeds: Sequence[int]) -> str:
    lines = [
        f"N = 5, n = 100, sigma = 10 (rho = 1); DP: B = 20; Bayes: tau = 1; {repetitions} draws "
        f"per m (the paper: 1000, the authors' notebook: 300); seed(s) {', '.join(map(str, seeds))}"
        " (the notebook's: 179). Gamma/Gamma*, mean ± standard error over draws; the optimum "
        "is the largest Gamma over all mutually beneficial protocols.",
    ]
    for model, title in (("dp-mean", "DP mean"), ("bayes", "Bayesian")):
        d = data[model]
        lines += [
            "",
            f"{title}:",
            "",
            "| m | personalised | symmetric | optimum |",
            "|---|---|---|---|",
        ]
        for k, x in enumerate(d["m"]):
            lines.append(
                f"| {x:g} | {d['personalised'][k]:.4f} ± {d['personalised_se'][k]:.4f} "
                f"| {d['symmetric'][k]:.4f} ± {d['symmetric_se'][k]:.4f} "
                f"| {d['optimum'][k]:.4f} |"
            )
    return "\n".join(lines)


def run_figure1(
    out: str | Path,
    repetitions: int = 1000,
    seeds: Sequence[int] = (SEED,),
    progress: Callable[[], None] = lambda: None,
    *,
    name: str = "privacy",
) -> Reproduction:
    """Figure 1 from one stream per seed in ``seeds``, written to ``out``, with its claims."""
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    streams = [effectiveness_panels(repetitions, s, progress=progress) for s in seeds]
    csv_path, png_path = write_figure1(Path(out), streams)
    data = measure(streams)
    rows = [r for panels in streams for panel in panels for r in panel.rows()]
    return Reproduction(
        name=name,
        title="Tsoy et al. (2024), section 6: personalised vs symmetric protocols, Figure 1",
        claims=tuple(claims(data)),
        body=_body(data, repetitions, seeds),
        figures=(png_path.name,),
        data={
            "repetitions": repetitions,
            "seeds": list(seeds),
            "png": str(png_path),
            "csv": str(csv_path),
            "rows": rows,
        },
    )


def reproduce(scale: str, out: Path, seeds: int | None = None) -> Reproduction:
    """Figure 1 at ``scale`` from ``seeds`` independent streams.

    Small: 300 draws per m, the notebook's; paper: 1000. The streams are seeds 179, 180, ...
    (one unless given).
    """
    if scale not in SETTINGS:
        raise ValueError(f"scale must be one of {', '.join(SETTINGS)}, got {scale!r}")
    if seeds is not None and seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds}")
    streams = tuple(SEED + k for k in range(seeds or 1))
    return run_figure1(out, SETTINGS[scale], streams)
