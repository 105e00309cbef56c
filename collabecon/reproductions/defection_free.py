"""Werner (2024), ch. 3 experiments (section 3.5, Figures 3.1-3.3): every claim the thesis
makes about its collaboration schemes on MNIST, measured next to published.

Two competing firms train LeNet-5 on label-skewed halves of MNIST and collaborate under four
schemes (section 3.3 and Algorithm 5). The thesis claims, in the captions of Figures 3.1-3.3
and the text of sections 3.3 and 3.5:

* complete collaboration (Fig. 3.1): both qualities improve, the models converge to the same
  quality, and both revenues are driven to zero;
* only the high firm shares (Fig. 3.2a): the low firm's model out-performs the high firm's, and
  the high firm's revenue decreases, becoming negative (eq. 3.4 with fixed firm labels);
* only the low firm shares (Fig. 3.2b): both revenues increase, and both stay positive but
  below those of defection-free collaboration;
* defection-free collaboration (Fig. 3.3, Proposition 3): no revenue decreases in any round,
  both qualities increase, the quality ratio converges to :math:`\\rho^*`, the revenues end above
  those of one-sided collaboration (only the low firm shares), and the Nash bargaining objective
  approaches its maximum.

The thesis prints no number for these experiments; ``published`` is the claim's comparison.
"Converges" and "approaches" are judged at :data:`RHO_TOLERANCE` (relative distance of the
final ratio to :math:`\\rho^*`) and :data:`NASH_TOLERANCE` (relative gap of the final Nash
product, counted only inside the individually rational set); "driven to zero" and "converge
to the same quality" at :data:`ZERO_FRACTION` of the starting revenue or quality gap. Revenues
are the market's (:data:`games.defection_free.REVENUE_CONVENTION`) except where a claim names
the thesis's fixed firm labels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from econ.claims import Claim, Reproduction

__all__ = [
    "NASH_TOLERANCE",
    "RHO_TOLERANCE",
    "SETTINGS",
    "ZERO_FRACTION",
    "claims",
    "merge_seeds",
    "reproduce",
]

PAPER = "Werner 2024, ch. 3"
#: "rho_t converges to rho*": final |rho_T - rho*| / rho* at most this.
RHO_TOLERANCE = 0.05
#: "the Nash bargaining objective approaches its maximum": relative gap at most this.
NASH_TOLERANCE = 0.05
#: "driven to zero" / "converge to the same quality": below this fraction of the start.
ZERO_FRACTION = 0.1
#: scale -> the experiment's settings (examples per firm, balanced target examples per class,
#: rounds): "small" is the demo's size and rounds with a larger target set (``collabecon
#: demo`` measures on 30 examples per class); "paper" is section 3.5's 1000 examples per firm.
SETTINGS: dict[str, dict[str, int]] = {
    "small": {"size": 500, "target_per_class": 50, "rounds": 15},
    "paper": {"size": 1000, "target_per_class": 200, "rounds": 30},
}


def _ends(rep: Any, key: str) -> tuple[float, float]:
    return float(rep.rows[0][key]), float(rep.rows[-1][key])


def _fixed_label_high_revenue(rep: Any) -> float:
    """The high firm's final revenue under eq. (3.4) with fixed labels (as the thesis plots)."""
    from games.defection_free.figures import run_figure_data

    return float(run_figure_data(rep)["U_h_as_plotted_in_the_thesis"][-1])


def claims(reports: Mapping[str, Any]) -> list[Claim]:
    """The thesis's claims about the schemes in ``reports`` (a :class:`PlayReport` per scheme
    name); claims about a scheme that did not run are left out."""
    out: list[Claim] = []
    full = reports.get("complete")
    if full is not None:
        out += _complete(full)
    low = reports.get("one-sided-low")
    if low is not None:
        out += _only_high_shares(low)
    df, high = reports.get("defection-free"), reports.get("one-sided-high")
    if high is not None:
        out += _only_low_shares(high, df)
    if df is not None:
        out += _defection_free(df, high)
    return out


def _qualities_rise(
    where: str, claim: str, statement: str, low: tuple[float, float], high: tuple[float, float]
) -> Claim:
    """Both firms' qualities end above their start: ``low`` and ``high`` are (first, last)."""
    (l0, l1), (h0, h1) = low, high
    return Claim(
        where,
        claim,
        statement,
        None,
        {"q_l": f"{l0:.3f} -> {l1:.3f}", "q_h": f"{h0:.3f} -> {h1:.3f}"},
        l1 > l0 and h1 > h0,
    )


def _complete(rep: Any) -> list[Claim]:
    where = f"{PAPER}, Fig. 3.1 and section 3.3"
    (l0, l1), (h0, h1) = _ends(rep, "q_l"), _ends(rep, "q_h")
    (a0, a1), (b0, b1) = _ends(rep, "U_l"), _ends(rep, "U_h")
    gap0, gap1 = abs(h0 - l0), abs(h1 - l1)
    return [
        _qualities_rise(
            where,
            "fig3.1.qualities_improve",
            "under complete collaboration both firms' qualities improve",
            (l0, l1),
            (h0, h1),
        ),
        Claim(
            where,
            "fig3.1.same_quality",
            "when both firms share with each other, their models converge to the same quality",
            0.0,
            gap1,
            gap1 <= ZERO_FRACTION * gap0,
            note=f"|q_h - q_l| {gap0:.4f} -> {gap1:.4f}; held at {ZERO_FRACTION:g} of the "
            "starting gap",
        ),
        Claim(
            where,
            "fig3.1.revenues_to_zero",
            "their utilities (revenues) are driven to zero",
            0.0,
            {"U_l": a1, "U_h": b1},
            max(a1, b1) <= ZERO_FRACTION * b0,
            note=f"U_l {a0:.4g} -> {a1:.4g}, U_h {b0:.4g} -> {b1:.4g}; held at "
            f"{ZERO_FRACTION:g} of the high firm's starting revenue",
        ),
    ]


def _only_high_shares(rep: Any) -> list[Claim]:
    where = f"{PAPER}, Fig. 3.2a and section 3.3"
    l1, h1 = rep.rows[-1]["q_l"], rep.rows[-1]["q_h"]
    b0 = float(rep.rows[0]["U_h"])
    fixed = _fixed_label_high_revenue(rep)
    return [
        Claim(
            where,
            "fig3.2a.low_outperforms",
            "when only the high-quality firm shares, the low-quality firm's model out-performs "
            "the high-quality firm's model",
            "q_l > q_h",
            {"q_l": l1, "q_h": h1},
            l1 > h1,
        ),
        Claim(
            where,
            "fig3.2a.high_revenue_negative",
            "the high-quality firm's revenue decreases and becomes negative",
            "< 0",
            fixed,
            fixed < 0 < b0,
            note=f"eq. (3.4) with fixed firm labels, as the thesis plots; starting revenue "
            f"{b0:.4g}",
        ),
    ]


def _only_low_shares(rep: Any, df: Any | None) -> list[Claim]:
    where = f"{PAPER}, Fig. 3.2b and section 3.3"
    (a0, a1), (b0, b1) = _ends(rep, "U_l"), _ends(rep, "U_h")
    out = [
        Claim(
            where,
            "fig3.2b.both_revenues_rise",
            "when only the low-quality firm shares, over time both firms' revenues increase",
            None,
            {"U_l": f"{a0:.4g} -> {a1:.4g}", "U_h": f"{b0:.4g} -> {b1:.4g}"},
            a1 > a0 and b1 > b0,
        )
    ]
    if df is not None:
        d_l, d_h = float(df.rows[-1]["U_l"]), float(df.rows[-1]["U_h"])
        out.append(
            Claim(
                where,
                "fig3.2b.positive_but_less",
                "both firms have positive, but less, revenue than with defection-free "
                "collaboration",
                "0 < one-sided < defection-free",
                {"U_l": f"{a1:.4g} vs {d_l:.4g}", "U_h": f"{b1:.4g} vs {d_h:.4g}"},
                0 < a1 < d_l and 0 < b1 < d_h,
                note="final revenues, one-sided vs defection-free",
            )
        )
    return out


def _defection_free(rep: Any, high: Any | None) -> list[Claim]:
    where = f"{PAPER}, Fig. 3.3 and section 3.5"
    a = rep.audit
    (l0, l1), (h0, h1) = _ends(rep, "q_l"), _ends(rep, "q_h")
    r0, r1 = _ends(rep, "rho")
    rel_rho = abs(r1 - rep.rho_star) / rep.rho_star if rep.rho_star > 0 else float("inf")
    out = [
        Claim(
            f"{PAPER}, Proposition 3 and Fig. 3.3",
            "fig3.3.no_revenue_decrease",
            "at no step of defection-free collaboration does either firm's revenue decrease",
            ">= 0",
            {"min change U_l": a.min_change_low, "min change U_h": a.min_change_high},
            bool(a.never_decreased),
        ),
        _qualities_rise(
            where, "fig3.3.qualities_increase", "both firms' qualities increase", (l0, l1), (h0, h1)
        ),
        Claim(
            where,
            "fig3.3.rho_converges",
            "the ratio of the firms' qualities converges to the optimal ratio rho*",
            "rho_T -> rho*",
            {"rho_T": r1, "rho*": rep.rho_star},
            rel_rho <= RHO_TOLERANCE,
            note=f"rho {r0:.3f} -> {r1:.3f}; relative distance {rel_rho:.1%}, tolerance "
            f"{RHO_TOLERANCE:.0%}",
        ),
    ]
    if high is not None:
        d_l, d_h = _ends(rep, "U_l")[1], _ends(rep, "U_h")[1]
        o_l, o_h = _ends(high, "U_l")[1], _ends(high, "U_h")[1]
        out.append(
            Claim(
                where,
                "fig3.3.above_one_sided",
                "the revenues reach a higher level than under one-sided collaboration",
                "defection-free > one-sided",
                {"U_l": f"{d_l:.4g} vs {o_l:.4g}", "U_h": f"{d_h:.4g} vs {o_h:.4g}"},
                d_l > o_l and d_h > o_h,
                note="final revenues, defection-free vs only the low firm sharing",
            )
        )
    rational = bool(rep.final_individually_rational)
    rel = rep.final_nash_gap / rep.nash_max if rep.nash_max > 0 else float("inf")
    out.append(
        Claim(
            where,
            "fig3.3.nash_approaches_max",
            "the Nash bargaining objective approaches its maximal value",
            "N_T -> max N",
            {"N_T": float(rep.rows[-1]["nash_product"]), "max N": rep.nash_max},
            rational and rel <= NASH_TOLERANCE,
            note=f"relative gap {rel:.1%}, tolerance {NASH_TOLERANCE:.0%}; maximum at the best "
            "quality reached"
            + ("" if rational else "; the final point is not individually rational"),
        )
    )
    return out


def merge_seeds(per_seed: Sequence[Sequence[Claim]], seeds: Sequence[int]) -> list[Claim]:
    """One claim per id over several seeds: held when it holds on every seed, measured per
    seed."""
    if len(per_seed) == 1:
        return list(per_seed[0])
    merged = []
    for k, first in enumerate(per_seed[0]):
        runs = [cs[k] for cs in per_seed]
        held = sum(c.holds for c in runs)
        merged.append(
            Claim(
                first.paper,
                first.id,
                first.statement,
                first.published,
                {f"seed {s}": c.measured for s, c in zip(seeds, runs, strict=True)},
                held == len(runs),
                note=f"holds on {held} of {len(runs)} seeds"
                + (f"; {first.note}" if first.note else ""),
            )
        )
    return merged


def run(
    out: Path,
    *,
    size: int,
    target_per_class: int,
    rounds: int,
    seed: int = 0,
    device: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
    threads: int | None = 1,
) -> tuple[dict[str, Any], list[str]]:
    """The four schemes from one start (the demo's setup), and Figures 3.1-3.8 in ``out``.

    ``out`` is created first. ``progress`` is called with a short text as each of six phases
    starts: preparing the firms (data and the high firm's pre-training), each scheme
    (:func:`learning.drivers.defection_free.run_schemes`), the figures.

    ``threads`` caps torch's CPU threads while the firms train (restored afterwards; None
    leaves torch's setting): one by default, since LeNet-5 on minibatches of 32 and 64
    examples and a target set of a few hundred spends about four times the CPU time per
    gradient step and per evaluation on two threads (measured on two cores).

    Returns the runs (scheme name -> run with ``.report``) and the figure files written.
    """
    import torch

    from econ.validation import positive_int
    from games.defection_free.figures import write_figures
    from learning.drivers.defection_free import DuopolySetup, TorchFirms, run_schemes

    out.mkdir(parents=True, exist_ok=True)
    setup = DuopolySetup(size=size, target_per_class=target_per_class, lr=0.05, batch_size=32)
    epochs = setup.init_epochs[1]
    progress(
        f"preparing the firms: {size} examples of {setup.dataset} each, the high firm "
        f"trains alone for {epochs} epochs"
    )
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(positive_int("threads", threads))
    try:
        firms = TorchFirms.prepare(setup, seed=seed, device=device)
        runs = run_schemes(firms, rounds, seed=seed, progress=progress)
    finally:
        torch.set_num_threads(previous)
    progress("writing Figures 3.1-3.8")
    figures = write_figures({n: r.report for n, r in runs.items()}, out)
    return runs, figures


def reproduce(scale: str, out: Path, seeds: int | None = None) -> Reproduction:
    """The demo's four schemes at ``scale`` (small: 500 examples per firm, 15 rounds; paper:
    1000 per firm, 30 rounds), one seed unless ``seeds`` says otherwise; figures of the first
    seed."""
    if scale not in SETTINGS:
        raise ValueError(f"scale must be one of {', '.join(SETTINGS)}, got {scale!r}")
    if seeds is not None and seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds}")
    settings = SETTINGS[scale]
    seed_list = list(range(seeds or 1))
    per_seed, data, figures = [], {}, []
    for s in seed_list:
        runs, written = run(
            out if s == 0 else out / f"seed{s}",
            size=settings["size"],
            target_per_class=settings["target_per_class"],
            rounds=settings["rounds"],
            seed=s,
        )
        if s == 0:
            figures = [Path(f).name for f in written if f.endswith(".png")]
        reports = {n: r.report for n, r in runs.items()}
        per_seed.append(claims(reports))
        data[f"seed {s}"] = {n: r.to_dict() for n, r in runs.items()}
    table = ["| seed | scheme | q_l | q_h | U_l | U_h | welfare |", "|---|---|---|---|---|---|---|"]
    for s in seed_list:
        for name, scheme in data[f"seed {s}"].items():
            last = scheme["rounds"][-1]
            table.append(
                f"| {s} | {name} | {last['q_l']:.4f} | {last['q_h']:.4f} | {last['U_l']:.5f} "
                f"| {last['U_h']:.5f} | {last['welfare']:.5f} |"
            )
    body = (
        f"Two firms, LeNet-5 on the embedded `mnist5k` digits, {settings['size']} label-skewed "
        f"examples each (the thesis: 1000 of MNIST), {settings['rounds']} rounds per scheme, "
        f"seed(s) {', '.join(map(str, seed_list))}. Final round of each scheme (market "
        "revenues; welfare = consumer surplus + revenues):\n\n" + "\n".join(table)
    )
    return Reproduction(
        "defection_free",
        "Werner (2024), ch. 3: defection-free collaboration between two firms, Figures 3.1-3.3",
        tuple(merge_seeds(per_seed, seed_list)),
        body,
        tuple(figures),
        {"settings": settings, "seeds": seed_list, "schemes": data},
    )
