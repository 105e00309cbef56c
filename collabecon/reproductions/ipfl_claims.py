"""The behavioural claims B1-B7 of IP-FL as a table, judged on per-seed measurements.

IP-FL is Khan et al., "IP-FL: Incentivized and Personalized Federated Learning". The table
(:data:`CLAIMS`) is judged by :func:`b_claims` on the per-seed measurements of
:func:`collabecon.reproductions.ipfl.measure_seed` in each setting (:data:`SETTINGS`) at the
10:90 and 30:70 mixtures of §6.1 (:data:`SPLITS`).

The claims, at the paper's thresholds:

- B1 (Table 3, IP-FL row, 10:90 columns; the same numbers as Table 1): at 10:90 each
  cluster model is best on a different distribution, diagonal minus off-diagonal accuracy
  >= 15 pp (the paper: 21.2 pp) and bidder purity >= 0.9; B1.c0, B1.c1 the same gap for
  each cluster model (the paper: 20.0 and 22.5 pp);
- B2 (Table 3, IP-FL row): less specialisation at 30:70 than at 10:90 (the paper: 0.8
  against 21.2 pp, each cluster matched to its best distribution as in the measurement),
  the mean difference larger than its seed-to-seed standard deviation; B2.c0, B2.c1 the
  same for each cluster model;
- B3 (Table 6, App. D.1): incentives beat random bids: best-cell accuracy with incentives
  (I) above that with random bids (NI), the mean difference larger than its seed-to-seed
  deviation; B3.<split>.c0, B3.<split>.c1 the same for each cell of Table 6 measured (both
  clusters at 10:90 and 30:70);
- B4 (Corollary 8.1 in App. I, Table 5): PMA > 0 against FedAvg for >= 80 % of the clients
  (the paper: 0 % opt-outs);
- B5 (App. C, "Fairness for providers"): providers with noisy labels contribute less and
  earn fewer tokens (one-sided Mann-Whitney p < 0.05 for both, in every seed);
- B6 (§1, third contribution): every never-scheduled client personalises within 3 pp of the
  scheduled clients of the same majority distribution;
- B7 (Theorem 4, §5): PMA stabilises, tail oscillation < 2 pp for >= 90 % of the clients.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from econ.claims import Claim, ClaimSpec, evaluate

__all__ = [
    "CLAIMS",
    "PAPER",
    "PAPER_GAP",
    "SETTINGS",
    "SPLITS",
    "TABLE3_IPFL",
    "TABLE6",
    "b_claims",
    "cluster_gaps",
    "specialisation_gap",
]

PAPER = "Khan et al., IP-FL"

#: Settings of :func:`collabecon.reproductions.ipfl.reproduce`: what distinguishes :math:`D_B`
#: (:data:`learning.drivers.ipfl.SHIFTS`).
SETTINGS = ("rotation", "labels")
#: The mixtures of §6.1 the claims are measured at (partitions of :class:`learning.drivers.ipfl.IPFLRun`).
SPLITS = ("10:90", "30:70")
#: Table 3 (CIFAR-10), IP-FL row, per split: accuracy (%) of the cluster models c0, c1 (rows)
#: on the distributions θ0, θ1 (columns); Table 1 prints the same numbers.
TABLE3_IPFL: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "10:90": ((63.7, 43.7), (41.3, 63.8)),
    "30:70": ((58.0, 58.6), (57.7, 58.8)),
}


def cluster_gaps(acc: np.ndarray) -> list[float]:
    r"""Each cluster model's accuracy on its best distribution minus the other's (pp).

    ``acc[k, d]`` is cluster model ``k``'s accuracy (a fraction) on distribution ``d``; cluster
    ``k`` is matched to :math:`b_k = \arg\max_d acc_{k,d}` and its gap is
    :math:`100 (acc_{k,b_k} - acc_{k,1-b_k})` (B1, B2 per cluster; Khan et al., IP-FL,
    Table 3).
    """
    best = np.asarray(acc).argmax(axis=1)
    rows = np.arange(len(best))
    return (100 * (np.asarray(acc)[rows, best] - np.asarray(acc)[rows, 1 - best])).tolist()


def specialisation_gap(acc: np.ndarray) -> tuple[float, bool]:
    r"""Mean diagonal minus off-diagonal accuracy (pp), and whether the clusters specialise.

    The mean over the clusters of :func:`cluster_gaps`, and whether the two clusters are best
    on different distributions (B1, B2; Khan et al., IP-FL, Table 3).
    """
    return float(np.mean(cluster_gaps(acc))), len(set(np.asarray(acc).argmax(axis=1))) == 2


#: Table 6 (App. D.1), per split: the accuracy (%) of the cluster models c0, c1 on their
#: best distribution, with incentives (I, first pair) and without (NI, second pair).
TABLE6: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "10:90": ((58.62, 67.4), (49.92, 52.8)),
    "30:70": ((51.12, 64.06), (48.9, 44.44)),
}

#: The published specialisation gap (pp) per split: :func:`specialisation_gap` of
#: :data:`TABLE3_IPFL`.
PAPER_GAP = {
    split: specialisation_gap(np.asarray(cells) / 100)[0] for split, cells in TABLE3_IPFL.items()
}


def _stats(values: list[float]) -> dict[str, Any]:
    arr = np.asarray(values, dtype=float)
    return {
        "mean": float(arr.mean()),
        "sd": float(arr.std(ddof=1)) if arr.size > 1 else float("nan"),
        "values": arr.tolist(),
    }


def _ms(s: dict[str, Any], digits: int = 1) -> str:
    return f"{s['mean']:.{digits}f} ± {s['sd']:.{digits}f}"


def _beyond_spread(d: dict[str, Any]) -> bool:
    """A difference of :func:`_stats` whose mean is positive and exceeds its sd."""
    return bool(d["mean"] > 0 and d["mean"] > d["sd"])


def _pct(s: dict[str, Any]) -> str:
    """A share's mean ± sd in percent."""
    return f"{100 * s['mean']:.0f} ± {100 * s['sd']:.0f}"


def _tag(b: dict[str, Any]) -> str:
    return f"{b['seeds']} seeds, mean ± sd"


def _b_specs(setting: str) -> tuple[ClaimSpec, ...]:
    """B1-B7 in ``setting``, judged on :func:`b_claims`'s statistics over the seeds."""

    def spec(claim: str, where: str, **rest: Any) -> ClaimSpec:
        return ClaimSpec(
            id=f"ipfl.{setting}.{claim}",
            where=f"{PAPER}, {where}",
            applies=lambda b: b["setting"] == setting,
            **rest,
        )

    def b4(split: str) -> ClaimSpec:
        return spec(
            f"{split}.B4",
            "Corollary 8.1 (App. I) and Table 5 (IP-FL column, rows Optouts and Avg. PMA)",
            statement="PMA > 0 against FedAvg for >= 80 % of the clients",
            published="0 % opt-outs, avg PMA +8.6 pp (Table 5)",
            measured=lambda b: (
                f"PMA > 0 for {_pct(b[split]['pma_positive_share'])} %, avg PMA "
                f"{_ms(b[split]['pma_mean_pp'], 2)} pp"
            ),
            holds=lambda b: b[split]["pma_positive_share"]["mean"] >= 0.8,
            note=_tag,
        )

    def b7(split: str) -> ClaimSpec:
        return spec(
            f"{split}.B7",
            "Theorem 4 (§5)",
            statement="PMA stabilises: tail oscillation < 2 pp for >= 90 % of the clients",
            measured=lambda b: f"{_pct(b[split]['stable_share'])} % of clients",
            holds=lambda b: b[split]["stable_share"]["mean"] >= 0.9,
            note=_tag,
        )

    def b1_cluster(k: int) -> ClaimSpec:
        gaps = cluster_gaps(np.asarray(TABLE3_IPFL["10:90"]) / 100)
        return spec(
            f"B1.c{k}",
            f"Table 3 (IP-FL row, 10:90 columns, cluster model c{k})",
            statement=f"at 10:90 cluster model c{k} is better on its best distribution than on "
            "the other by >= 15 pp",
            published=f"c{k}: {gaps[k]:.1f} pp",
            measured=lambda b: f"c{k}: {_ms(b['10:90']['cluster_gap_pp'][k])} pp",
            holds=lambda b: b["10:90"]["cluster_gap_pp"][k]["mean"] >= 15.0,
            note=_tag,
        )

    def b2_cluster(k: int) -> ClaimSpec:
        ten, thirty = (cluster_gaps(np.asarray(TABLE3_IPFL[sp]) / 100)[k] for sp in SPLITS)
        return spec(
            f"B2.c{k}",
            f"Table 3 (IP-FL row, 10:90 and 30:70 columns, cluster model c{k})",
            statement=f"cluster model c{k} specialises less at 30:70 than at 10:90 (margin "
            "beyond the seed-to-seed spread)",
            published=f"c{k}: {thirty:.1f} pp at 30:70 vs {ten:.1f} pp at 10:90",
            measured=lambda b: (
                f"c{k}: 10:90 minus 30:70 {_ms(b['b2_cluster_difference_pp'][k])} pp"
            ),
            holds=lambda b: _beyond_spread(b["b2_cluster_difference_pp"][k]),
            note=lambda b: f"{_tag(b)}; holds when the mean difference exceeds its sd",
        )

    def b3_cell(split: str, k: int) -> ClaimSpec:
        (i_cells, ni_cells) = TABLE6[split]
        return spec(
            f"B3.{split}.c{k}",
            f"Table 6 (App. D.1), rows IP-FL (I) and IP-FL (NI), {split} column c{k}",
            statement=f"at {split} cluster model c{k} is more accurate on its best "
            "distribution with incentives (I) than with random bids (NI) (margin beyond the "
            "seed-to-seed spread)",
            published=f"I {i_cells[k]:.2f} vs NI {ni_cells[k]:.2f} %",
            measured=lambda b: f"I minus NI {_ms(b[split]['best_cell_difference_pp'][k])} pp",
            holds=lambda b: _beyond_spread(b[split]["best_cell_difference_pp"][k]),
            note=lambda b: f"{_tag(b)}; holds when the mean difference exceeds its sd",
        )

    return (
        spec(
            "B1",
            "Table 3 (IP-FL row, 10:90 columns; the same numbers as Table 1)",
            statement="at 10:90 each cluster model is best on a different distribution: "
            "diagonal minus off-diagonal accuracy >= 15 pp, bidder purity >= 0.9",
            published=f"gap {PAPER_GAP['10:90']:.1f} pp (c0 63.7 on θ0 vs 43.7 on θ1, c1 63.8 "
            "on θ1 vs 41.3 on θ0)",
            measured=lambda b: (
                f"gap {_ms(b['10:90']['gap_pp'])} pp, purity "
                f"{_ms(b['10:90']['purity'], 2)}, distinct in {b['10:90']['distinct_seeds']}/"
                f"{b['seeds']} seeds"
            ),
            holds=lambda b: (
                b["10:90"]["gap_pp"]["mean"] >= 15.0
                and b["10:90"]["purity"]["mean"] >= 0.9
                and b["10:90"]["distinct_seeds"] == b["seeds"]
            ),
            note=_tag,
        ),
        spec(
            "B2",
            "Table 3 (IP-FL row, 10:90 and 30:70 columns)",
            statement="less specialisation at 30:70 than at 10:90 (margin beyond the "
            "seed-to-seed spread)",
            published=f"gap {PAPER_GAP['30:70']:.1f} pp at 30:70 (c0 58.6 vs 58.0, c1 58.8 vs "
            f"57.7, both best on θ1) vs {PAPER_GAP['10:90']:.1f} pp at 10:90",
            measured=lambda b: f"gap 10:90 minus 30:70 {_ms(b['b2_difference_pp'])} pp",
            holds=lambda b: _beyond_spread(b["b2_difference_pp"]),
            note=lambda b: f"{_tag(b)}; holds when the mean difference exceeds its sd",
        ),
        spec(
            "B3",
            "Table 6 (App. D.1), rows IP-FL (I) and IP-FL (NI)",
            statement="incentives (I) beat random bids (NI): higher accuracy of each cluster "
            "model on its best distribution (margin beyond the seed-to-seed spread)",
            published="10:90 mean of c0 and c1: I 63.0 (58.62, 67.4) vs NI 51.4 (49.92, 52.8) %; "
            "I > NI in all 8 cells",
            measured=lambda b: (
                f"I minus NI {_ms(b['b3_difference_pp'])} pp (10:90 I "
                f"{_ms(b['10:90']['best_cell_i'])} vs NI {_ms(b['10:90']['best_cell_ni'])} %)"
            ),
            holds=lambda b: _beyond_spread(b["b3_difference_pp"]),
            note=lambda b: (
                f"{_tag(b)} over both splits; holds when the mean difference exceeds its sd"
            ),
        ),
        *(b1_cluster(k) for k in range(2)),
        *(b2_cluster(k) for k in range(2)),
        *(b3_cell(split, k) for split in SPLITS for k in range(2)),
        *(b4(split) for split in SPLITS),
        spec(
            "B5",
            'App. C ("Fairness for providers")',
            statement="providers with noisy labels contribute less and earn fewer tokens "
            "(one-sided Mann-Whitney p < 0.05 for both, every seed)",
            measured=lambda b: (
                "p(ψ) "
                + ", ".join(f"{x['p_psi']:.3g}" for x in b["b5"])
                + "; p(tokens) "
                + ", ".join(f"{x['p_net']:.3g}" for x in b["b5"])
            ),
            holds=lambda b: all(x["p_psi"] < 0.05 and x["p_net"] < 0.05 for x in b["b5"]),
            note=lambda b: (
                f"{b['seeds']} seeds, 10:90, a fifth of the clients with half their labels flipped"
            ),
        ),
        spec(
            "B6",
            "§1 (third contribution)",
            statement="every never-scheduled client personalises within 3 pp of the "
            "scheduled clients of the same majority distribution",
            measured=lambda b: (
                f"gap {_ms(b['b6_gap_pp'])} pp, largest "
                f"{max(b['b6_gap_pp']['values']):.1f} pp, over {len(b['b6_gap_pp']['values'])} "
                "unseen clients"
            ),
            holds=lambda b: max(b["b6_gap_pp"]["values"]) <= 3.0,
            note=lambda b: f"{b['seeds']} seeds, 10:90, a tenth of the clients never scheduled",
        ),
        *(b7(split) for split in SPLITS),
    )


#: B1-B7 in every setting, at the paper's thresholds (the module's docstring).
CLAIMS: tuple[ClaimSpec, ...] = tuple(spec for setting in SETTINGS for spec in _b_specs(setting))


def b_claims(setting: str, seeds: list[dict[str, Any]]) -> tuple[list[Claim], dict[str, Any]]:
    """B1-B7 for one setting (:data:`CLAIMS`) from its per-seed measurements.

    The measurements are :func:`collabecon.reproductions.ipfl.measure_seed`'s; each claim is
    at the paper's threshold, with the statistics it is judged on: means ± standard
    deviations over the seeds.
    """
    n = len(seeds)
    s: dict[str, Any] = {}
    for split in SPLITS:
        m = [x[split] for x in seeds]
        s[split] = {
            key: _stats([v[key] for v in m])
            for key in (
                "gap_pp",
                "purity",
                "pma_positive_share",
                "pma_mean_pp",
                "stable_share",
                "best_cell_i",
                "best_cell_ni",
            )
        }
        s[split]["distinct_seeds"] = int(sum(v["distinct"] for v in m))
        gaps = [cluster_gaps(np.asarray(v["cluster_accuracy"])) for v in m]
        s[split]["cluster_gap_pp"] = [_stats([g[k] for g in gaps]) for k in range(2)]
        s[split]["best_cell_difference_pp"] = [
            _stats(
                [
                    100 * (max(v["cluster_accuracy"][k]) - max(v["cluster_accuracy_ni"][k]))
                    for v in m
                ]
            )
            for k in range(2)
        ]
    d2 = _stats([x["10:90"]["gap_pp"] - x["30:70"]["gap_pp"] for x in seeds])
    d3 = _stats([x[sp]["best_cell_i"] - x[sp]["best_cell_ni"] for x in seeds for sp in SPLITS])
    b6 = _stats([g for x in seeds for g in x["b6_gaps_pp"]])
    b5 = [x["b5"] for x in seeds]
    d2k = [
        _stats(
            [
                cluster_gaps(np.asarray(x["10:90"]["cluster_accuracy"]))[k]
                - cluster_gaps(np.asarray(x["30:70"]["cluster_accuracy"]))[k]
                for x in seeds
            ]
        )
        for k in range(2)
    ]
    s.update(
        {
            "b2_difference_pp": d2,
            "b2_cluster_difference_pp": d2k,
            "b3_difference_pp": d3,
            "b6_gap_pp": b6,
            "b5": b5,
        }
    )
    return evaluate(CLAIMS, {"setting": setting, "seeds": n, **s}), s
