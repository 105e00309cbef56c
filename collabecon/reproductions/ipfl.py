r"""IP-FL reproduced: seven behavioural claims and the comparison with the baselines.

Khan et al., "IP-FL: Incentivized and Personalized Federated Learning": seven behavioural
claims of the paper (B1-B7, :mod:`collabecon.reproductions.ipfl_claims`) and the comparison
with the baselines (§6.3-6.4, Tables 3-5, :mod:`collabecon.reproductions.ipfl_comparison`),
in every setting of :mod:`collabecon.reproductions.ipfl_settings`: the convergence curves
(Fig. 2, Fig. 9), the CDFs of the clients' PMA (Fig. 3, Fig. 8), the synthetic data (Tables 2,
7, 8, 9, Fig. 4), 2 classes per client (Table 10) and 40:60 (Table 11), drawn by
:mod:`collabecon.reproductions.ipfl_figures`.

With ``data_dir`` holding EMNIST's official files (:data:`EMNIST_NEEDS`) the paper's EMNIST
settings are run too (:data:`~collabecon.reproductions.ipfl_settings.EMNIST_COMPARISONS`:
Table 4, feature-shift EMNIST of Table 5, Fig. 6, Tables 10 and 11); without it they are
reported as not run. Fig. 7 (four or more EMNIST sources) is not run: the mixtures of
:func:`learning.partition.mixture` have two distributions, and the paper prints neither the
mixture vectors over its four sources nor their sizes.

:func:`reproduce` measures B1-B7 over several seeds in two settings, each at the 10:90 and
30:70 mixtures of §6.1:

- ``rotation``: :math:`D_B` is :math:`D_A` rotated by 90 degrees (§6.1, following FedSoft);
- ``labels``: a concept shift, :math:`D_B` relabels :math:`y \to (y + 5) \bmod 10`, so one
  model cannot serve both distributions and specialisation is necessary.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from collabecon.reproductions.ipfl_claims import (
    CLAIMS,
    SETTINGS,
    SPLITS,
    b_claims,
    specialisation_gap,
)
from collabecon.reproductions.ipfl_comparison import LR_GRID, compare
from collabecon.reproductions.ipfl_figures import (
    CONVERGENCE_FIGURE,
    EMNIST_FIGURE,
    PMA_FIGURE,
    SYNTHETIC_FIGURE,
    clusters_table,
    convergence_figure,
    emnist_cdf_figure,
    pma_cdf_figure,
    settings_table,
    synthetic_cdf_figure,
)
from collabecon.reproductions.ipfl_settings import COMPARISONS, EMNIST_COMPARISONS, MIXTURES
from collabecon.reproductions.ipfl_settings_claims import EMNIST_SPECS, SPECS
from econ.claims import Claim, Reproduction, evaluate
from econ.outputs import plain
from games.ipfl import IPFLConfig
from learning.drivers.ipfl import IPFLResult, IPFLRun, build_setup, run_ipfl

__all__ = [
    "CLAIMS",
    "EMNIST_NEEDS",
    "EMNIST_RUNS",
    "SCALE_RUNS",
    "SETTINGS",
    "emnist_part",
    "measure_seed",
    "reproduce",
]

#: The base run of each scale: ``small`` (scikit-learn's 8x8 digits, CPU minutes) and
#: ``paper`` (``mnist5k``, 60 rounds; the paper's CIFAR-10 sizes are beyond it).
SCALE_RUNS: dict[str, IPFLRun] = {
    "small": IPFLRun(
        dataset="digits",
        model="mlp",
        clients=20,
        rounds=10,
        local_steps=10,
        lr=0.1,
        eval_every=2,
        mechanism=IPFLConfig(perf_share=0.5),
    ),
    "paper": IPFLRun(
        dataset="mnist5k",
        model="mlp",
        clients=20,
        rounds=60,
        local_steps=10,
        eval_every=6,
        mechanism=IPFLConfig(perf_share=0.5),
    ),
}


#: What ``data_dir`` must hold for the EMNIST settings: the official ``byclass`` files.
EMNIST_NEEDS = (
    "EMNIST's official files emnist-byclass-{train,test}-{images-idx3,labels-idx1}-ubyte.gz "
    "(in the folder or its gzip/)"
)
_EMNIST_DATA: tuple[tuple[str, Any], ...] = (("split", "byclass"), ("drop_digits", True))

#: The EMNIST base run of each scale: the 52 letter classes of ``byclass`` (§6.1), rotated
#: as :math:`D_B`. ``paper``: the paper's N = 100 clients, its CNN and batch size 128
#: (§6.1, App. D.1), 150 rounds (App. D.4's global epochs); ``small``: CPU minutes.
EMNIST_RUNS: dict[str, IPFLRun] = {
    "small": IPFLRun(
        dataset="emnist",
        dataset_params=_EMNIST_DATA,
        model="mlp",
        clients=26,
        rounds=10,
        local_steps=10,
        size=100,
        eval_every=2,
        mechanism=IPFLConfig(perf_share=0.5),
    ),
    "paper": IPFLRun(
        dataset="emnist",
        dataset_params=_EMNIST_DATA,
        model="cnn",
        clients=100,
        rounds=150,
        local_steps=10,
        batch_size=128,
        eval_every=10,
        mechanism=IPFLConfig(perf_share=0.5),
    ),
}


def _late_purity(result: IPFLResult) -> float:
    tail = result.history[-max(1, len(result.history) // 5) :]
    return float(np.nanmean([h["bidder_purity"] for h in tail]))


def _oscillation_share(result: IPFLResult) -> float:
    """Share of clients whose PMA stays within 2 pp of its last value (Theorem 4).

    Measured over the last fifth of the evaluations.
    """
    evals = np.array(
        [h["personalised_accuracy"] for h in result.history if "personalised_accuracy" in h]
    )
    pma_t = 100 * (evals - result.reference_accuracy[None, :])
    tail = pma_t[-max(2, len(pma_t) // 5) :]
    return float(np.mean(np.abs(tail - pma_t[-1][None, :]).max(axis=0) < 2.0))


def _b5(run: IPFLRun, device: str) -> dict[str, float]:
    from scipy.stats import mannwhitneyu

    setup = build_setup(run, device=device)
    result = run_ipfl(run, setup=setup)
    noisy = np.zeros(run.clients, dtype=bool)
    noisy[setup.noisy] = True
    psi = np.array([np.array(h["psi"]).sum(axis=0) for h in result.history[1:]]).mean(axis=0)
    net = result.tokens_end - result.tokens_start
    return {
        "p_psi": float(mannwhitneyu(psi[noisy], psi[~noisy], alternative="less").pvalue),
        "p_net": float(mannwhitneyu(net[noisy], net[~noisy], alternative="less").pvalue),
    }


def _b6(run: IPFLRun, device: str) -> list[float]:
    setup = build_setup(run, device=device)
    result = run_ipfl(run, setup=setup)
    seen = np.setdiff1d(np.arange(run.clients), setup.unseen)
    acc = result.personalised_accuracy
    return [
        100 * float(acc[seen[setup.majority[seen] == setup.majority[u]]].mean() - acc[u])
        for u in setup.unseen
    ]


def _measure(base: IPFLRun, setting: str, seed: int, device: str = "cpu") -> dict[str, Any]:
    """Every number behind B1-B7 for one setting and seed."""
    base = dataclasses.replace(base, shift=setting, seed=seed)
    out: dict[str, Any] = {}
    for split in SPLITS:
        run = dataclasses.replace(base, partition=split)
        result = run_ipfl(run, device=device)
        ni = dataclasses.replace(run, mechanism=dataclasses.replace(run.mechanism, incentive=False))
        acc_ni = run_ipfl(ni, device=device).cluster_accuracy
        gap, distinct = specialisation_gap(result.cluster_accuracy)
        out[split] = {
            "cluster_accuracy": result.cluster_accuracy.tolist(),
            "gap_pp": gap,
            "distinct": distinct,
            "purity": _late_purity(result),
            "pma_positive_share": float(np.mean(result.pma > 0)),
            "pma_mean_pp": float(result.pma.mean()),
            "stable_share": _oscillation_share(result),
            "best_cell_i": 100 * float(result.cluster_accuracy.max(axis=1).mean()),
            "best_cell_ni": 100 * float(acc_ni.max(axis=1).mean()),
            "cluster_accuracy_ni": acc_ni.tolist(),
        }
    ten = dataclasses.replace(base, partition="10:90")
    out["b5"] = _b5(dataclasses.replace(ten, noisy_share=0.2, noise_rate=0.5), device)
    out["b6_gaps_pp"] = _b6(dataclasses.replace(ten, unseen_share=0.1), device)
    return out


def measure_seed(
    scale: str, setting: str, seed: int, out: Path | str, *, device: str = "cpu"
) -> dict[str, Any]:
    """Measure B1-B7 for one setting and seed at ``scale`` and write it to ``out``.

    The file is ``ipfl_<scale>_<setting>_seed<seed>.json``, with the run it measured; an
    existing file of the same run is read instead.
    """
    if scale not in SCALE_RUNS:
        raise ValueError(f"scale must be one of {', '.join(SCALE_RUNS)}, got {scale!r}")
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {', '.join(SETTINGS)}, got {setting!r}")
    base = SCALE_RUNS[scale]
    path = Path(out) / f"ipfl_{scale}_{setting}_seed{seed}.json"
    key = dataclasses.replace(base, shift=setting, seed=seed).to_dict()
    if path.exists():
        saved = json.loads(path.read_text())
        if saved.get("run") == key:
            return dict(saved["measured"])
    measured = _measure(base, setting, seed, device)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(plain({"run": key, "measured": measured}), indent=1))
    return measured


def _side_by_side(stats: dict[str, dict[str, Any]]) -> str:
    cols = [(setting, split) for setting in SETTINGS for split in SPLITS if setting in stats]
    lines = [
        "| quantity | " + " | ".join(f"{a} {b}" for a, b in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for key, label, scale in (
        ("gap_pp", "B1/B2 diag - off-diag (pp)", 1.0),
        ("purity", "B1 late bidder purity", 1.0),
        ("best_cell_i", "B3 best-cell acc., I (%)", 1.0),
        ("best_cell_ni", "B3 best-cell acc., NI (%)", 1.0),
        ("pma_positive_share", "B4 PMA > 0 (% of clients)", 100.0),
        ("pma_mean_pp", "B4 avg PMA (pp)", 1.0),
        ("stable_share", "B7 stable PMA (% of clients)", 100.0),
    ):
        cells = []
        for setting, split in cols:
            st = stats[setting][split][key]
            cells.append(f"{scale * st['mean']:.2f} ± {scale * st['sd']:.2f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _comparison(
    scale: str,
    name: str,
    out: Path | str,
    device: str,
    *,
    base: IPFLRun | None = None,
    fields: dict[str, Any] | None = None,
    data_dir: str | None = None,
    lr_grid: tuple[float, ...] = LR_GRID,
) -> dict[str, Any]:
    """:func:`compare` in comparison ``name`` at ``scale`` (seed 0), cached in ``out``.

    The run is ``base`` (the scale's :data:`SCALE_RUNS` entry by default) with ``fields``
    (``name``'s entry of :data:`COMPARISONS` by default) replaced.
    """
    base = SCALE_RUNS[scale] if base is None else base
    run = dataclasses.replace(base, **(COMPARISONS[name] if fields is None else fields))
    path = Path(out) / f"ipfl_{scale}_{name.replace(':', '-')}_compare.json"
    if path.exists():
        saved = json.loads(path.read_text())
        if saved.get("run") == run.to_dict() and saved.get("lr_grid") == list(lr_grid):
            return dict(saved["compare"])
    result = compare(run, device=device, data_dir=data_dir, lr_grid=lr_grid)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(plain({"run": run.to_dict(), "lr_grid": list(lr_grid), "compare": result}))
    )
    return result


def emnist_part(
    scale: str,
    out: Path | str,
    data_dir: str | None,
    *,
    base: IPFLRun | None = None,
    device: str = "cpu",
    lr_grid: tuple[float, ...] = LR_GRID,
) -> tuple[list[Claim], str, dict[str, Any]]:
    """The paper's EMNIST settings: claims, a report section, and the comparisons.

    Without ``data_dir`` nothing is run: no claims, and the section says "not run: needs
    --data-dir". With it, every comparison of
    :data:`~collabecon.reproductions.ipfl_settings.EMNIST_COMPARISONS` is run on ``base``
    (the scale's :data:`EMNIST_RUNS` entry by default), its claims
    (:data:`~collabecon.reproductions.ipfl_settings_claims.EMNIST_SPECS`) judged, and Fig. 6 drawn
    to ``out``.
    """
    fig7 = (
        "Fig. 7 (four or more EMNIST sources): not run: the mixtures have two distributions, "
        "and the paper prints neither the mixture vectors over its four sources nor their sizes."
    )
    if data_dir is None:
        text = (
            "EMNIST (Table 4, feature-shift EMNIST of Table 5, Fig. 6, Tables 10 and 11): not "
            f"run: needs --data-dir, a directory holding {EMNIST_NEEDS}. " + fig7
        )
        return [], text, {"not_run": f"needs --data-dir, a directory holding {EMNIST_NEEDS}"}
    base = EMNIST_RUNS[scale] if base is None else base
    results = {
        name: _comparison(
            scale, name, out, device, base=base, fields=fields, data_dir=data_dir, lr_grid=lr_grid
        )
        for name, fields in EMNIST_COMPARISONS.items()
    }
    Path(out).mkdir(parents=True, exist_ok=True)
    emnist_cdf_figure(results, Path(out) / EMNIST_FIGURE)
    text = (
        f"EMNIST (seed 0): {base.clients} clients of the 52 letter classes of `byclass`, "
        f"model `{base.model}`, {base.rounds} rounds of {base.local_steps} local steps; D_B "
        "rotated by 90 degrees (feature-shift EMNIST); accuracy %, mean PMA pp, PMA > 0 and "
        "opt-outs % of clients, learning rate (Table 4, Table 5 at 10:90, Table 11 at 40:60, "
        "Table 10 with 4 classes per client; Fig. 6: `"
        + EMNIST_FIGURE
        + "`):\n\n"
        + settings_table(results, list(EMNIST_COMPARISONS))
        + "\n\n"
        + fig7
    )
    return evaluate(EMNIST_SPECS, results), text, {"comparison": results}


def _comparison_table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| method | " + " | ".join(f"{s} 10:90: acc. (%), PMA (pp), lr" for s in results) + " |",
        "|---|" + "---|" * len(results),
    ]
    methods = [r["method"] for r in next(iter(results.values()))["rows"]]
    for i, name in enumerate(methods):
        cells = []
        for result in results.values():
            r = result["rows"][i]
            flag = " (near chance)" if r["near_chance"] else ""
            cells.append(
                f"{100 * r['personalised_accuracy_mean']:.1f} ± "
                f"{100 * r['personalised_accuracy_std']:.1f}, {r['pma_mean']:+.2f}, "
                f"{r['lr']:g}{flag}"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def reproduce(
    scale: str, out: Path, seeds: int | None = None, data_dir: str | None = None
) -> Reproduction:
    """B1-B7 in both settings, and the comparison with the baselines.

    B1-B7 in rotation and the label concept shift, at 10:90 and 30:70, over ``seeds`` seeds
    (3 by default), side by side with the spread over seeds; the comparison with the
    baselines at 10:90 in both settings (seed 0), with the paper's orderings; and the
    comparisons of :data:`collabecon.reproductions.ipfl_settings.COMPARISONS` (seed 0) with
    their claims (:data:`~collabecon.reproductions.ipfl_settings_claims.SPECS`) and figures.

    With ``data_dir`` holding EMNIST the paper's EMNIST settings are run as well
    (:func:`emnist_part`); without it the report says they were not run.

    Per-seed measurements and the comparisons are written to (and read back from) ``out``;
    the figures are written there.
    """
    if scale not in SCALE_RUNS:
        raise ValueError(f"scale must be one of {', '.join(SCALE_RUNS)}, got {scale!r}")
    n = 3 if seeds is None else int(seeds)
    if n < 2:
        raise ValueError(f"seeds must be at least 2 (the claims need a spread), got {seeds}")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    claims: list[Claim] = []
    stats: dict[str, Any] = {}
    for setting in SETTINGS:
        measured = [measure_seed(scale, setting, s, out, device=device) for s in range(n)]
        c, st = b_claims(setting, measured)
        claims += c
        stats[setting] = st
    comparisons = {name: _comparison(scale, name, out, device) for name in COMPARISONS}
    for shift in SETTINGS:  # the orderings of Tables 3 and 5, at 10:90
        claims += [Claim(**c) for c in comparisons[shift]["claims"]]
    claims += evaluate(SPECS, comparisons)
    emnist_claims, emnist_text, emnist_data = emnist_part(scale, out, data_dir, device=device)
    claims += emnist_claims
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    figures = (CONVERGENCE_FIGURE, PMA_FIGURE, SYNTHETIC_FIGURE)
    for draw, name in zip(
        (convergence_figure, pma_cdf_figure, synthetic_cdf_figure), figures, strict=True
    ):
        draw(comparisons, out / name)
    budget = comparisons["rotation"]["budget"]
    base = SCALE_RUNS[scale]
    body = (
        f"{base.clients} clients of `{base.dataset}`, model `{base.model}`, {base.rounds} "
        f"rounds of {base.local_steps} local steps, {n} seeds (mean ± sd over seeds). "
        "`rotation`: D_B is D_A rotated by 90 degrees (§6.1); `labels`: D_B relabels "
        "y -> (y + 5) mod 10, a concept shift one model cannot serve.\n\n"
        + _side_by_side(stats)
        + "\n\nThe comparison (seed 0; personalised test accuracy, mean ± std over clients; PMA "
        f"against FedAvg; {budget['rounds']} rounds of {budget['local_steps']} local steps, "
        f"{budget['client_updates_per_round']} client updates a round under rotation; each "
        f"method's learning rate chosen on validation data from {list(LR_GRID)}):\n\n"
        + _comparison_table({shift: comparisons[shift] for shift in SETTINGS})
        + "\n\nThe other settings (seed 0, rotation; the same budget rule; accuracy %, mean "
        "PMA pp, PMA > 0 and opt-outs % of clients, learning rate): the mixtures of the "
        "convergence curves (Fig. 2, Fig. 9: `"
        + CONVERGENCE_FIGURE
        + "`), 40:60 (Table 11), 2 classes per client (Fig. 8, Table 10; PMA CDFs: `"
        + PMA_FIGURE
        + "`):\n\n"
        + settings_table(comparisons, ["30:70", "linear", "random", "40:60", "pathological"])
        + "\n\nThe synthetic data (each client tested on the reverse of its training "
        "mixture; Tables 2, 7, 8, 9; test-accuracy CDFs of IP-FL and FedSoft, Fig. 4: `"
        + SYNTHETIC_FIGURE
        + "`):\n\n"
        + settings_table(comparisons, [f"synthetic-{m}" for m in MIXTURES])
        + "\n\nCluster models on the synthetic data (accuracy %):\n\n"
        + clusters_table(comparisons)
        + "\n\n"
        + emnist_text
    )
    return Reproduction(
        name="ipfl",
        title="IP-FL (Khan et al.): B1-B7 under rotation and under a label concept shift",
        claims=tuple(claims),
        body=body,
        figures=figures + ((EMNIST_FIGURE,) if "comparison" in emnist_data else ()),
        data={
            "emnist": emnist_data,
            "scale": scale,
            "seeds": n,
            "run": base.to_dict(),
            "stats": stats,
            "comparison": comparisons,
        },
    )
