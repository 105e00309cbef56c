r"""The claims IP-FL prints about its comparisons beyond 10:90, judged on their runs.

IP-FL is Khan et al., "IP-FL: Incentivized and Personalized Federated Learning".
:data:`SPECS` are the claims about :data:`~collabecon.reproductions.ipfl_settings.COMPARISONS`
and :data:`EMNIST_SPECS` those about
:data:`~collabecon.reproductions.ipfl_settings.EMNIST_COMPARISONS`, judged on the mapping of
these names to :func:`~collabecon.reproductions.ipfl_comparison.compare`'s results. Every
comparison is one seed: an ordering of accuracies holds when the mean of the per-client
differences exceeds twice its standard error
(:func:`~collabecon.reproductions.ipfl_comparison.accuracy_margin`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from collabecon.reproductions.ipfl_claims import PAPER, specialisation_gap
from collabecon.reproductions.ipfl_comparison import accuracy_margin
from collabecon.reproductions.ipfl_settings import (
    CONVERGENCE,
    MIXTURES,
    TABLE2,
    TABLE4,
    TABLE7,
    TARGET_SHARE,
)
from econ.claims import ClaimSpec

__all__ = ["EMNIST_SPECS", "OPT_OUTS", "SPECS", "rounds_to"]

#: The table of each clustering method's cluster models on Synthetic CIFAR10.
_CLUSTER_TABLE = {"ip-fl": "Table 7", "fedsoft": "Table 9", "ifca": "Table 2", "fedem": "Table 2"}

#: Printed opt-out rates (share of clients) of the methods the toolkit implements:
#: Table 10 (4 classes per client) and Table 11 (40:60).
OPT_OUTS: dict[str, dict[str, float]] = {
    "pathological": {"ditto": 0.0, "fedprox": 0.64, "per-fedavg": 0.68, "ip-fl": 0.0},
    "40:60": {"ditto": 0.0, "fedprox": 0.26, "per-fedavg": 1.0, "ip-fl": 0.0},
}
#: Printed personalised accuracy (%) of the same methods: Tables 10 and 11.
PERSONALISED: dict[str, dict[str, float]] = {
    "pathological": {"ditto": 90.78, "fedprox": 61.23, "per-fedavg": 59.99, "ip-fl": 98.59},
    "40:60": {"ditto": 77.93, "fedprox": 82.2, "per-fedavg": 79.14, "ip-fl": 85.11},
}
#: "No opt-outs" holds at B4's threshold: at most this share of the clients opt out.
NO_OPT_OUT = 0.2
#: Table 5 (feature-shift EMNIST, 10:90): printed personalised accuracy (%) and opt-outs
#: (share of clients) of the methods the toolkit implements.
TABLE5: dict[str, tuple[float, float | None]] = {
    "fedavg": (75.7, None),
    "ditto": (83.7, 0.0),
    "fedprox": (78.8, 0.23),
    "per-fedavg": (83.7, 0.0),
    "ip-fl": (84.3, 0.0),
}
#: The comparison behind each printed table of opt-outs: the analogues, and EMNIST itself.
_TABLE_OF = {
    "pathological": "Table 10 and App. D.3",
    "40:60": "Table 11 and App. D.5",
    "emnist-pathological": "Table 10 and App. D.3",
    "emnist-40:60": "Table 11 and App. D.5",
}
_TABLE_ID = {
    "pathological": "table10",
    "40:60": "table11",
    "emnist-pathological": "table10",
    "emnist-40:60": "table11",
}
_PRINTED = {"emnist-pathological": "pathological", "emnist-40:60": "40:60"}


def _rows(results: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return list(results[name]["rows"])


def _row(results: dict[str, Any], name: str, method: str) -> dict[str, Any]:
    rows = _rows(results, name)
    return rows[0] if method == "ip-fl" else next(r for r in rows if r["method"] == method)


def _has(name: str, *methods: str) -> Any:
    def applies(results: dict[str, Any]) -> bool:
        if name not in results:
            return False
        present = {r["method"] for r in _rows(results, name)[1:]}
        return all(m == "ip-fl" or m in present for m in methods)

    return applies


def _above(results: dict[str, Any], name: str, method: str) -> bool:
    mean, se = accuracy_margin(_rows(results, name), method)
    return mean > 2 * se


def _margin_note(results: dict[str, Any], name: str, method: str) -> str:
    mean, se = accuracy_margin(_rows(results, name), method)
    return f"one seed, `{name}`; per-client difference {mean:+.1f} pp, standard error {se:.1f} pp"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def rounds_to(curve: list[list[float]], target: float) -> float:
    """The first round of ``curve`` (``[round, accuracy]`` pairs) at ``target`` or above.

    ``inf`` when the curve never reaches it.
    """
    return next((float(r) for r, acc in curve if acc >= target), math.inf)


def _speed(results: dict[str, Any], name: str, method: str) -> tuple[float, float, float]:
    """The target (90 % of ``method``'s final accuracy) and the rounds each needs to reach it."""
    theirs = _row(results, name, method)
    target = TARGET_SHARE * theirs["personalised_accuracy_mean"]
    ours = _row(results, name, "ip-fl")
    return target, rounds_to(ours["curve"], target), rounds_to(theirs["curve"], target)


def _convergence_spec(mixture: str, method: str) -> ClaimSpec:
    name, where = CONVERGENCE[mixture]

    def measured(results: dict[str, Any]) -> str:
        target, ours, theirs = _speed(results, name, method)
        return (
            f"rounds to {_pct(target)} %: IP-FL {ours:g}, {method} {theirs:g}; final "
            f"{_pct(_row(results, name, 'ip-fl')['personalised_accuracy_mean'])} vs "
            f"{_pct(_row(results, name, method)['personalised_accuracy_mean'])} %"
        )

    def holds(results: dict[str, Any]) -> bool:
        _, ours, theirs = _speed(results, name, method)
        return ours <= theirs and _above(results, name, method)

    return ClaimSpec(
        id=f"convergence.{mixture}.ip-fl>{method}",
        statement=f"IP-FL converges faster than {method} and to a higher personalised "
        f"accuracy: it reaches {100 * TARGET_SHARE:.0f} % of {method}'s final accuracy no "
        f"later than {method} does, and its final accuracy is higher",
        where=f"{PAPER}, {where}",
        published="IP-FL's curve above every other method's (figure; no numbers printed)",
        measured=measured,
        holds=holds,
        note=lambda r: (
            f"{_margin_note(r, name, method)}; curves evaluated every "
            f"{_row(r, name, 'ip-fl')['curve'][0][0]:g} rounds"
        ),
        applies=_has(name, method),
    )


def _table4_spec(mixture: str, method: str, name: str | None = None) -> ClaimSpec:
    """IP-FL above ``method`` at ``mixture`` on comparison ``name`` (the analogue by default)."""
    label = mixture if name is None else name
    name = CONVERGENCE[mixture][0] if name is None else name
    printed = TABLE4[mixture]
    tie = printed["ip-fl"] == printed[method]
    return ClaimSpec(
        id=f"table4.{label}.ip-fl>{method}",
        statement=f"IP-FL's personalised test accuracy exceeds {method}'s at {mixture} (§6.3: "
        '"IP-FL consistently outperforms for all data partitions")',
        where=f"{PAPER}, Table 4 and §6.3 (Comparison with non-clustering pFL models)",
        published=f"{printed['ip-fl']:g} {'=' if tie else '>'} {printed[method]:g}",
        measured=lambda r: (
            f"{_pct(_row(r, name, 'ip-fl')['personalised_accuracy_mean'])} vs "
            f"{_pct(_row(r, name, method)['personalised_accuracy_mean'])}"
        ),
        holds=lambda r: _above(r, name, method),
        note=lambda r: (
            _margin_note(r, name, method)
            + ("; the table prints a tie, the text an ordering" if tie else "")
        ),
        applies=_has(name, method),
    )


def _cdf_spec(name: str, method: str, where: str, label: str) -> ClaimSpec:
    """IP-FL's CDF of per-client PMA right of ``method``'s on comparison ``name``."""

    def stats(results: dict[str, Any], m: str) -> tuple[float, float]:
        row = _row(results, name, m)
        return row["pma_positive_share"], float(np.median(row["pma"]))

    def measured(results: dict[str, Any]) -> str:
        (sa, ma), (sb, mb) = stats(results, "ip-fl"), stats(results, method)
        return (
            f"PMA > 0 for {_pct(sa)} vs {_pct(sb)} % of clients; median PMA {ma:+.1f} vs "
            f"{mb:+.1f} pp"
        )

    def holds(results: dict[str, Any]) -> bool:
        (sa, ma), (sb, mb) = stats(results, "ip-fl"), stats(results, method)
        return sa >= sb and ma > mb

    return ClaimSpec(
        id=f"{label}.{name}.ip-fl>{method}",
        statement=f"IP-FL's CDF of the clients' PMA lies right of {method}'s: at least as "
        "large a share of clients with PMA > 0 and a higher median PMA",
        where=f"{PAPER}, {where}",
        measured=measured,
        holds=holds,
        note=f"one seed, `{name}`, PMA against FedAvg trained with the same budget",
        applies=_has(name, method),
    )


def _accuracy_cdf_spec(
    figure: str, name: str, rival: str, statement: str, where: str, published: Any = None
) -> ClaimSpec:
    """IP-FL's CDF of the clients' personalised accuracy right of ``rival``'s in ``name``.

    Judged as a higher median and a mean above ``rival``'s beyond the per-client spread
    (:func:`~collabecon.reproductions.ipfl_comparison.accuracy_margin`).
    """

    def medians(results: dict[str, Any]) -> tuple[float, float]:
        return tuple(  # type: ignore[return-value]
            float(np.median(_row(results, name, m)["personalised_accuracy"]))
            for m in ("ip-fl", rival)
        )

    return ClaimSpec(
        id=f"{figure}.{name}.ip-fl>{rival}",
        statement=statement,
        where=f"{PAPER}, {where}",
        published=published,
        measured=lambda r: "median {:.1f} vs {:.1f} %".format(*(100 * m for m in medians(r))),
        holds=lambda r: medians(r)[0] > medians(r)[1] and _above(r, name, rival),
        note=lambda r: _margin_note(r, name, rival),
        applies=_has(name, rival),
    )


def _fig4_spec(mixture: str) -> ClaimSpec:
    """Fig. 4: IP-FL's CDF of test accuracy right of FedSoft's on the synthetic data."""
    return _accuracy_cdf_spec(
        "fig4",
        f"synthetic-{mixture}",
        "fedsoft",
        "on the synthetic data, IP-FL's CDF of the clients' test accuracy lies right of "
        "FedSoft's: a higher median, and a higher mean",
        "Fig. 4 and §6.4 (Advantages of including client preferences)",
    )


def _clusters(results: dict[str, Any], name: str, method: str) -> np.ndarray:
    return np.asarray(_row(results, name, method)["cluster_accuracy"])


def _best_cells(acc: np.ndarray) -> str:
    return ", ".join(f"c{k} {100 * acc[k].max():.1f} (θ{acc[k].argmax()})" for k in range(len(acc)))


def _specialises_spec(mixture: str, method: str) -> ClaimSpec:
    """The printed pattern of ``method``'s cluster models on the synthetic ``mixture``."""
    name = f"synthetic-{mixture}"
    printed = TABLE2[method][mixture]
    distinct = printed[0][1] != printed[1][1]
    table = _CLUSTER_TABLE[method]
    if method == "ip-fl":
        gap = specialisation_gap(np.asarray(TABLE7[mixture]) / 100)[0]
        statement = (
            "IP-FL's cluster models are each best on a different distribution, diagonal minus "
            "off-diagonal accuracy >= 15 pp"
        )
        published = f"gap {gap:.1f} pp; " + ", ".join(
            f"c{k} {a:g} (θ{d})" for k, (a, d) in enumerate(printed)
        )
    else:
        statement = (
            f"{method}'s cluster models are each best on a different distribution"
            if distinct
            else f"both of {method}'s cluster models are best on the same distribution"
        )
        published = ", ".join(f"c{k} {a:g} (θ{d})" for k, (a, d) in enumerate(printed))

    def holds(results: dict[str, Any]) -> bool:
        gap, found = specialisation_gap(_clusters(results, name, method))
        if method == "ip-fl":
            return found and gap >= 15.0
        return found == distinct

    return ClaimSpec(
        id=f"{table.lower().replace(' ', '')}.{name}.{method}.clusters",
        statement=statement,
        where=f"{PAPER}, {table} and App. D.2.2",
        published=published,
        measured=lambda r: (
            f"{_best_cells(_clusters(r, name, method))}; gap "
            f"{specialisation_gap(_clusters(r, name, method))[0]:.1f} pp"
        ),
        holds=holds,
        note=f"one seed, `{name}`",
        applies=_has(name, method),
    )


def _cluster_accuracy_spec(mixture: str, method: str) -> ClaimSpec:
    """IP-FL's cluster models more accurate on their best distribution than ``method``'s."""
    name = f"synthetic-{mixture}"
    table = "Table 8" if method == "fedsoft" else "Table 2"

    def best(results: dict[str, Any], m: str) -> float:
        return 100 * float(_clusters(results, name, m).max(axis=1).mean())

    ours = np.mean([a for a, _ in TABLE2["ip-fl"][mixture]])
    theirs = np.mean([a for a, _ in TABLE2[method][mixture]])
    return ClaimSpec(
        id=f"{table.lower().replace(' ', '')}.{name}.ip-fl>{method}",
        statement=f"IP-FL's cluster models are more accurate than {method}'s: mean over the "
        "clusters of the accuracy on the distribution each is best on",
        where=f"{PAPER}, {table} and App. D.2.2"
        + (" (§6.3: IP-FL consistently outperforms)" if table == "Table 2" else ""),
        published=f"{ours:.1f} > {theirs:.1f}",
        measured=lambda r: f"{best(r, 'ip-fl'):.1f} vs {best(r, method):.1f}",
        holds=lambda r: best(r, "ip-fl") > best(r, method),
        note=f"one seed, `{name}`",
        applies=_has(name, method),
    )


_SERVER_DRIVEN = ("fedsoft", "ifca", "fedem")


def _synthetic_opt_out_spec(mixture: str) -> ClaimSpec:
    name = f"synthetic-{mixture}"
    return ClaimSpec(
        id=f"appD24.{name}.opt-outs",
        statement="on the synthetic data, fewer of IP-FL's clients opt out than of each "
        "server-driven clustering method's (FedSoft, IFCA, FedEM), which can lose them all",
        where=f"{PAPER}, App. D.2.4",
        published="server-driven pFL: up to 100 % opt-outs",
        measured=lambda r: ", ".join(
            f"{m} {_pct(_row(r, name, m)['opt_out_rate'])} %" for m in ("ip-fl", *_SERVER_DRIVEN)
        ),
        holds=lambda r: all(
            _row(r, name, "ip-fl")["opt_out_rate"] < _row(r, name, m)["opt_out_rate"]
            for m in _SERVER_DRIVEN
        ),
        note=f"one seed, `{name}`; opt-out: PMA <= 0 against FedAvg (Eq. 2)",
        applies=_has(name, *_SERVER_DRIVEN),
    )


def _band(rate: float) -> tuple[str, Any]:
    """The printed opt-out ``rate`` as a statement and the test of a measured rate."""
    if rate == 0:
        return (
            f"no client opts out (at most {100 * NO_OPT_OUT:.0f} %)",
            lambda x: x <= NO_OPT_OUT,
        )
    if rate >= 0.5:
        return "most clients opt out (at least 50 %)", lambda x: x >= 0.5
    return "some clients opt out, fewer than half", lambda x: 0 < x < 0.5


def _opt_out_spec(name: str, method: str) -> ClaimSpec:
    rate = OPT_OUTS[_PRINTED.get(name, name)][method]
    text, test = _band(rate)
    return ClaimSpec(
        id=f"{_TABLE_ID[name]}.{name}.{method}.opt-outs",
        statement=f"{method}: {text}",
        where=f"{PAPER}, {_TABLE_OF[name]}",
        published=f"{100 * rate:g} %",
        measured=lambda r: f"{_pct(_row(r, name, method)['opt_out_rate'])} %",
        holds=lambda r: bool(test(_row(r, name, method)["opt_out_rate"])),
        note=f"one seed, `{name}`; opt-out: PMA <= 0 against FedAvg (Eq. 2)",
        applies=_has(name, method),
    )


def _pma_order_spec(name: str, method: str) -> ClaimSpec:
    published = PERSONALISED[_PRINTED.get(name, name)]
    return ClaimSpec(
        id=f"{_TABLE_ID[name]}.{name}.ip-fl>{method}",
        statement=f"IP-FL's personalised accuracy and PMA exceed {method}'s",
        where=f"{PAPER}, {_TABLE_OF[name]}",
        published=f"{published['ip-fl']:g} > {published[method]:g}",
        measured=lambda r: (
            f"{_pct(_row(r, name, 'ip-fl')['personalised_accuracy_mean'])} vs "
            f"{_pct(_row(r, name, method)['personalised_accuracy_mean'])} %; PMA "
            f"{_row(r, name, 'ip-fl')['pma_mean']:+.1f} vs {_row(r, name, method)['pma_mean']:+.1f} pp"
        ),
        holds=lambda r: _above(r, name, method),
        note=lambda r: _margin_note(r, name, method),
        applies=_has(name, method),
    )


def _fig8_spec(method: str) -> ClaimSpec:
    """IP-FL's PMA above ``method``'s with 2 classes per client (Table 10's methods have theirs)."""
    name = "pathological"
    return ClaimSpec(
        id=f"fig8.{name}.ip-fl>{method}",
        statement=f"with 2 classes per client IP-FL's PMA exceeds {method}'s",
        where=f"{PAPER}, Fig. 8 and App. D.4",
        published="IP-FL above all other pFL algorithms by about 50 % (FedFomo by 30 %)",
        measured=lambda r: (
            f"mean PMA {_row(r, name, 'ip-fl')['pma_mean']:+.1f} vs "
            f"{_row(r, name, method)['pma_mean']:+.1f} pp"
        ),
        holds=lambda r: _above(r, name, method),
        note=lambda r: _margin_note(r, name, method),
        applies=_has(name, method),
    )


def _fig6_spec(mixture: str) -> ClaimSpec:
    """IP-FL's CDF of personalised accuracy right of Ditto's on EMNIST at ``mixture``."""
    return _accuracy_cdf_spec(
        "fig6",
        f"emnist-{mixture}",
        "ditto",
        "on EMNIST IP-FL's CDF of the clients' personalised test accuracy lies right of "
        "Ditto's (App. D.2.3: IP-FL outperforms Ditto significantly): a higher median, and a "
        "higher mean",
        "Fig. 6 and App. D.2.3",
        published="IP-FL's CDF right of Ditto's (figure; no numbers printed)",
    )


def _table5_spec(method: str) -> ClaimSpec:
    """Table 5: IP-FL's personalised accuracy above ``method``'s on feature-shift EMNIST."""
    name = "emnist-10:90"
    return ClaimSpec(
        id=f"table5.{name}.ip-fl>{method}",
        statement=f"on feature-shift EMNIST IP-FL's personalised accuracy exceeds {method}'s "
        '(§6.4: "IP-FL surpasses other pFL models")',
        where=f"{PAPER}, Table 5 and §6.4 (PMA and opt-outs with Feature-shift)",
        published=f"{TABLE5['ip-fl'][0]:g} > {TABLE5[method][0]:g}",
        measured=lambda r: (
            f"{_pct(_row(r, name, 'ip-fl')['personalised_accuracy_mean'])} vs "
            f"{_pct(_row(r, name, method)['personalised_accuracy_mean'])} %"
        ),
        holds=lambda r: _above(r, name, method),
        note=lambda r: _margin_note(r, name, method),
        applies=_has(name, method),
    )


def _table5_opt_out_spec(method: str) -> ClaimSpec:
    """Table 5: ``method``'s printed opt-out rate on feature-shift EMNIST, as a band."""
    name = "emnist-10:90"
    rate = TABLE5[method][1]
    assert rate is not None
    text, test = _band(rate)
    return ClaimSpec(
        id=f"table5.{name}.{method}.opt-outs",
        statement=f"on feature-shift EMNIST, {method}: {text}",
        where=f"{PAPER}, Table 5 and §6.4 (PMA and opt-outs with Feature-shift)",
        published=f"{100 * rate:g} %",
        measured=lambda r: f"{_pct(_row(r, name, method)['opt_out_rate'])} %",
        holds=lambda r: bool(test(_row(r, name, method)["opt_out_rate"])),
        note=f"one seed, `{name}`; opt-out: PMA <= 0 against FedAvg (Eq. 2)",
        applies=_has(name, method),
    )


_ALL = ("fedavg", "fedprox", "ditto", "ifca", "fedsoft", "fedem", "per-fedavg")
_TABLE10 = ("ditto", "fedprox", "per-fedavg")

#: Every claim of the comparisons of :data:`COMPARISONS` (the module's docstring).
SPECS: tuple[ClaimSpec, ...] = (
    *(_convergence_spec(m, b) for m in CONVERGENCE for b in _ALL),
    *(_table4_spec(m, b) for m in CONVERGENCE for b in _TABLE10),
    *(
        _cdf_spec(name, b, f"Fig. 3({panel}) and §6.4", "fig3")
        for name in ("rotation", "30:70")
        for panel, b in (("a", "fedsoft"), ("b", "ditto"))
    ),
    *(_cdf_spec("pathological", b, "Fig. 3(g) and §6.4", "fig3") for b in _TABLE10),
    *(_fig4_spec(m) for m in MIXTURES),
    *(_specialises_spec(m, method) for method in TABLE2 for m in MIXTURES),
    *(_cluster_accuracy_spec(m, b) for b in _SERVER_DRIVEN for m in MIXTURES),
    *(_synthetic_opt_out_spec(m) for m in MIXTURES),
    *(_fig8_spec(b) for b in _SERVER_DRIVEN),
    *(_opt_out_spec(name, m) for name in OPT_OUTS for m in OPT_OUTS[name]),
    *(_pma_order_spec(name, b) for name in OPT_OUTS for b in _TABLE10),
)

#: Every claim of the EMNIST comparisons (:data:`EMNIST_COMPARISONS`).
EMNIST_SPECS: tuple[ClaimSpec, ...] = (
    *(_table4_spec(m, b, f"emnist-{m}") for m in MIXTURES for b in _TABLE10),
    *(_fig6_spec(m) for m in MIXTURES),
    *(_table5_spec(b) for b in ("fedavg", *_TABLE10)),
    *(_table5_opt_out_spec(b) for b in (*_TABLE10, "ip-fl")),
    *(_opt_out_spec(f"emnist-{n}", m) for n in OPT_OUTS for m in OPT_OUTS[n]),
    *(_pma_order_spec(f"emnist-{n}", b) for n in OPT_OUTS for b in _TABLE10),
)
