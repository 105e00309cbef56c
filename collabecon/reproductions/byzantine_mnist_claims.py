"""The claims of Werner 2024 about Figure 2.6 (Byzantine attacks on MNIST), as a table.

The table (:data:`CLAIMS`) is judged on the result of
:func:`collabecon.reproductions.byzantine_mnist.measure` (the MNIST private-label task,
§2.4 "Defense against Byzantine attacks").

The text: "In both cases, Global training suffers from serious model degradation while FC
successfully reaches high accuracy under these attacks, demonstrating its robustness"; the
caption: "FC is robust to these attacks and significantly outperforms Global (FedAvg)
performance". The thesis prints no numbers, so each claim is read at a stated threshold,
for each attack:

- *serious model degradation* of Global: its accuracy under the attack is within
  :data:`NEAR_CHANCE` points of chance (10 % on ten classes), i.e. it learns nothing, and
  below its accuracy on the same federation without the attack (at most 25 % there: one
  model for all clusters is right on at most a quarter of the private labels);
- *high accuracy* (robustness) of FC: its accuracy under the attack is at most
  :data:`ROBUST_DROP` points below FC's on the same federation without the attack;
- *significantly outperforms*: FC's accuracy exceeds Global's by at least
  :data:`SIGNIFICANT_MARGIN` points, on the mean over seeds and on every seed.

Accuracies are the final ones (the last evaluation of the run), sample-weighted over the
honest clients' own test data, in %.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from collabecon.reproductions.clustered_mnist_claims import CHANCE, NEAR_CHANCE, POOLED_CEILING
from econ.claims import Claim, ClaimSpec, evaluate

__all__ = [
    "ATTACKS",
    "ATTACK_NAMES",
    "CLAIMS",
    "METHODS",
    "NAMES",
    "ROBUST_DROP",
    "SIGNIFICANT_MARGIN",
    "SOURCE",
    "claims",
]

SOURCE = "Werner 2024"
WHERE = f"{SOURCE}, §2.4 'Defense against Byzantine attacks' and Fig. 2.6"
#: attack key of :data:`learning.byzantine.ATTACKS` -> its name in the text
ATTACK_NAMES = {"large-gradient": "large gradient", "bit-flip": "bit-flipping"}
ATTACKS = tuple(ATTACK_NAMES)
METHODS = ("fc", "global")
NAMES = {"fc": "FC", "global": "Global"}
#: "high accuracy": FC under attack loses at most this many points against no attack
ROBUST_DROP = 5.0
#: "significantly outperforms": FC above Global by at least this many points
SIGNIFICANT_MARGIN = 10.0


def _final(m: dict[str, Any], setting: str, method: str) -> float:
    """Mean over seeds of the final accuracy of ``method`` in ``setting`` (an attack or none)."""
    return float(np.mean(m["final"][setting][method]))


def _seeds(m: dict[str, Any], setting: str, method: str) -> np.ndarray:
    return np.asarray(m["final"][setting][method], dtype=float)


def _spread(values: np.ndarray) -> str:
    if values.size < 2:
        return "one seed: no spread"
    return f"std {values.std(ddof=1):.1f} over {values.size} seeds"


def _attack_claims(attack: str) -> tuple[ClaimSpec, ...]:
    """The three claims about one attack: Global degrades, FC robust, FC above Global."""
    name = ATTACK_NAMES[attack]

    def degraded(m: dict[str, Any]) -> bool:
        attacked, clean = _final(m, attack, "global"), _final(m, "none", "global")
        return attacked <= CHANCE + NEAR_CHANCE and attacked < clean

    def robust(m: dict[str, Any]) -> bool:
        return _final(m, attack, "fc") >= _final(m, "none", "fc") - ROBUST_DROP

    def outperforms(m: dict[str, Any]) -> bool:
        margins = _seeds(m, attack, "fc") - _seeds(m, attack, "global")
        return bool(margins.mean() >= SIGNIFICANT_MARGIN and (margins > 0).all())

    return (
        ClaimSpec(
            id=f"byzantine.{attack}.global-degrades",
            statement=f"Global (FedAvg) training suffers from serious model degradation under "
            f"the {name} attack (read: accuracy within {NEAR_CHANCE:.0f} points of chance and "
            "below Global's without the attack)",
            where=WHERE,
            published="serious model degradation",
            measured=lambda m: {
                "under attack": round(_final(m, attack, "global"), 2),
                "no attack": round(_final(m, "none", "global"), 2),
            },
            holds=degraded,
            note=lambda m: (
                f"chance {CHANCE:.0f} %; without the attack Global is right on at most "
                f"{POOLED_CEILING:.0f} % of private labels, so the room to degrade is small; "
                f"{_spread(_seeds(m, attack, 'global'))}"
            ),
            applies=lambda m: attack in m["final"],
        ),
        ClaimSpec(
            id=f"byzantine.{attack}.fc-robust",
            statement=f"FC is robust to the {name} attack and reaches high accuracy under it "
            f"(read: at most {ROBUST_DROP:.0f} points below FC without the attack)",
            where=WHERE,
            published="high accuracy, robust",
            measured=lambda m: {
                "under attack": round(_final(m, attack, "fc"), 2),
                "no attack": round(_final(m, "none", "fc"), 2),
            },
            holds=robust,
            note=lambda m: _spread(_seeds(m, attack, "fc")),
            applies=lambda m: attack in m["final"],
        ),
        ClaimSpec(
            id=f"byzantine.{attack}.fc>global",
            statement=f"FC significantly outperforms Global (FedAvg) under the {name} attack "
            f"(read: by at least {SIGNIFICANT_MARGIN:.0f} points, and on every seed)",
            where=WHERE,
            published="FC > Global",
            measured=lambda m: {NAMES[x]: round(_final(m, attack, x), 2) for x in METHODS},
            holds=outperforms,
            note=lambda m: _spread(_seeds(m, attack, "fc") - _seeds(m, attack, "global")),
            applies=lambda m: attack in m["final"],
        ),
    )


#: The thesis' claims about Fig. 2.6 on
#: :func:`collabecon.reproductions.byzantine_mnist.measure`'s result, three per attack.
CLAIMS: tuple[ClaimSpec, ...] = tuple(spec for a in ATTACKS for spec in _attack_claims(a))


def claims(measured: dict[str, Any]) -> list[Claim]:
    """The thesis' claims about Fig. 2.6 (:data:`CLAIMS`) on ``measured``."""
    return evaluate(CLAIMS, measured)
