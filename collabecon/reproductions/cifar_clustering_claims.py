"""The claims of Werner (2024) ch. 2 §2.4 about its CIFAR experiments (Figs. 2.4 and 2.5).

:data:`CLAIMS` is judged on the result of
:func:`collabecon.reproductions.cifar_clustering.measure`: the accuracy curves (%, mean over
clients and seeds) of every method on the CIFAR-10 private-label task (Fig. 2.4 left), of
Federated-Clustering at every radius percentile (middle) and every number of steps per
clustering call (right), and of Global and FC on CIFAR-100 (Fig. 2.5).

The figures print curves, not numbers: every claim is the text's or the caption's, with
``published`` None, and the qualitative words ("significantly", "competitive", "does not
substantially compromise", "boosts early", "plateaus") are read through the thresholds below,
each with its reason. The left panel's claims compare final accuracies (the last
evaluation); the right panel's compare the curves at an early evaluation
(:data:`EARLY_FRACTION` of training) and at the last.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from econ.claims import Claim, ClaimSpec, evaluate

__all__ = [
    "CLAIMS",
    "COMPETITIVE",
    "DEFAULT_PERCENTILE",
    "EARLY_FRACTION",
    "METHODS",
    "NAMES",
    "PLATEAU_GAIN",
    "POOR",
    "SIGNIFICANT",
    "SOURCE",
    "TAU_TOLERANCE",
    "claims",
    "early_index",
]

#: The methods of Fig. 2.4's left panel, in its legend's order.
METHODS = ("ditto", "fc", "global", "local", "ifca", "oracle")
NAMES = {
    "ditto": "Ditto",
    "fc": "FC",
    "global": "Global",
    "local": "Local",
    "ifca": "IFCA",
    "oracle": "GroundTruth",
}
#: The methods the caption calls "optimized for global model performance".
POOR = ("ditto", "ifca", "global")

SOURCE = "Werner 2024"
FIG24 = f"{SOURCE}, ch. 2 §2.4 (CIFAR-10), Fig. 2.4"
FIG25 = f"{SOURCE}, ch. 2 §2.4 (CIFAR-100), Fig. 2.5"

#: "significantly outperform" (§2.4: Local and GroundTruth against Ditto and IFCA): a margin of
#: at least 5 accuracy points, half the width of a 10-point gridline of the figure and well
#: above the few points by which two seeds of one method differ at this budget.
SIGNIFICANT = 5.0
#: "competitive with GroundTruth" (caption): FC's final accuracy at most 5 points below the
#: oracle's, the same margin that the text calls significant between methods.
COMPETITIVE = 5.0
#: "does not substantially compromise accuracy" (middle panel): every percentile below the
#: default one ends within 5 points of the best of the default and larger percentiles.
TAU_TOLERANCE = 5.0
#: The radius percentile of the main run (the left panel's FC).
DEFAULT_PERCENTILE = 20.0
#: "early in training" (right panel): the first sixth of training, 10 of the 60 epochs of the
#: figure, where its curves for different numbers of local steps are furthest apart.
EARLY_FRACTION = 1.0 / 6.0
#: "plateaus" (Fig. 2.5): a gain of at most 2 accuracy points over the second half of
#: training; "continually improves": more than that.
PLATEAU_GAIN = 2.0


def early_index(n_evals: int) -> int:
    r"""The evaluation that stands for "early in training": :data:`EARLY_FRACTION` of them.

    The index (from 0) of evaluation :math:`\max(1, \mathrm{round}(f E))` of ``n_evals``.
    """
    return max(1, round(EARLY_FRACTION * n_evals)) - 1


def _final(curves: dict[str, Any], key: str) -> float:
    return float(curves[key]["curve"][-1])


def _finals(m: dict[str, Any], keys: tuple[str, ...]) -> dict[str, float]:
    methods = m["cifar10"]["methods"]
    return {NAMES[k]: round(_final(methods, k), 2) for k in keys}


def _spread(curves: dict[str, Any], a: str, b: str) -> str:
    """The seed-to-seed spread of the final difference a - b, or that there is one seed."""
    diff = np.asarray(curves[a]["final"]) - np.asarray(curves[b]["final"])
    if diff.size < 2:
        return "one seed: no spread"
    return f"std of the difference {diff.std(ddof=1):.1f} over {diff.size} seeds"


def _left(m: dict[str, Any]) -> dict[str, float]:
    methods = m["cifar10"]["methods"]
    return {k: _final(methods, k) for k in METHODS}


def _left_claims() -> list[ClaimSpec]:
    def spec(
        claim: str, statement: str, where: str, keys: tuple[str, ...], **rest: Any
    ) -> ClaimSpec:
        return ClaimSpec(
            id=f"fig2.4.left.{claim}",
            statement=statement,
            where=f"{FIG24} left, {where}",
            measured=lambda m: _finals(m, keys),
            applies=lambda m: "cifar10" in m,
            **rest,
        )

    specs = [
        spec(
            f"{poor}<local,fc",
            f"{NAMES[poor]}, optimised for global model performance, performs poorly on "
            "personalization: its final accuracy is below Local's and FC's",
            "caption",
            (poor, "local", "fc"),
            holds=lambda m, p=poor: _left(m)[p] < min(_left(m)["local"], _left(m)["fc"]),
            note=lambda m, p=poor: _spread(m["cifar10"]["methods"], "local", p),
        )
        for poor in POOR
    ]
    specs += [
        spec(
            f"{strong}>>{weak}",
            f"{NAMES[strong]} significantly outperforms {NAMES[weak]} (by at least "
            f"{SIGNIFICANT:g} accuracy points at the end)",
            "text",
            (strong, weak),
            holds=lambda m, s=strong, w=weak: _left(m)[s] - _left(m)[w] >= SIGNIFICANT,
            note=lambda m, s=strong, w=weak: _spread(m["cifar10"]["methods"], s, w),
        )
        for strong in ("local", "oracle")
        for weak in ("ditto", "ifca")
    ]
    specs += [
        spec(
            "fc>local",
            "FC outperforms Local training, showing that it benefits from collaboration "
            "between clients",
            "caption and text",
            ("fc", "local"),
            holds=lambda m: _left(m)["fc"] > _left(m)["local"],
            note=lambda m: _spread(m["cifar10"]["methods"], "fc", "local"),
        ),
        spec(
            "fc~groundtruth",
            f"FC is competitive with GroundTruth (at most {COMPETITIVE:g} accuracy points "
            "below it at the end)",
            "caption",
            ("fc", "oracle"),
            holds=lambda m: _left(m)["oracle"] - _left(m)["fc"] <= COMPETITIVE,
            note=lambda m: _spread(m["cifar10"]["methods"], "oracle", "fc"),
        ),
    ]
    return specs


def _percentile_finals(m: dict[str, Any]) -> dict[str, float]:
    return {
        p: round(_final(m["cifar10"]["percentiles"], p), 2) for p in m["cifar10"]["percentiles"]
    }


def _conservative_holds(m: dict[str, Any]) -> bool:
    finals = {float(p): v for p, v in _percentile_finals(m).items()}
    lower = [v for p, v in finals.items() if p < DEFAULT_PERCENTILE]
    reference = max(v for p, v in finals.items() if p >= DEFAULT_PERCENTILE)
    return min(lower) >= reference - TAU_TOLERANCE


def _steps_gain(m: dict[str, Any], index: int) -> float:
    runs = m["cifar10"]["local_steps"]
    most, fewest = max(runs, key=int), min(runs, key=int)
    return float(runs[most]["curve"][index] - runs[fewest]["curve"][index])


def _steps_measured(m: dict[str, Any]) -> dict[str, float]:
    early = early_index(len(m["cifar10"]["epochs"]))
    return {
        f"gain early (epoch {m['cifar10']['epochs'][early]:.3g})": round(_steps_gain(m, early), 2),
        f"gain at the end (epoch {m['cifar10']['epochs'][-1]:.3g})": round(_steps_gain(m, -1), 2),
    }


def _steps_note(m: dict[str, Any]) -> str:
    runs = m["cifar10"]["local_steps"]
    return (
        f"gain = accuracy with {max(runs, key=int)} steps per clustering call minus with "
        f"{min(runs, key=int)}"
    )


def _panel_claims() -> list[ClaimSpec]:
    return [
        ClaimSpec(
            id="fig2.4.middle.conservative-tau",
            statement="adopting a more conservative value for τ (lower percentile) does not "
            f"substantially compromise accuracy: every percentile below "
            f"{DEFAULT_PERCENTILE:g} ends within {TAU_TOLERANCE:g} points of the best of the "
            "larger ones",
            where=f"{FIG24} middle and text",
            measured=_percentile_finals,
            holds=_conservative_holds,
            note="final accuracy (%) by radius percentile",
            applies=lambda m: "cifar10" in m,
        ),
        ClaimSpec(
            id="fig2.4.right.early-boost",
            statement="increasing the number of local iterations boosts the learning curve "
            "early in training, when clusters are ill-defined",
            where=f"{FIG24} right and text",
            measured=_steps_measured,
            holds=lambda m: _steps_gain(m, early_index(len(m["cifar10"]["epochs"]))) > 0,
            note=_steps_note,
            applies=lambda m: "cifar10" in m,
        ),
        ClaimSpec(
            id="fig2.4.right.plateau",
            statement="the improvement from more local iterations plateaus when gradients "
            "become separated and clusters become well-defined: the gain at the end is "
            "smaller than early on",
            where=f"{FIG24} right and text",
            measured=_steps_measured,
            holds=lambda m: (
                _steps_gain(m, -1) < _steps_gain(m, early_index(len(m["cifar10"]["epochs"])))
            ),
            note=_steps_note,
            applies=lambda m: "cifar10" in m,
        ),
    ]


def _second_half_gain(m: dict[str, Any], method: str) -> float:
    curve = np.asarray(m["cifar100"]["methods"][method]["curve"])
    return float(curve[-1] - curve[(curve.size - 1) // 2])


def _fig25_measured(m: dict[str, Any]) -> dict[str, float]:
    return {
        f"{NAMES[k]} gain over the second half": round(_second_half_gain(m, k), 2)
        for k in ("global", "fc")
    }


def _fig25_claims() -> list[ClaimSpec]:
    def finals(m: dict[str, Any]) -> dict[str, float]:
        return {NAMES[k]: round(_final(m["cifar100"]["methods"], k), 2) for k in ("global", "fc")}

    return [
        ClaimSpec(
            id="fig2.5.global-plateaus",
            statement="the Global (FedAvg) accuracy plateaus: it gains at most "
            f"{PLATEAU_GAIN:g} points over the second half of training",
            where=f"{FIG25} caption and text",
            measured=_fig25_measured,
            holds=lambda m: _second_half_gain(m, "global") <= PLATEAU_GAIN,
            applies=lambda m: "cifar100" in m,
        ),
        ClaimSpec(
            id="fig2.5.fc-improves",
            statement="FC continually improves: it gains more than "
            f"{PLATEAU_GAIN:g} points over the second half of training",
            where=f"{FIG25} caption and text",
            measured=_fig25_measured,
            holds=lambda m: _second_half_gain(m, "fc") > PLATEAU_GAIN,
            applies=lambda m: "cifar100" in m,
        ),
        ClaimSpec(
            id="fig2.5.fc>global",
            statement="Global plateaus at a very low level while FC still benefits from "
            "collaboration: FC ends above Global",
            where=f"{FIG25} text",
            measured=finals,
            holds=lambda m: (
                _final(m["cifar100"]["methods"], "fc") > _final(m["cifar100"]["methods"], "global")
            ),
            note=lambda m: _spread(m["cifar100"]["methods"], "fc", "global"),
            applies=lambda m: "cifar100" in m,
        ),
    ]


#: The thesis's claims about Figs. 2.4 and 2.5, on
#: :func:`collabecon.reproductions.cifar_clustering.measure`'s result.
CLAIMS: tuple[ClaimSpec, ...] = (*_left_claims(), *_panel_claims(), *_fig25_claims())


def claims(measured: dict[str, Any]) -> list[Claim]:
    """The thesis's claims about the CIFAR experiments (:data:`CLAIMS`) on ``measured``."""
    return evaluate(CLAIMS, measured)
