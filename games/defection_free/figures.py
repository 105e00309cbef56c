"""Figures 3.1-3.8 of Werner (2024), Chapter 3: the numbers behind them and the plots.

Figures 3.1-3.3 (§3.3-3.4, pp. 62-69) show runs of the collaboration schemes
(:class:`games.defection_free.PlayReport` of each, from real training or the convex toy);
Figures 3.4-3.8 (§3.7, pp. 70-79) are the chapter's closed forms. :func:`write_figures`
saves each figure as PNG and its numbers as CSV. matplotlib is imported only when plotting.

The run figures draw the market's revenues
(:data:`games.defection_free.REVENUE_CONVENTION`: roles by current quality, never negative).
The thesis evaluates (3.4) with fixed firm labels, so after the low firm overtakes (Fig.
3.2a) its high firm's revenue is negative; those numbers are drawn too wherever they differ,
and written to the CSV as ``U_l_as_plotted_in_the_thesis`` and
``U_h_as_plotted_in_the_thesis``, labelled as plotted in the thesis. Fig. 3.3's last panel
draws its reference at :math:`N(q_l^*, q_h^*)`, as the thesis does, and marks the rounds
outside the individually rational set.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from econ import bargaining, duopoly, quality_caps
from games.defection_free import PlayReport, fixed_label_revenues

#: Which scheme each run figure shows, and its title (the captions of Figs. 3.1-3.3).
RUN_FIGURES = {
    "fig3_1": ("complete", "Complete collaboration"),
    "fig3_2a": ("one-sided-low", "Only the high-quality firm shares (the low firm benefits)"),
    "fig3_2b": ("one-sided-high", "Only the low-quality firm shares (the high firm benefits)"),
    "fig3_3": ("defection-free", "Defection-free collaborative learning"),
}


def _columns(rep: PlayReport) -> dict[str, np.ndarray]:
    return {k: np.array([r[k] for r in rep.rows]) for k in rep.rows[0]}


def run_figure_data(rep: PlayReport) -> dict[str, np.ndarray]:
    """The columns of a run figure: the report's rows, then (3.4) with fixed firm labels.

    ``U_l_as_plotted_in_the_thesis`` and ``U_h_as_plotted_in_the_thesis`` are what the
    thesis's Figs. 3.1-3.3 plot; they equal ``U_l`` and ``U_h`` except in rounds where the
    low firm's model is the better one (``swapped``), where the thesis's high firm has a
    negative revenue.

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.3-3.4, Figures
    3.1-3.3 (the plotted quantities) and (3.4).
    """
    c = _columns(rep)
    fixed_l, fixed_h = fixed_label_revenues(c["q_l"], c["q_h"])
    return {
        **c,
        "U_l_as_plotted_in_the_thesis": fixed_l,
        "U_h_as_plotted_in_the_thesis": fixed_h,
    }


def fig3_4_data(points: int = 200, curves: int = 25) -> dict[str, np.ndarray]:
    """U_l and U_h against one quality, one curve per value of the other (Fig. 3.4).

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.7, Figure 3.4
    (the plotted quantity, (3.4)).
    """
    grid = np.linspace(0.0, 1.0, points)
    other = np.linspace(0.0, 1.0, curves)
    qh_fixed = np.maximum(other[:, None], grid[None, :])  # x-axis q_l, curves q_h >= q_l
    ql_fixed = np.minimum(other[:, None], grid[None, :])  # x-axis q_h, curves q_l <= q_h
    ul_a, uh_a = duopoly.revenues(np.broadcast_to(grid, qh_fixed.shape), qh_fixed)
    ul_b, uh_b = duopoly.revenues(ql_fixed, np.broadcast_to(grid, ql_fixed.shape))
    return {
        "grid": grid,
        "other": other,
        "U_l_vs_ql": ul_a,
        "U_h_vs_ql": uh_a,
        "U_l_vs_qh": ul_b,
        "U_h_vs_qh": uh_b,
    }


def fig3_5_data(points: int = 1000, curves: int = 100) -> dict[str, np.ndarray]:
    """B(a, b) against a, for b in linspace(1, 100, curves) (Fig. 3.5: B(a, b) >= a).

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.7, Figure 3.5 and
    Lemma 24 (:math:`B(a, b)` of Algorithm 5, line 8).
    """
    a = np.linspace(0.0, 0.99, points)
    b = np.linspace(1.0, 100.0, curves)
    return {"a": a, "b": b, "B": quality_caps.cap_ratio(a[None, :], b[:, None])}


def fig3_6_data(points: int = 4000, curves: int = 15) -> dict[str, np.ndarray]:
    """B(a, b) - a against b on [1, 1.2], the first crossings b_a and b~ (Fig. 3.6).

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.7, Figure 3.6
    (the plotted quantity).
    """
    b = np.linspace(1.0, 1.2, points)
    a = np.linspace(0.0, 0.95, curves)
    b_a = np.array([quality_caps.b_rho(float(x)) for x in a])
    b_t, a_t = quality_caps.b_tilde()
    return {
        "b": b,
        "a": a,
        "B_minus_a": quality_caps.cap_ratio(a[:, None], b[None, :]) - a[:, None],
        "b_a": b_a,
        "b_tilde": np.array([b_t, a_t]),
    }


def fig3_7_data(points: int = 25) -> dict[str, np.ndarray]:
    """q_h0 10^((rho* - rho_0)/(4 - 5 rho*)) against q_h0; <= 1 is Fig. 3.7's inequality.

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.7, Figure 3.7
    (the plotted inequality).
    """
    g = np.linspace(0.0, 0.99, points)
    ql0, qh0 = (v.ravel() for v in np.meshgrid(g, g, indexing="ij"))
    keep = qh0 > ql0
    ql0, qh0 = ql0[keep], qh0[keep]
    r = bargaining.duopoly_nash_solution(ql0, qh0, allow_lower=True).rho_star
    value = qh0 * 10 ** ((r - ql0 / qh0) / (4 - 5 * r))
    return {"q_l0": ql0, "q_h0": qh0, "value": value}


def fig3_8_data(points: int = 400, grid: int = 10) -> dict[str, np.ndarray]:
    """N(q_l, q_h = 1) against q_l for starts with rho* >= rho_0 (Fig. 3.8).

    ``N`` is drawn over all of [0, 1], as plotted in the thesis; ``individually_rational``
    marks the points where neither firm is below its starting revenue. Near :math:`q_l = 1`
    both revenues are below their starts, so ``N`` is positive there without being a gain.

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, §3.7, Figure 3.8
    (the plotted quantity, the Nash objective :math:`N` of §3.4).
    """
    g = np.linspace(0.05, 0.95, grid)
    ql0, qh0 = (v.ravel() for v in np.meshgrid(g, g, indexing="ij"))
    keep = qh0 > ql0
    ql0, qh0 = ql0[keep], qh0[keep]
    sol = bargaining.duopoly_nash_solution(ql0, qh0, allow_lower=True)
    keep = sol.rho_star >= ql0 / qh0
    ql0, qh0 = ql0[keep], qh0[keep]
    q = np.linspace(0.0, 1.0, points)
    n = bargaining.nash_product(q[None, :], 1.0, ql0[:, None], qh0[:, None])
    ul, uh = duopoly.revenues(q[None, :], 1.0)
    ul0, uh0 = duopoly.revenues(ql0[:, None], qh0[:, None])
    return {
        "q_l": q,
        "q_l0": ql0,
        "q_h0": qh0,
        "N": n,
        "individually_rational": (ul >= ul0) & (uh >= uh0),
        "q_l_star": sol.q_l_star[keep],
        "N_star": sol.nash_product[keep],
    }


def _save_csv(path: Path, columns: Mapping[str, np.ndarray]) -> None:
    flat = {k: np.ravel(v) for k, v in columns.items()}
    n = max(v.size for v in flat.values())
    names = list(flat)
    rows = [[f"{flat[k][i]:.10g}" if i < flat[k].size else "" for k in names] for i in range(n)]
    path.write_text(",".join(names) + "\n" + "\n".join(",".join(r) for r in rows) + "\n")


def run_figure(plt: Any, rep: PlayReport, title: str, full: bool) -> Any:
    """The figure of one run drawn with ``plt`` (matplotlib.pyplot).

    Qualities and revenues; with ``full`` also the revenue gains and the Nash product against its
    value at the solution.

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, Figures 3.1-3.3
    (§3.3-3.4).
    """
    c = run_figure_data(rep)
    t = c["t"] + 1
    fig, axes = plt.subplots(1, 4 if full else 2, figsize=(16 if full else 9, 3.6))
    axes[0].plot(t, c["q_l"], label="$q_l$")
    axes[0].plot(t, c["q_h"], label="$q_h$")
    if full:
        axes[0].plot(t, c["rho"], label=r"$\rho_t$")
        axes[0].axhline(rep.rho_star, ls="--", c="grey", label=r"$\rho^*$")
    axes[0].set(xlabel="t", ylabel="Quality")
    for key, name in (("U_l", "$U_l$"), ("U_h", "$U_h$")):
        (line,) = axes[1].plot(t, c[key], label=name)
        axes[1].axhline(c[key][-1], ls="--", c=line.get_color(), label=f"final {c[key][-1]:.4f}")
        fixed = c[f"{key}_as_plotted_in_the_thesis"]
        if not np.allclose(fixed, c[key], rtol=0.0, atol=1e-15):
            axes[1].plot(
                t, fixed, ls=":", c=line.get_color(), label=f"{name}, as plotted in the thesis"
            )
    axes[1].set(xlabel="t", ylabel="Revenue", ylim=(-0.3, 0.3))
    if full:
        axes[2].plot(t, c["U_l"] - c["U_l"][0], label="$U_l - U_{l,0}$")
        axes[2].plot(t, c["U_h"] - c["U_h"][0], label="$U_h - U_{h,0}$")
        axes[2].set(xlabel="t", ylabel="Revenue gain")
        axes[3].plot(t, c["nash_product"], label="$N(q_l, q_h)$")
        outside = ~c["individually_rational"].astype(bool)
        if outside.any():
            axes[3].plot(
                t[outside],
                c["nash_product"][outside],
                "x",
                c="red",
                label="outside the individually rational set",
            )
        axes[3].axhline(rep.nash_star, ls="--", c="grey", label="$N(q_l^*, q_h^*)$")
        low = min(0.0, float(c["nash_product"].min()))
        high = max(rep.nash_star, float(c["nash_product"].max()))
        pad = 0.05 * (high - low) or 1e-6
        axes[3].set(xlabel="t", ylabel="Nash product", ylim=(low - pad, high + pad))
    for ax in axes:
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _colour_bar(plt: Any, fig: Any, ax: Any, low: float, high: float, label: str) -> Any:
    """A viridis colour scale from ``low`` to ``high`` and its colour bar beside ``ax``."""
    scale = plt.cm.ScalarMappable(norm=plt.Normalize(low, high), cmap="viridis")
    fig.colorbar(scale, ax=ax, label=label)
    return scale


def static_figures(plt: Any) -> dict[str, tuple[Any, dict[str, np.ndarray]]]:
    """Figures 3.4-3.8 drawn with ``plt`` (matplotlib.pyplot), by name, each with its numbers.

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, Figures 3.4-3.8
    (§3.4 and §3.7).
    """
    from matplotlib.lines import Line2D

    out = {}
    d = fig3_4_data()
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), layout="constrained")
    # left column: q_l on the x-axis, a curve per q_h; right column: the other way round
    by_qh = _colour_bar(plt, fig, axes[:, 0], 0.0, 1.0, "$q_h$ (one curve each)")
    by_ql = _colour_bar(plt, fig, axes[:, 1], 0.0, 1.0, "$q_l$ (one curve each)")
    for ax, key, xlabel, ylabel, ylim, scale in (
        (axes[0, 0], "U_l_vs_ql", "$q_l$", "$U_l$", 0.025, by_qh),
        (axes[0, 1], "U_l_vs_qh", "$q_h$", "$U_l$", 0.025, by_ql),
        (axes[1, 0], "U_h_vs_ql", "$q_l$", "$U_h$", 0.3, by_qh),
        (axes[1, 1], "U_h_vs_qh", "$q_h$", "$U_h$", 0.3, by_ql),
    ):
        for row, other in zip(d[key], d["other"], strict=True):
            ax.plot(d["grid"], row, c=scale.to_rgba(other), lw=0.8)
        ax.set(xlabel=xlabel, ylabel=ylabel, ylim=(0, ylim))
    fig.suptitle("Fig. 3.4: revenues against one quality, a curve per value of the other")
    out["fig3_4"] = (fig, d)

    d = fig3_5_data()
    fig, ax = plt.subplots(figsize=(6, 4.2), layout="constrained")
    scale = _colour_bar(plt, fig, ax, float(d["b"][0]), float(d["b"][-1]), "b (one curve each)")
    for row, b in zip(d["B"], d["b"], strict=True):
        ax.plot(d["a"], row, c=scale.to_rgba(b), lw=0.6)
    ax.plot(d["a"], d["a"], "k--", label="$B = a$")
    ax.set(xlabel="a", ylabel="B(a, b)", title="Fig. 3.5: B(a, b) >= a for all b >= 1")
    ax.legend(
        handles=[Line2D([], [], c="grey", lw=0.8, label="B(a, b)"), *ax.get_lines()[-1:]],
        loc="lower right",
    )
    out["fig3_5"] = (fig, d)

    d = fig3_6_data()
    fig, ax = plt.subplots(figsize=(6.5, 4.5), layout="constrained")
    scale = _colour_bar(plt, fig, ax, float(d["a"][0]), float(d["a"][-1]), "a (one curve each)")
    for row, a, b_a in zip(d["B_minus_a"], d["a"], d["b_a"], strict=True):
        colour = scale.to_rgba(a)
        ax.plot(d["b"], row, c=colour, lw=0.8)
        if np.isfinite(b_a) and b_a <= 1.2:
            ax.plot(b_a, float(quality_caps.cap_ratio(a, b_a)) - a, "o", c="green", ms=3)
        ax.plot(d["b"], (4 - 5 * a) * np.log10(d["b"]), ls=":", c=colour, lw=0.6)
    tilde = ax.axvline(d["b_tilde"][0], ls="--", c="grey")
    ax.legend(
        handles=[
            Line2D([], [], c="grey", lw=0.8, label="$B(a, b) - a$"),
            Line2D([], [], c="grey", ls=":", lw=0.8, label=r"$(4 - 5a) \log_{10} b$"),
            Line2D([], [], ls="", marker="o", c="green", ms=3, label="$b_a$: first crossing"),
            Line2D(
                [], [], c=tilde.get_color(), ls="--", label=rf"$\tilde b$ = {d['b_tilde'][0]:.4f}"
            ),
        ],
        loc="upper left",
        fontsize=8,
    )
    ax.set(xlabel="b", ylabel="B(a, b) - a", xlim=(1, 1.2), ylim=(0, 0.4), title="Fig. 3.6")
    out["fig3_6"] = (fig, d)

    d = fig3_7_data()
    fig, ax = plt.subplots(figsize=(6, 4.2), layout="constrained")
    sc = ax.scatter(d["q_h0"], d["value"], c=d["q_l0"], s=6, label="a start $(q_{l,0}, q_{h,0})$")
    fig.colorbar(sc, label="$q_{l,0}$")
    ax.axhline(1.0, ls="--", c="grey", label="1: the inequality holds below")
    ax.set(
        xlabel="$q_{h,0}$",
        ylabel=r"$q_{h,0} 10^{(\rho^*-\rho_0)/(4-5\rho^*)}$",
        ylim=(0, 2),
        title="Fig. 3.7",
    )
    ax.legend(loc="upper left", fontsize=8)
    out["fig3_7"] = (fig, d)

    d = fig3_8_data()
    fig, ax = plt.subplots(figsize=(6.5, 4.5), layout="constrained")
    rho0 = d["q_l0"] / d["q_h0"]
    scale = _colour_bar(
        plt, fig, ax, 0.0, float(rho0.max()), r"$\rho_0 = q_{l,0}/q_{h,0}$ (one curve each)"
    )
    for row, r in zip(d["N"], rho0, strict=True):
        ax.plot(d["q_l"], row, c=scale.to_rgba(r), lw=0.7)
    ax.plot(d["q_l_star"], d["N_star"], "o", c="green", ms=3, label="$(q_l^*, N^*)$ of each start")
    ax.axvline(0.43, ls="--", c="grey", label=r"$q_l = 0.43$ (Lemma 25: $\rho^* \leq 0.43$)")
    ax.set(xlabel="$q_l$", ylabel="$N(q_l, 1)$", ylim=(-0.004, 0.004), title="Fig. 3.8")
    ax.legend(
        handles=[
            Line2D([], [], c="grey", lw=0.7, label="$N(q_l, 1)$ of a start"),
            *ax.get_lines()[-2:],
        ],
        loc="lower left",
        fontsize=8,
    )
    out["fig3_8"] = (fig, d)
    return out


def write_figures(reports: Mapping[str, PlayReport], out: str | Path) -> list[str]:
    """Save Figures 3.1-3.8 (PNG) and their numbers (CSV) under ``out``; return the paths.

    ``reports`` maps scheme names to runs; run figures whose scheme is missing are skipped.

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3, Figures 3.1-3.8
    (§3.3-3.4 and §3.7).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (scheme, title) in RUN_FIGURES.items():
        if scheme not in reports:
            continue
        fig = run_figure(
            plt,
            reports[scheme],
            f"Fig. {name[3:].replace('_', '.')}: {title}",
            full=scheme == "defection-free",
        )
        fig.savefig(directory / f"{name}.png", dpi=110)
        plt.close(fig)
        _save_csv(directory / f"{name}.csv", run_figure_data(reports[scheme]))
        written += [str(directory / f"{name}.png"), str(directory / f"{name}.csv")]
    for name, (fig, data) in static_figures(plt).items():
        fig.savefig(directory / f"{name}.png", dpi=110)
        plt.close(fig)
        _save_csv(directory / f"{name}.csv", data)
        written += [str(directory / f"{name}.png"), str(directory / f"{name}.csv")]
    return written
