r"""Werner (2024), ch. 3 experiments (section 3.5, Figures 3.1-3.3), reproduced.

Every claim the thesis makes about its collaboration schemes on MNIST, measured next to
published.

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
  both qualities increase, the quality ratio converges to :math:`\rho^*`, the revenues end above
  those of one-sided collaboration (only the low firm shares), and the Nash bargaining objective
  approaches its maximum.

The thesis prints no number for these experiments; ``published`` is the claim's comparison.
"Converges" and "approaches" are judged at :data:`RHO_TOLERANCE` (relative distance of the
final ratio to :math:`\rho^*`) and :data:`NASH_TOLERANCE` (relative gap of the final Nash
product, counted only inside the individually rational set); "driven to zero" and "converge
to the same quality" at :data:`ZERO_FRACTION` of the starting revenue or quality gap. Revenues
are the market's (:data:`games.defection_free.REVENUE_CONVENTION`) except where a claim names
the thesis's fixed firm labels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from econ.claims import Claim, ClaimSpec, Reproduction, evaluate

__all__ = [
    "CLAIMS",
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


def _ran(*schemes: str) -> Callable[[Mapping[str, Any]], bool]:
    """Whether every scheme of ``schemes`` ran."""
    return lambda r: all(r.get(name) is not None for name in schemes)


def _qualities_rise(claim: str, statement: str, scheme: str, where: str) -> ClaimSpec:
    """Both firms' qualities end above their start under ``scheme``."""

    def rise(r: Mapping[str, Any]) -> tuple[tuple[float, float], tuple[float, float]]:
        return _ends(r[scheme], "q_l"), _ends(r[scheme], "q_h")

    return ClaimSpec(
        id=claim,
        statement=statement,
        where=where,
        measured=lambda r: {
            "q_l": "{:.3f} -> {:.3f}".format(*rise(r)[0]),
            "q_h": "{:.3f} -> {:.3f}".format(*rise(r)[1]),
        },
        holds=lambda r: rise(r)[0][1] > rise(r)[0][0] and rise(r)[1][1] > rise(r)[1][0],
        applies=_ran(scheme),
    )


def _gap(r: Mapping[str, Any]) -> tuple[float, float]:
    """|q_h - q_l| at the start and the end of complete collaboration."""
    (l0, l1), (h0, h1) = _ends(r["complete"], "q_l"), _ends(r["complete"], "q_h")
    return abs(h0 - l0), abs(h1 - l1)


def _revenues(rep: Any) -> tuple[float, float, float, float]:
    """U_l and U_h at the start and the end: (U_l first, U_l last, U_h first, U_h last)."""
    return (*_ends(rep, "U_l"), *_ends(rep, "U_h"))


def _rho_distance(rep: Any) -> float:
    """The final ratio's relative distance to rho*."""
    r1 = _ends(rep, "rho")[1]
    return abs(r1 - rep.rho_star) / rep.rho_star if rep.rho_star > 0 else float("inf")


def _nash_gap(rep: Any) -> float:
    """The final Nash product's relative gap to its maximum."""
    return rep.final_nash_gap / rep.nash_max if rep.nash_max > 0 else float("inf")


def _last(rep: Any, key: str) -> Any:
    return rep.rows[-1][key]


_FIG31 = f"{PAPER}, Fig. 3.1 and its caption; section 3.3 (Complete Collaboration)"
_FIG32A = f"{PAPER}, Fig. 3.2a and its caption; section 3.3 (Only high-quality firm shares)"
_FIG32B = f"{PAPER}, Fig. 3.2b and its caption; section 3.3 (Only low-quality firm shares)"
_FIG33 = f"{PAPER}, Fig. 3.3 and its caption; section 3.5 (Defection-Free Collaborative Learning)"
_DF, _HIGH = "defection-free", "one-sided-high"

#: The thesis's claims about the schemes of a run (a :class:`PlayReport` per scheme name);
#: claims about a scheme that did not run are left out.
CLAIMS: tuple[ClaimSpec, ...] = (
    _qualities_rise(
        "fig3.1.qualities_improve",
        "under complete collaboration both firms' qualities improve",
        "complete",
        _FIG31,
    ),
    ClaimSpec(
        id="fig3.1.same_quality",
        statement="when both firms share with each other, their models converge to the same "
        "quality",
        where=_FIG31,
        published=0.0,
        measured=lambda r: _gap(r)[1],
        holds=lambda r: _gap(r)[1] <= ZERO_FRACTION * _gap(r)[0],
        note=lambda r: "|q_h - q_l| {:.4f} -> {:.4f}; held at {:g} of the starting gap".format(
            *_gap(r), ZERO_FRACTION
        ),
        applies=_ran("complete"),
    ),
    ClaimSpec(
        id="fig3.1.revenues_to_zero",
        statement="their utilities (revenues) are driven to zero",
        where=_FIG31,
        published=0.0,
        measured=lambda r: {
            "U_l": _revenues(r["complete"])[1],
            "U_h": _revenues(r["complete"])[3],
        },
        holds=lambda r: (
            max(_revenues(r["complete"])[1::2]) <= ZERO_FRACTION * _revenues(r["complete"])[2]
        ),
        note=lambda r: (
            "U_l {:.4g} -> {:.4g}, U_h {:.4g} -> {:.4g}; held at {:g} of the high "
            "firm's starting revenue".format(*_revenues(r["complete"]), ZERO_FRACTION)
        ),
        applies=_ran("complete"),
    ),
    ClaimSpec(
        id="fig3.2a.low_outperforms",
        statement="when only the high-quality firm shares, the low-quality firm's model "
        "out-performs the high-quality firm's model",
        where=_FIG32A,
        published="q_l > q_h",
        measured=lambda r: {
            "q_l": _last(r["one-sided-low"], "q_l"),
            "q_h": _last(r["one-sided-low"], "q_h"),
        },
        holds=lambda r: _last(r["one-sided-low"], "q_l") > _last(r["one-sided-low"], "q_h"),
        applies=_ran("one-sided-low"),
    ),
    ClaimSpec(
        id="fig3.2a.high_revenue_negative",
        statement="the high-quality firm's revenue decreases and becomes negative",
        where=_FIG32A,
        published="< 0",
        measured=lambda r: _fixed_label_high_revenue(r["one-sided-low"]),
        holds=lambda r: (
            _fixed_label_high_revenue(r["one-sided-low"])
            < 0
            < float(r["one-sided-low"].rows[0]["U_h"])
        ),
        note=lambda r: (
            "eq. (3.4) with fixed firm labels, as the thesis plots; starting "
            f"revenue {float(r['one-sided-low'].rows[0]['U_h']):.4g}"
        ),
        applies=_ran("one-sided-low"),
    ),
    ClaimSpec(
        id="fig3.2b.both_revenues_rise",
        statement="when only the low-quality firm shares, over time both firms' revenues increase",
        where=_FIG32B,
        measured=lambda r: {
            "U_l": "{:.4g} -> {:.4g}".format(*_revenues(r[_HIGH])[:2]),
            "U_h": "{:.4g} -> {:.4g}".format(*_revenues(r[_HIGH])[2:]),
        },
        holds=lambda r: (
            _revenues(r[_HIGH])[1] > _revenues(r[_HIGH])[0]
            and _revenues(r[_HIGH])[3] > _revenues(r[_HIGH])[2]
        ),
        applies=_ran(_HIGH),
    ),
    ClaimSpec(
        id="fig3.2b.positive_but_less",
        statement="both firms have positive, but less, revenue than with defection-free "
        "collaboration",
        where=_FIG32B,
        published="0 < one-sided < defection-free",
        measured=lambda r: {
            "U_l": f"{_revenues(r[_HIGH])[1]:.4g} vs {float(_last(r[_DF], 'U_l')):.4g}",
            "U_h": f"{_revenues(r[_HIGH])[3]:.4g} vs {float(_last(r[_DF], 'U_h')):.4g}",
        },
        holds=lambda r: (
            0 < _revenues(r[_HIGH])[1] < float(_last(r[_DF], "U_l"))
            and 0 < _revenues(r[_HIGH])[3] < float(_last(r[_DF], "U_h"))
        ),
        note="final revenues, one-sided vs defection-free",
        applies=_ran(_HIGH, _DF),
    ),
    ClaimSpec(
        id="fig3.3.no_revenue_decrease",
        statement="at no step of defection-free collaboration does either firm's revenue decrease",
        where=f"{PAPER}, section 3.4, Proposition 3; Fig. 3.3",
        published=">= 0",
        measured=lambda r: {
            "min change U_l": r[_DF].audit.min_change_low,
            "min change U_h": r[_DF].audit.min_change_high,
        },
        holds=lambda r: r[_DF].audit.never_decreased,
        applies=_ran(_DF),
    ),
    _qualities_rise("fig3.3.qualities_increase", "both firms' qualities increase", _DF, _FIG33),
    ClaimSpec(
        id="fig3.3.revenues_increase",
        statement="both firms' revenues increase under defection-free collaboration",
        where=f"{PAPER}, Fig. 3.3 caption ('their revenues increase') and section 3.5",
        published="U_l,T > U_l,0 and U_h,T > U_h,0",
        measured=lambda r: {
            "U_l": "{:.4g} -> {:.4g}".format(*_revenues(r[_DF])[:2]),
            "U_h": "{:.4g} -> {:.4g}".format(*_revenues(r[_DF])[2:]),
        },
        holds=lambda r: (
            _revenues(r[_DF])[1] > _revenues(r[_DF])[0]
            and _revenues(r[_DF])[3] > _revenues(r[_DF])[2]
        ),
        note="each firm's final revenue against its first",
        applies=_ran(_DF),
    ),
    ClaimSpec(
        id="fig3.3.rho_converges",
        statement="the ratio of the firms' qualities converges to the optimal ratio rho*",
        where=_FIG33,
        published="rho_T -> rho*",
        measured=lambda r: {"rho_T": _ends(r[_DF], "rho")[1], "rho*": r[_DF].rho_star},
        holds=lambda r: _rho_distance(r[_DF]) <= RHO_TOLERANCE,
        note=lambda r: "rho {:.3f} -> {:.3f}; relative distance {:.1%}, tolerance {:.0%}".format(
            *_ends(r[_DF], "rho"), _rho_distance(r[_DF]), RHO_TOLERANCE
        ),
        applies=_ran(_DF),
    ),
    ClaimSpec(
        id="fig3.3.above_one_sided",
        statement="the revenues reach a higher level than under one-sided collaboration",
        where=_FIG33,
        published="defection-free > one-sided",
        measured=lambda r: {
            "U_l": f"{_revenues(r[_DF])[1]:.4g} vs {_revenues(r[_HIGH])[1]:.4g}",
            "U_h": f"{_revenues(r[_DF])[3]:.4g} vs {_revenues(r[_HIGH])[3]:.4g}",
        },
        holds=lambda r: (
            _revenues(r[_DF])[1] > _revenues(r[_HIGH])[1]
            and _revenues(r[_DF])[3] > _revenues(r[_HIGH])[3]
        ),
        note="final revenues, defection-free vs only the low firm sharing",
        applies=_ran(_DF, _HIGH),
    ),
    ClaimSpec(
        id="fig3.3.nash_approaches_max",
        statement="the Nash bargaining objective approaches its maximal value",
        where=_FIG33,
        published="N_T -> max N",
        measured=lambda r: {
            "N_T": float(_last(r[_DF], "nash_product")),
            "max N": r[_DF].nash_max,
        },
        holds=lambda r: (
            bool(r[_DF].final_individually_rational) and _nash_gap(r[_DF]) <= NASH_TOLERANCE
        ),
        note=lambda r: (
            f"relative gap {_nash_gap(r[_DF]):.1%}, tolerance {NASH_TOLERANCE:.0%}; "
            "maximum at the best quality reached"
            + (
                ""
                if r[_DF].final_individually_rational
                else "; the final point is not individually rational"
            )
        ),
        applies=_ran(_DF),
    ),
)


def claims(reports: Mapping[str, Any]) -> list[Claim]:
    """The thesis's claims (:data:`CLAIMS`) about the schemes in ``reports``.

    ``reports`` holds a :class:`PlayReport` per scheme name; claims about a scheme that did
    not run are left out.
    """
    return evaluate(CLAIMS, reports)


def merge_seeds(per_seed: Sequence[Sequence[Claim]], seeds: Sequence[int]) -> list[Claim]:
    """One claim per id over several seeds.

    A claim is held when it holds on every seed, and measured per seed.
    """
    if len(per_seed) == 1:
        return list(per_seed[0])
    merged = []
    for k, first in enumerate(per_seed[0]):
        runs = [cs[k] for cs in per_seed]
        held = sum(c.holds for c in runs)
        merged.append(
            Claim(
                paper=first.paper,
                id=first.id,
                statement=first.statement,
                published=first.published,
                measured={f"seed {s}": c.measured for s, c in zip(seeds, runs, strict=True)},
                holds=held == len(runs),
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
    (:func:`learning.drivers.defection_free_schemes.run_schemes`), the figures.

    ``threads`` caps torch's CPU threads while the firms train (restored afterwards; None
    leaves torch's setting): one by default, since LeNet-5 on minibatches of 32 and 64
    examples and a target set of a few hundred spends about four times the CPU time per
    gradient step and per evaluation on two threads (measured on two cores).

    Returns the runs (scheme name -> run with ``.report``) and the figure files written.
    """
    import torch

    from econ.validation import positive_int
    from games.defection_free.figures import write_figures
    from learning.drivers.defection_free import DuopolySetup, TorchFirms
    from learning.drivers.defection_free_schemes import run_schemes

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
    """The demo's four schemes at ``scale``, one seed unless ``seeds`` says otherwise.

    Small: 500 examples per firm, 15 rounds; paper: 1000 per firm, 30 rounds. Figures of the
    first seed.
    """
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
        name="defection_free",
        title="Werner (2024), ch. 3: defection-free collaboration between two firms, Figures "
        "3.1-3.3",
        claims=tuple(merge_seeds(per_seed, seed_list)),
        body=body,
        figures=tuple(figures),
        data={"settings": settings, "seeds": seed_list, "schemes": data},
    )
