"""The CoBo paper's claims about its pair-sampling strategies (Table 1) and its ablation (Figure 3).

Hashemi, He and Jaggi 2024 ("CoBo: Collaborative Learning via Bilevel Optimization",
NeurIPS 2024), Section 4.1: :data:`SAMPLING_CLAIMS`, judged on a result of
:func:`collabecon.reproductions.cobo.run_sampling` (every ordering of Table 1's accuracies
and losses, each strategy close to the non-sampling oracle, the strategies' spread), and
:data:`ABLATION_CLAIMS`, judged on a result of :func:`collabecon.reproductions.cobo.run_ablation`
(the data fraction, the number of clusters and the cluster size of Figure 3). Each is judged
on the mean over seeds, with the seed-to-seed spread beside it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from collabecon.reproductions.cobo_claims import (
    PAPER_REF,
    PAPER_SAMPLING,
    SAMPLING_NAMES,
    Result,
    join_notes,
    loss_spread_note,
    loss_with_std,
    mean_gap,
    spread_note,
    with_std,
)
from econ.claims import Claim, ClaimSpec, evaluate

__all__ = ["ABLATION_CLAIMS", "ABLATION_TOLERANCE", "SAMPLING_CLAIMS", "sampling_claims"]


# --------------------------------------------------------------------------- Table 1

_SAMPLED = ("constant", "time", "mixed")  # the strategies that sample pairs
_TABLE1 = f"{PAPER_REF}, Section 4.1 and Table 1"
#: Table 1's largest gap of a sampling strategy below the non-sampling oracle, and its
#: spread across the three sampling strategies (accuracy points).
_TABLE1_GAP = max(PAPER_SAMPLING["all"][0] - PAPER_SAMPLING[s][0] for s in _SAMPLED)
_TABLE1_SPREAD = max(PAPER_SAMPLING[s][0] for s in _SAMPLED) - min(
    PAPER_SAMPLING[s][0] for s in _SAMPLED
)


def _sampling_ran(*keys: str) -> Callable[[Result], bool]:
    return lambda r: r["setting"] == "sampling" and set(keys) <= set(r["accuracy"])


def _sampling_order(a: str, b: str) -> ClaimSpec:
    """Table 1's ordering of the accuracies of strategies ``a`` and ``b``."""
    hi, lo = (a, b) if PAPER_SAMPLING[a][0] > PAPER_SAMPLING[b][0] else (b, a)
    advantage = hi == "mixed" and lo in _SAMPLED
    statement = (
        f"the mixed strategy shows a slight performance advantage over {SAMPLING_NAMES[lo]}"
        if advantage
        else f"CoBo with {SAMPLING_NAMES[hi]} reaches a higher mean accuracy than with "
        f"{SAMPLING_NAMES[lo]}"
    )
    return ClaimSpec(
        id=f"sampling.{hi}>{lo}",
        statement=statement,
        where=_TABLE1,
        published=f"{PAPER_SAMPLING[hi][0]:.2f} > {PAPER_SAMPLING[lo][0]:.2f}",
        measured=lambda r: f"{with_std(r, hi)} vs {with_std(r, lo)}",
        holds=lambda r: mean_gap(r, hi, lo) > 0,
        note=lambda r: spread_note(r, hi, lo, mean_gap(r, hi, lo)),
        applies=_sampling_ran(a, b),
    )


def _sampling_loss_order(a: str, b: str) -> ClaimSpec:
    """Table 1's ordering of the losses of strategies ``a`` and ``b``."""
    lo, hi = (a, b) if PAPER_SAMPLING[a][1] < PAPER_SAMPLING[b][1] else (b, a)
    return ClaimSpec(
        id=f"sampling.loss:{lo}<{hi}",
        statement=f"CoBo with {SAMPLING_NAMES[lo]} reaches a lower mean test loss than with "
        f"{SAMPLING_NAMES[hi]}",
        where=_TABLE1,
        published=f"{PAPER_SAMPLING[lo][1]:.3f} < {PAPER_SAMPLING[hi][1]:.3f}",
        measured=lambda r: f"{loss_with_std(r, lo)} vs {loss_with_std(r, hi)}",
        holds=lambda r: r["loss"][lo] < r["loss"][hi],
        note=lambda r: loss_spread_note(r, lo, hi),
        applies=_sampling_ran(a, b),
    )


def _near_all(key: str) -> ClaimSpec:
    """A sampling strategy within Table 1's largest gap of the non-sampling oracle."""
    return ClaimSpec(
        id=f"sampling.{key}-near-all",
        statement=f"CoBo with {SAMPLING_NAMES[key]} achieves results close to those of the "
        f"non-sampling oracle: at most {_TABLE1_GAP:.2f} points (Table 1's largest gap) below it",
        where=_TABLE1,
        published=f"{PAPER_SAMPLING[key][0]:.2f} vs {PAPER_SAMPLING['all'][0]:.2f}",
        measured=lambda r: round(100 * mean_gap(r, "all", key), 2),
        holds=lambda r: round(100 * mean_gap(r, "all", key), 2) <= round(_TABLE1_GAP, 2),
        note=lambda r: join_notes(
            "points, no sampling minus this strategy",
            spread_note(r, "all", key, mean_gap(r, "all", key)),
        ),
        applies=_sampling_ran("all", key),
    )


def _spread(r: Result) -> float:
    """Accuracy points between the best and the worst sampling strategy.

    Judged, like Table 1's gaps, to two decimals.
    """
    values = [r["accuracy"][k] for k in _SAMPLED]
    return 100 * (max(values) - min(values))


#: Every claim of Table 1 and the text around it: each pairwise ordering of accuracy and loss,
#: every sampling strategy close to the non-sampling oracle, consistency across strategies.
SAMPLING_CLAIMS: tuple[ClaimSpec, ...] = (
    *(_sampling_order(a, b) for a, b in itertools.combinations(PAPER_SAMPLING, 2)),
    *(_sampling_loss_order(a, b) for a, b in itertools.combinations(PAPER_SAMPLING, 2)),
    *(_near_all(k) for k in _SAMPLED),
    ClaimSpec(
        id="sampling.consistent",
        statement="CoBo demonstrates consistent performance across all sampling strategies: "
        f"at most Table 1's {_TABLE1_SPREAD:.2f} points between the best and the worst",
        where=_TABLE1,
        published=round(_TABLE1_SPREAD, 2),
        measured=lambda r: round(_spread(r), 2),
        holds=lambda r: round(_spread(r), 2) <= round(_TABLE1_SPREAD, 2),
        note="accuracy points between the best and the worst of constant, time-dependent and "
        "mixed sampling",
        applies=_sampling_ran(*_SAMPLED),
    ),
)


def sampling_claims(result: Result) -> list[Claim]:
    """Every claim of Table 1 (:data:`SAMPLING_CLAIMS`) about a sampling comparison.

    ``result`` is a :func:`collabecon.reproductions.cobo.run_sampling` output.
    """
    return evaluate(SAMPLING_CLAIMS, result)


# --------------------------------------------------------------------------- Figure 3

_FIGURE3 = f"{PAPER_REF}, Section 4.1 and Figure 3"
#: Accuracy points within which a change counts as "not significant" or "robust" (Figure 3
#: prints no numbers).
ABLATION_TOLERANCE = 2.0


def _sweep(r: Result, factor: str) -> list[float]:
    """CoBo's mean accuracy along one factor's values, in percent."""
    return [100 * a for a in r["factors"][factor]["accuracy"]]


def _swept(factor: str) -> Callable[[Result], bool]:
    return lambda r: (
        r["setting"] == "ablation" and len(r["factors"].get(factor, {}).get("values", ())) > 1
    )


def _along(factor: str) -> Callable[[Result], dict[str, float]]:
    return lambda r: {
        f"{v:g}": round(a, 1)
        for v, a in zip(r["factors"][factor]["values"], _sweep(r, factor), strict=True)
    }


#: Every claim of Section 4.1 about the ablation of Figure 3.
ABLATION_CLAIMS: tuple[ClaimSpec, ...] = (
    ClaimSpec(
        id="ablation.fraction-increases",
        statement="the total amount of data available to a cluster directly impacts the "
        "performance of CoBo: its accuracy rises with the fraction of the data set",
        where=_FIGURE3,
        published="accuracy rising with the data fraction",
        measured=_along("fraction"),
        holds=lambda r: bool(np.all(np.diff(_sweep(r, "fraction")) > 0)),
        note="CoBo's mean accuracy (%) per fraction of the data set each cluster gets",
        applies=_swept("fraction"),
    ),
    ClaimSpec(
        id="ablation.clusters-flat",
        statement="the number of clusters does not significantly affect CoBo's accuracy: "
        f"within {ABLATION_TOLERANCE:g} points across the numbers of clusters",
        where=_FIGURE3,
        published="flat in the number of clusters",
        measured=_along("clusters"),
        holds=lambda r: np.ptp(_sweep(r, "clusters")) <= ABLATION_TOLERANCE,
        note="CoBo's mean accuracy (%) per number of clusters of 2 clients",
        applies=_swept("clusters"),
    ),
    ClaimSpec(
        id="ablation.cluster-size-robust",
        statement="CoBo leverages collaboration to maintain robust performance even with "
        f"larger cluster sizes: the largest at most {ABLATION_TOLERANCE:g} points below the "
        "smallest",
        where=_FIGURE3,
        published="robust as the cluster size grows",
        measured=_along("cluster-size"),
        holds=lambda r: (
            _sweep(r, "cluster-size")[-1] >= _sweep(r, "cluster-size")[0] - ABLATION_TOLERANCE
        ),
        note="CoBo's mean accuracy (%) per clients per cluster (4 clusters, each cluster's data "
        "split among its clients)",
        applies=_swept("cluster-size"),
    ),
)
